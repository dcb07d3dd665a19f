// One gRPC unary call over node:http2 with the deadline sent as grpc-timeout,
// timed from the caller's side. Unlike a client library it never gives up at
// the deadline itself: it waits up to a hard cap, so a server that answers
// late and a server that never answers are told apart from one that answered
// (or cleanly refused) in time.
import http2 from "node:http2";
import net from "node:net";

export type Dial = { socketPath: string } | { host: string; port: number };

export type CallOutcome =
  /** grpc-status 0 with the response message. */
  | { kind: "ok"; message: Buffer; ms: number }
  /** A gRPC status from the server (a clean error). */
  | { kind: "status"; code: number; detail: string; ms: number }
  /** The connection failed, or the answer was not valid gRPC. */
  | { kind: "transport"; error: string; ms: number }
  /** Nothing by the hard cap. */
  | { kind: "hung"; ms: number };

function grpcFrame(message: Uint8Array): Buffer {
  const b = Buffer.alloc(5 + message.length);
  b.writeUInt32BE(message.length, 1);
  b.set(message, 5);
  return b;
}

export function connectSession(dial: Dial): http2.ClientHttp2Session {
  const sock = "socketPath" in dial ? net.connect(dial.socketPath) : net.connect(dial.port, dial.host);
  const s = http2.connect("http://localhost", { createConnection: () => sock });
  s.on("error", () => {});
  sock.on("error", () => {});
  return s;
}

/** A call on `session`, or on a new connection per call when given a Dial (closed afterwards). */
export function grpcUnary(
  target: http2.ClientHttp2Session | Dial,
  path: string,
  message: Uint8Array,
  opts: { timeoutMs: number; capMs: number },
): Promise<CallOutcome> {
  const start = performance.now();
  const ms = () => performance.now() - start;
  const own = "socketPath" in target || "port" in target;
  const session = own ? connectSession(target as Dial) : (target as http2.ClientHttp2Session);
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: CallOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (own) {
        session.close();
        if (o.kind !== "ok" && o.kind !== "status") session.destroy();
      }
      resolve(o);
    };
    const timer = setTimeout(() => {
      req?.close(http2.constants.NGHTTP2_CANCEL);
      finish({ kind: "hung", ms: ms() });
    }, opts.capMs);
    if (own) session.once("error", (e) => finish({ kind: "transport", error: `session: ${e.message}`, ms: ms() }));
    let req: http2.ClientHttp2Stream | undefined;
    try {
      req = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
        "grpc-timeout": `${Math.max(1, Math.round(opts.timeoutMs))}m`,
      });
    } catch (e) {
      finish({ kind: "transport", error: `request: ${(e as Error).message}`, ms: ms() });
      return;
    }
    const chunks: Buffer[] = [];
    let status: string | undefined;
    let detail = "";
    let httpStatus = 0;
    req.on("response", (h) => {
      httpStatus = Number(h[":status"]);
      if (h["grpc-status"] !== undefined) {
        status = String(h["grpc-status"]);
        detail = String(h["grpc-message"] ?? "");
      }
    });
    req.on("trailers", (t) => {
      if (t["grpc-status"] !== undefined) {
        status = String(t["grpc-status"]);
        detail = String(t["grpc-message"] ?? "");
      }
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("error", (e) => finish({ kind: "transport", error: `stream: ${e.message}`, ms: ms() }));
    req.on("close", () => {
      if (done) return;
      if (httpStatus !== 200 || status === undefined) {
        return finish({ kind: "transport", error: `no gRPC answer (http ${httpStatus}, rst ${req!.rstCode})`, ms: ms() });
      }
      if (status !== "0") return finish({ kind: "status", code: Number(status), detail: decodeURIComponent(detail), ms: ms() });
      const body = Buffer.concat(chunks);
      if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
        return finish({ kind: "transport", error: `response body is not one gRPC message (${body.length} bytes)`, ms: ms() });
      }
      finish({ kind: "ok", message: body.subarray(5), ms: ms() });
    });
    req.end(grpcFrame(message));
  });
}
