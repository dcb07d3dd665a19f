import type { UniversalServerResponse } from "@connectrpc/connect/protocol";

const PARSE_FAILURE = /^parse binary:\s*/;

/**
 * connect-es reports an undecodable protobuf request as INTERNAL, while
 * undecodable JSON gets INVALID_ARGUMENT. A malformed request is the caller's
 * fault whatever its encoding, so the gRPC and gRPC-Web status (in trailers, or
 * in headers for trailers-only answers) is rewritten to INVALID_ARGUMENT naming
 * the method. The fast path answers the same way.
 */
export function decodeErrorsAsInvalidArgument(res: UniversalServerResponse, path: string): UniversalServerResponse {
  for (const h of [res.header, res.trailer]) {
    if (!h || h.get("grpc-status") !== "13") continue;
    const message = decodeURIComponent(h.get("grpc-message") ?? "");
    if (!PARSE_FAILURE.test(message)) continue;
    h.set("grpc-status", "3");
    h.set("grpc-message", encodeURIComponent(invalidRequestMessage(path, message.replace(PARSE_FAILURE, ""))));
  }
  return res;
}

export function invalidRequestMessage(path: string, detail: string): string {
  return `invalid request message for ${path}: ${detail}`;
}
