import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { encodeGrpcMessage } from "../transport/grpc-wire.js";
import { readConnectError, single } from "./decode-errors.js";
import { echo, SELF_ANSWERED_MAX_BYTES } from "./limits.js";

/** Content types a client may send; a method's 415 lists those its protocols accept. */
const CONTENT_TYPES = [
  "application/json",
  "application/proto",
  "application/connect+json",
  "application/connect+proto",
  "application/grpc",
  "application/grpc+proto",
  "application/grpc+json",
  "application/grpc-web",
  "application/grpc-web+proto",
  "application/grpc-web+json",
];

function plain(status: number, headers: Record<string, string>, text: string): UniversalServerResponse {
  const body = Buffer.from(text + "\n");
  return {
    status,
    header: new Headers({ ...headers, "content-type": "text/plain; charset=utf-8", "content-length": String(body.length) }),
    body: single(body),
  };
}

/**
 * connect-es answers a method called with the wrong HTTP method (405) or a
 * content type none of its protocols speak (415) with a bare status. These are
 * what curl and a browser see first, so they get what HTTP says they carry
 * (RFC 9110 §15.5.6: 405 lists Allow) and a sentence saying what to send.
 */
export function explainProtocolRefusal(
  res: UniversalServerResponse,
  handler: UniversalHandler,
  req: UniversalServerRequest,
): UniversalServerResponse {
  if (res.status === 405 && !res.body) {
    const allow = handler.allowedMethods.join(", ");
    return plain(405, { allow }, `method ${echo(req.method)} is not allowed for ${handler.requestPath}; use ${allow}`);
  }
  if (res.status === 415 && !res.body) {
    const types = CONTENT_TYPES.filter((ct) => handler.supportedContentType(ct));
    const sent = req.header.get("content-type");
    const what = sent ? `content-type ${echo(sent)} is not supported` : "a content-type is required";
    return plain(415, { "accept-post": types.join(", ") }, `${what} for ${handler.requestPath}; send one of: ${types.join(", ")}`);
  }
  return res;
}

const READ_LIMIT = /message size (?:(\d+) )?is larger than configured readMaxBytes (\d+)/;

/** The method's own limit as Connect applied it: SELF_ANSWERED_MAX_BYTES, or a route's (the node health RPCs' 64 KiB). */
function fixedLimitMessage(m: RegExpExecArray): string {
  const size = m[1] ? ` of ${m[1]} bytes` : "";
  return `request message${size} is larger than ${m[2] ?? SELF_ANSWERED_MAX_BYTES} bytes, the fixed limit of the calls probegate answers itself`;
}

/**
 * connect-es words its size refusal after its own option ("larger than
 * configured readMaxBytes 4096"), which no operator can configure here: the
 * limit of the calls probegate answers itself is fixed. Says so, in gRPC
 * status messages and Connect error bodies alike.
 */
export async function fixedLimitWording(res: UniversalServerResponse): Promise<UniversalServerResponse> {
  for (const h of [res.header, res.trailer]) {
    const raw = h?.get("grpc-message");
    if (!raw) continue;
    let text: string;
    try {
      text = decodeURIComponent(raw);
    } catch {
      continue;
    }
    const m = READ_LIMIT.exec(text);
    if (m) h!.set("grpc-message", encodeGrpcMessage(text.replace(m[0], fixedLimitMessage(m))));
  }
  if (res.status !== 429) return res;
  const read = await readConnectError(res);
  if (!read) return res;
  const { raw, err } = read;
  const m = READ_LIMIT.exec(err?.message ?? "");
  if (!m) return { ...res, body: single(raw) };
  const body = Buffer.from(JSON.stringify({ ...err, message: err!.message!.replace(m[0], fixedLimitMessage(m)) }));
  res.header!.set("content-length", String(body.length));
  return { ...res, body: single(body) };
}
