import { Code } from "@connectrpc/connect";
import { answerTrailersOnly } from "../transport/grpc-wire.js";
import type { CompatHandler } from "../transport/stream-route.js";

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
      answerTrailersOnly(res, ct, Code.Unimplemented, message);
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
