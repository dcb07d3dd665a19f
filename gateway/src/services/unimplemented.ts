import type { Http2ServerResponse, OutgoingHttpHeaders } from "node:http2";
import type { CompatHandler } from "../transport/h2-server.js";
import { grpcPercentEncode } from "./decode-errors.js";

/**
 * Sends a gRPC "trailers-only" response: status in a HEADERS frame that ends
 * the stream. Clients ignore a status in headers followed by a separate
 * end-of-stream, so over HTTP/2 we respond on the raw stream.
 */
export function trailersOnly(res: Parameters<CompatHandler>[1], headers: OutgoingHttpHeaders): void {
  const stream = (res as Http2ServerResponse).stream;
  if (stream && !stream.headersSent && !stream.destroyed) {
    stream.respond({ ":status": 200, ...headers }, { endStream: true });
  } else {
    res.writeHead(200, headers as Record<string, string>);
    res.end();
  }
}

/**
 * Answers a request for a method no service implements, in the caller's own
 * protocol, so every client reports UNIMPLEMENTED rather than a bare HTTP 404.
 */
export const unimplemented: CompatHandler = (req, res) => {
  const path = (req.url ?? "/").split("?")[0];
  const message = `unknown method ${path}`;
  const contentType = String(req.headers["content-type"] ?? "");
  const respond = () => {
    if (contentType.startsWith("application/grpc")) {
      const ct = contentType.startsWith("application/grpc-web") ? contentType.split(";")[0] : "application/grpc";
      trailersOnly(res, { "content-type": ct, "grpc-status": "12", "grpc-message": grpcPercentEncode(message) });
    } else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ code: "unimplemented", message }));
    }
  };
  // Answer once the request is fully read: an answer that races the client's
  // own half-close looks like a reset to some clients.
  req.once("end", respond);
  req.once("error", () => res.destroy());
  req.resume();
};
