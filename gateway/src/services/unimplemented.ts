import { Code } from "@connectrpc/connect";
import { answerTrailersOnly } from "../transport/grpc-wire.js";
import { requestPath } from "../transport/request-path.js";
import type { CompatHandler } from "../transport/stream-route.js";
import { echo } from "./limits.js";

/** A Connect request: its unary/streaming content types, or a Connect GET (`?connect=v1`). */
function isConnect(contentType: string, target: string): boolean {
  if (/^application\/(connect\+)?(json|proto)\b/.test(contentType)) return true;
  const q = target.indexOf("?");
  return q >= 0 && new URLSearchParams(target.slice(q + 1)).get("connect") === "v1";
}

/**
 * Answers a path not served here, in the caller's own protocol and the same on
 * every listener: gRPC and gRPC-Web get UNIMPLEMENTED with `message` ("unknown
 * method …", or why a method that exists is not served here or in this
 * protocol), Connect gets HTTP 404 with code "unimplemented" (the Connect
 * protocol's mapping), and anything else (curl, a browser, a typo'd probe
 * path) a plain 404.
 */
export function answerUnimplemented(req: Parameters<CompatHandler>[0], res: Parameters<CompatHandler>[1], message: string): void {
  const target = req.url ?? "/";
  const path = requestPath(target);
  const contentType = String(req.headers["content-type"] ?? "");
  const respond = () => {
    if (contentType.startsWith("application/grpc")) {
      const ct = contentType.startsWith("application/grpc-web") ? contentType.split(";")[0] : "application/grpc";
      answerTrailersOnly(res, ct, Code.Unimplemented, message);
    } else if (isConnect(contentType, target)) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unimplemented", message }));
    } else {
      const body = `not found: ${echo(path)}\n`;
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body) });
      res.end(body);
    }
  };
  // Answer once the request is fully read: an answer that races the client's
  // own half-close looks like a reset to some clients.
  req.once("end", respond);
  req.once("error", () => res.destroy());
  req.resume();
}
