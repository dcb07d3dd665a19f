import http2 from "node:http2";

/** gRPC status codes by number, with the canonical names metrics and logs use. */
export const STATUS_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

export const Status = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  RESOURCE_EXHAUSTED: 8,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

export function statusName(code: number): string {
  return STATUS_NAMES[code] ?? `CODE_${code}`;
}

/** Reads grpc-status from a header block; NaN when absent or malformed. */
export function statusOf(headers: http2.IncomingHttpHeaders | undefined): number {
  const v = headers?.["grpc-status"];
  return typeof v === "string" && /^\d{1,3}$/.test(v) ? Number(v) : Number.NaN;
}

/**
 * grpc-message is percent-encoded (gRPC HTTP/2 protocol): everything outside
 * printable ASCII, and '%' itself, so any UTF-8 text survives the header.
 */
export function encodeGrpcMessage(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export function decodeGrpcMessage(raw: string | undefined): string {
  if (raw === undefined) return "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** Answers a stream with a trailers-only gRPC error (no body). */
export function respondStatus(stream: http2.ServerHttp2Stream, code: number, message: string): void {
  if (stream.destroyed || stream.closed) return;
  const headers = {
    ":status": 200,
    "content-type": "application/grpc",
    "grpc-status": String(code),
    "grpc-message": encodeGrpcMessage(message),
  };
  // Once headers are out the status can only go in trailers; callers that
  // stream a response handle that themselves, so here the stream is just reset.
  if (stream.headersSent) {
    stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  stream.respond(headers, { endStream: true });
}

/** How a gRPC client maps an RST_STREAM without trailers to a status (as grpc-js does). */
export function statusForRstCode(rst: number | undefined): number {
  switch (rst) {
    case http2.constants.NGHTTP2_REFUSED_STREAM:
      return Status.UNAVAILABLE;
    case http2.constants.NGHTTP2_CANCEL:
      return Status.CANCELLED;
    case http2.constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return 8;
    case http2.constants.NGHTTP2_INADEQUATE_SECURITY:
      return 7;
    default:
      return Status.INTERNAL;
  }
}
