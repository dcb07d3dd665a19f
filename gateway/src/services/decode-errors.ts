import { Code } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { encodeGrpcMessage } from "../transport/grpc-wire.js";

const PARSE_FAILURE = /^parse binary:\s*/;

/** Re-encodes every grpc-message in a response per the gRPC spec (see encodeGrpcMessage). */
export function specEncodeGrpcMessages(res: UniversalServerResponse): UniversalServerResponse {
  for (const h of [res.header, res.trailer]) {
    const m = h?.get("grpc-message");
    if (m === null || m === undefined) continue;
    let text: string;
    try {
      text = decodeURIComponent(m);
    } catch {
      continue;
    }
    h!.set("grpc-message", encodeGrpcMessage(text));
  }
  return res;
}

/**
 * connect-es reports an undecodable protobuf request as INTERNAL, while
 * undecodable JSON gets INVALID_ARGUMENT. A malformed request is the caller's
 * fault whatever its encoding, so the gRPC and gRPC-Web status (in trailers, or
 * in headers for trailers-only answers) is rewritten to INVALID_ARGUMENT naming
 * the method. The fast path answers the same way.
 */
export function decodeErrorsAsInvalidArgument(res: UniversalServerResponse, path: string): UniversalServerResponse {
  for (const h of [res.header, res.trailer]) {
    if (!h || h.get("grpc-status") !== String(Code.Internal)) continue;
    const message = decodeURIComponent(h.get("grpc-message") ?? "");
    if (!PARSE_FAILURE.test(message)) continue;
    h.set("grpc-status", String(Code.InvalidArgument));
    h.set("grpc-message", encodeGrpcMessage(invalidRequestMessage(path, message.replace(PARSE_FAILURE, ""))));
  }
  return res;
}

export function invalidRequestMessage(path: string, detail: string): string {
  return `invalid request message for ${path}: ${detail}`;
}

/**
 * The same for the Connect protocol's unary errors: connect-es answers an
 * undecodable binary body with HTTP 500 `internal`; it becomes 400
 * `invalid_argument`, like undecodable JSON.
 */
export async function connectDecodeErrorsAsInvalidArgument(res: UniversalServerResponse, path: string): Promise<UniversalServerResponse> {
  if (res.status !== 500) return res;
  const read = await readConnectError(res);
  if (!read) return res;
  const { raw, err } = read;
  if (err?.code !== "internal" || !PARSE_FAILURE.test(err.message ?? "")) {
    return { ...res, body: single(raw) };
  }
  const body = Buffer.from(JSON.stringify({ code: "invalid_argument", message: invalidRequestMessage(path, err.message!.replace(PARSE_FAILURE, "")) }));
  res.header!.set("content-length", String(body.length));
  return { ...res, status: 400, body: single(body) };
}

/** A body of one chunk, for a response whose body was read. */
export async function* single(b: Uint8Array): AsyncIterable<Uint8Array> {
  yield b;
}

/**
 * The whole body of a Connect unary error (JSON, not compressed) and its
 * parsed form (undefined when it is not JSON); undefined for any other
 * response, which is then passed on untouched.
 */
export async function readConnectError(
  res: UniversalServerResponse,
): Promise<{ raw: Buffer; err: { code?: string; message?: string } | undefined } | undefined> {
  if (!res.body || !res.header?.get("content-type")?.startsWith("application/json")) return undefined;
  if (res.header.get("content-encoding")) return undefined;
  const chunks: Uint8Array[] = [];
  for await (const c of res.body as AsyncIterable<Uint8Array>) chunks.push(c);
  const raw = Buffer.concat(chunks);
  try {
    return { raw, err: JSON.parse(raw.toString("utf8")) };
  } catch {
    return { raw, err: undefined };
  }
}
