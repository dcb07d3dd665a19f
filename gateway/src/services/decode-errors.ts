import type { CompatHandler } from "../transport/h2-server.js";

const INTERNAL = "13";
const INVALID_ARGUMENT = "3";
const PARSE_FAILURE = /^parse(%20|\s)binary/;

/**
 * connect-es reports an undecodable protobuf request as INTERNAL, while JSON
 * gets INVALID_ARGUMENT. A malformed request is the caller's fault whatever its
 * encoding, so gRPC responses carrying that failure are rewritten to
 * INVALID_ARGUMENT (the fast path answers the same way).
 */
export function grpcDecodeErrorsAsInvalidArgument(handler: CompatHandler): CompatHandler {
  return (req, res) => {
    const ct = String(req.headers["content-type"] ?? "");
    if (ct.startsWith("application/grpc") && !ct.startsWith("application/grpc-web")) {
      const path = (req.url ?? "").split("?")[0];
      const fix = (h: Record<string, unknown> | undefined) => {
        if (h && String(h["grpc-status"]) === INTERNAL && PARSE_FAILURE.test(String(h["grpc-message"] ?? ""))) {
          const detail = decodeURIComponent(String(h["grpc-message"])).replace(/^parse binary:\s*/, "");
          h["grpc-status"] = INVALID_ARGUMENT;
          h["grpc-message"] = encodeURIComponent(`invalid request message for ${path}: ${detail}`);
        }
      };
      const addTrailers = res.addTrailers.bind(res);
      res.addTrailers = ((t: Record<string, unknown>) => {
        fix(t);
        addTrailers(t as never);
      }) as typeof res.addTrailers;
      const writeHead = res.writeHead.bind(res) as (...a: unknown[]) => unknown;
      (res as { writeHead: unknown }).writeHead = (status: number, ...rest: unknown[]) => {
        const headers = rest.find((r) => typeof r === "object" && r !== null) as Record<string, unknown> | undefined;
        fix(headers);
        return writeHead(status, ...rest);
      };
    }
    handler(req, res);
  };
}
