import type { UniversalServerResponse } from "@connectrpc/connect/protocol";

const PARSE_FAILURE = /^parse binary:\s*/;

/**
 * Percent-encodes a grpc-message the way the gRPC HTTP/2 protocol specifies:
 * only bytes outside printable ASCII, and '%' itself. Connect escapes like
 * encodeURIComponent, which clients that decode with decodeURI (grpc-js) show
 * as "unix%3A%2F%2F…".
 */
export function grpcPercentEncode(message: string): string {
  let out = "";
  for (const b of Buffer.from(message, "utf8")) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Re-encodes every grpc-message in a response per the gRPC spec (see grpcPercentEncode). */
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
    h!.set("grpc-message", grpcPercentEncode(text));
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
    if (!h || h.get("grpc-status") !== "13") continue;
    const message = decodeURIComponent(h.get("grpc-message") ?? "");
    if (!PARSE_FAILURE.test(message)) continue;
    h.set("grpc-status", "3");
    h.set("grpc-message", grpcPercentEncode(invalidRequestMessage(path, message.replace(PARSE_FAILURE, ""))));
  }
  return res;
}

export function invalidRequestMessage(path: string, detail: string): string {
  return `invalid request message for ${path}: ${detail}`;
}
