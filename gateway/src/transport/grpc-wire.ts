// The gRPC-over-HTTP/2 wire format, written once for every part of the
// gateway that speaks it: the fast path, the Connect stack's fix-ups, the
// edge's own refusals and the upstream proxy. Statuses are Connect's `Code`
// (plus GRPC_OK, which Connect has no member for), never bare numbers.
import { Code } from "@connectrpc/connect";
import type http from "node:http";
import http2 from "node:http2";
export { statusName } from "../support/grpc-status.js";

/** grpc-status 0: Connect's Code has no OK, since an OK call is no error. */
export const GRPC_OK = 0;
export type GrpcStatus = Code | typeof GRPC_OK;

/** Reads grpc-status from a header block; NaN when absent or malformed. */
export function statusOf(headers: http2.IncomingHttpHeaders | undefined): number {
  const v = headers?.["grpc-status"];
  return typeof v === "string" && /^\d{1,3}$/.test(v) ? Number(v) : Number.NaN;
}

/**
 * Percent-encodes grpc-message as the gRPC HTTP/2 protocol specifies: only
 * bytes outside printable ASCII (0x20–0x7E), and '%' itself, so any UTF-8 text
 * survives the header. Connect escapes like encodeURIComponent, which clients
 * that decode with decodeURI (grpc-js) show as "unix%3A%2F%2F…".
 */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const b of Buffer.from(text, "utf8")) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The text of a grpc-message; a malformed escape is shown as sent. */
export function decodeGrpcMessage(raw: string | undefined): string {
  if (raw === undefined) return "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** The status pair of an error, for trailers or a trailers-only answer. */
export function statusTrailers(code: GrpcStatus, message: string): Record<"grpc-status" | "grpc-message", string> {
  return { "grpc-status": String(code), "grpc-message": encodeGrpcMessage(message) };
}

/** Headers of a trailers-only answer: status and message in the one HEADERS frame that ends the stream. */
export function trailersOnlyHeaders(contentType: string, code: GrpcStatus, message: string): Record<string, string> {
  return { "content-type": contentType, ...statusTrailers(code, message) };
}

/**
 * Answers a raw stream with a trailers-only error. Returns false when the
 * stream is gone or its headers are already out (the status can then only go
 * in trailers, which is the caller's business).
 */
export function respondTrailersOnly(stream: http2.ServerHttp2Stream, code: GrpcStatus, message: string, contentType = "application/grpc"): boolean {
  if (stream.destroyed || stream.closed || stream.headersSent) return false;
  stream.respond({ ":status": 200, ...trailersOnlyHeaders(contentType, code, message) }, { endStream: true });
  return true;
}

/**
 * The same through the compatibility API (HTTP/1.1 gRPC-Web, or HTTP/2). Over
 * HTTP/2 it goes to the raw stream: clients ignore a status in headers that a
 * separate end-of-stream follows.
 */
export function answerTrailersOnly(
  res: http.ServerResponse | http2.Http2ServerResponse,
  contentType: string,
  code: GrpcStatus,
  message: string,
): void {
  const stream = (res as http2.Http2ServerResponse).stream;
  if (stream) {
    respondTrailersOnly(stream, code, message, contentType);
    return;
  }
  res.writeHead(200, trailersOnlyHeaders(contentType, code, message));
  res.end();
}

/** How a gRPC client maps an RST_STREAM without trailers to a status (as grpc-js does). */
export function statusForRstCode(rst: number | undefined): Code {
  switch (rst) {
    case http2.constants.NGHTTP2_REFUSED_STREAM:
      return Code.Unavailable;
    case http2.constants.NGHTTP2_CANCEL:
      return Code.Canceled;
    case http2.constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return Code.ResourceExhausted;
    case http2.constants.NGHTTP2_INADEQUATE_SECURITY:
      return Code.PermissionDenied;
    default:
      return Code.Internal;
  }
}

/** A gRPC length-prefixed message: flag 0 (uncompressed), 4-byte big-endian length, payload. */
export function encodeFrame(payload: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + payload.length);
  out[0] = 0;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}
