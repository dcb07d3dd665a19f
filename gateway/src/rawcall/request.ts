// What a raw unary gRPC request is, read off its headers and DATA frames:
// written once for every call probegate answers or forwards itself.
import type { IncomingHttpHeaders } from "node:http2";
import { gunzipSync } from "node:zlib";
import { parseGrpcTimeout } from "../transport/grpc-timeout.js";

const GRPC_CONTENT_TYPE = /^application\/grpc(\+proto)?(;|$)/;

/** gRPC proper (not gRPC-Web, not Connect): the only protocol relayed or answered on the raw stream. */
export function isGrpcCall(headers: IncomingHttpHeaders): boolean {
  if (headers[":method"] !== "POST") return false;
  const ct = headers["content-type"];
  // The two spellings every client sends, compared before the pattern (Probe's fast path runs here).
  return ct === "application/grpc" || ct === "application/grpc+proto" || (typeof ct === "string" && GRPC_CONTENT_TYPE.test(ct));
}

/** The request encodings the core inflates itself; anything else is refused or left to Connect. */
export type RequestEncoding = "identity" | "gzip";
export const ACCEPTED_ENCODINGS = "identity,gzip";

/** undefined: an encoding the core does not inflate. */
export function requestEncoding(headers: IncomingHttpHeaders): RequestEncoding | undefined {
  const e = headers["grpc-encoding"];
  if (e === undefined || e === "identity") return "identity";
  return e === "gzip" ? "gzip" : undefined;
}

/** No grpc-timeout header. */
export const NO_TIMEOUT = Number.NaN;
/** A grpc-timeout that does not parse. */
export const MALFORMED_TIMEOUT = -1;

/** The caller's grpc-timeout in milliseconds, NO_TIMEOUT or MALFORMED_TIMEOUT (a number either way: no object per call). */
export function callerTimeoutMs(headers: IncomingHttpHeaders): number {
  const raw = headers["grpc-timeout"];
  if (raw === undefined) return NO_TIMEOUT;
  return parseGrpcTimeout(raw) ?? MALFORMED_TIMEOUT;
}

/**
 * The time given to a call made on the caller's behalf, capped. With `margin`,
 * the callee gets less than the caller's deadline, so that probegate's own
 * answer still arrives in time when the callee is slow.
 */
export function budgetMs(callerMs: number, capMs: number, margin: boolean): number {
  if (!(callerMs >= 0)) return capMs;
  if (!margin) return Math.min(callerMs, capMs);
  return Math.max(1, Math.min(callerMs - Math.max(50, callerMs / 10), capMs));
}

/** The refusal of a request whose body outgrew its cap; `how` names the limit when an operator sets it. */
export function tooLargeMessage(maxBytes: number, how = ""): string {
  return `request message is larger than ${maxBytes} bytes${how}`;
}

/**
 * The body's one message, undefined unless it is exactly one frame. A gzip
 * frame (flag 1, sent with grpc-encoding gzip) is inflated within maxBytes.
 */
export function unframe(body: Buffer, encoding: RequestEncoding, maxBytes: number): Buffer | undefined {
  if (body.length < 5) return undefined;
  const len = body.readUInt32BE(1);
  if (body.length !== 5 + len) return undefined;
  const payload = body.subarray(5);
  if (body[0] === 0) return payload;
  if (body[0] !== 1 || encoding !== "gzip") return undefined;
  try {
    return gunzipSync(payload, { maxOutputLength: maxBytes });
  } catch {
    return undefined;
  }
}

/**
 * The DATA frames of one request, counted against a cap. Kept whole up to
 * keepBytes (a unary request is one frame header and one message); past that
 * only counted, so a relayed call holds no more than it may look into.
 */
export class RequestBody {
  chunks: Buffer[] | undefined = [];
  size = 0;

  constructor(
    readonly maxBytes: number,
    private readonly keepBytes: number = maxBytes,
  ) {}

  /**
   * false once the body is larger than one frame of maxBytes; the chunk that
   * made it so is kept too, for a caller that hands the whole body on.
   */
  add(chunk: Buffer): boolean {
    this.size += chunk.length;
    const over = this.size > this.maxBytes + 5;
    if (this.chunks !== undefined) {
      if (over || this.size <= this.keepBytes + 5) this.chunks.push(chunk);
      else this.chunks = undefined;
    }
    return !over;
  }

  bytes(): Buffer | undefined {
    const c = this.chunks;
    return c === undefined ? undefined : c.length === 1 ? c[0] : Buffer.concat(c);
  }

  message(encoding: RequestEncoding): Buffer | undefined {
    const b = this.bytes();
    return b && unframe(b, encoding, this.keepBytes);
  }
}
