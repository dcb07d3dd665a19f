// The raw-call core's client: one unary gRPC call over a shared HTTP/2
// session (probegate's own calls to the driver: Probe, GetPluginInfo, the
// health RPCs, NodeGetCapabilities), read with the core's framing, reply cap
// and statuses (reply.ts, shared with the relay).
import { Code } from "@connectrpc/connect";
import http2 from "node:http2";
import { formatGrpcTimeout } from "../transport/grpc-timeout.js";
import { decodeGrpcMessage, encodeFrame, GRPC_OK, statusOf } from "../transport/grpc-wire.js";
import { closedWithoutStatus, REPLY_TOO_LARGE, replyBody } from "./reply.js";

export type UnaryResult =
  | { kind: "reply"; status: number; message: string; body: Buffer | undefined }
  /** The call never reached the driver, or got no answer in time. */
  | { kind: "unreachable"; error: Error };

/** Where a call's stream is opened (the upstream connection); errors surface on the stream. */
export interface StreamOpener {
  request(headers: http2.OutgoingHttpHeaders): http2.ClientHttp2Stream;
}

/** A raw unary gRPC call, bounded by timeoutMs. */
export function unaryCall(conn: StreamOpener, path: string, request: Uint8Array, timeoutMs: number): Promise<UnaryResult> {
  return new Promise((resolve) => {
    let done = false;
    const settle = (r: UnaryResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    let stream: http2.ClientHttp2Stream;
    try {
      stream = conn.request({
        ":method": "POST",
        ":path": path,
        ":scheme": "http",
        ":authority": "localhost",
        "content-type": "application/grpc",
        te: "trailers",
        "grpc-timeout": formatGrpcTimeout(timeoutMs),
        "user-agent": "probegate",
      });
    } catch (err) {
      resolve({ kind: "unreachable", error: err as Error });
      return;
    }
    const timer = setTimeout(() => {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      settle({ kind: "unreachable", error: new Error(`no answer within ${timeoutMs} ms`) });
    }, timeoutMs);
    const body = replyBody();
    let status = Number.NaN;
    let message = "";
    stream.on("response", (h) => {
      if (!Number.isNaN(statusOf(h))) {
        status = statusOf(h);
        message = decodeGrpcMessage(h["grpc-message"] as string | undefined);
      }
    });
    stream.on("trailers", (t) => {
      status = statusOf(t);
      message = decodeGrpcMessage(t["grpc-message"] as string | undefined);
    });
    stream.on("data", (c: Buffer) => {
      if (body.add(c)) return;
      body.chunks = undefined;
      stream.close(http2.constants.NGHTTP2_CANCEL);
      settle({ kind: "reply", status: Code.ResourceExhausted, message: REPLY_TOO_LARGE, body: undefined });
    });
    stream.on("error", (err) => settle({ kind: "unreachable", error: err }));
    stream.on("close", () => {
      if (Number.isNaN(status)) {
        const closed = closedWithoutStatus(stream.rstCode);
        settle(closed.reached ? { kind: "reply", status: closed.code, message: closed.detail, body: undefined } : { kind: "unreachable", error: new Error(closed.detail) });
        return;
      }
      settle({ kind: "reply", status, message, body: status === GRPC_OK ? body.message("identity") : undefined });
    });
    stream.end(encodeFrame(request));
  });
}
