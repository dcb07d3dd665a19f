// The way out of the raw-call core: a call the core does not answer itself
// (an unusual size, message or deadline, an answer that has to wait) goes,
// with the bytes already read, to the Connect handler that serves the same
// method, so its semantics and errors stay Connect's.
import type { ContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { once } from "node:events";
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { Logger } from "../observability/logger.js";
import { clampDeadlineHeaders } from "../transport/grpc-timeout.js";
import { resetUnreadRequest, type StreamContext } from "../transport/stream-route.js";

/** What the Connect side lends the core: its response policy and its call context. */
export interface ConnectInvoker {
  invoke(handler: UniversalHandler, req: UniversalServerRequest): Promise<UniversalServerResponse>;
  contextValues(contentType: string, ctx: StreamContext): ContextValues;
}

/** Hands a raw stream to a Connect handler: `read` is what was read already, `rest` what is still to come. */
export function viaConnect(
  connect: ConnectInvoker,
  logger: Logger,
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  handler: UniversalHandler,
  read: Buffer[],
  rest: AsyncIterable<Buffer> | undefined,
  ctx: StreamContext,
): void {
  const abort = new AbortController();
  stream.once("close", () => abort.abort());
  resetUnreadRequest(stream);
  clampDeadlineHeaders(headers);
  const header = new Headers();
  for (const [k, v] of Object.entries(headers)) {
    if (k.startsWith(":") || v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [String(v)]) header.append(k, one);
  }
  async function* body() {
    yield* read;
    if (rest) yield* rest;
  }
  connect
    .invoke(handler, {
      httpVersion: "2.0",
      method: "POST",
      url: `http://${headers[":authority"] ?? "localhost"}${headers[":path"]}`,
      header,
      body: body(),
      signal: abort.signal,
      contextValues: connect.contextValues(String(headers["content-type"]), ctx),
    })
    .then((res) => writeUniversal(stream, res))
    .catch((err) => {
      logger.debug({ err, path: headers[":path"] }, "raw call handed to Connect failed");
      if (!stream.destroyed) stream.close();
    });
}

/** Writes a Connect universal response onto a raw HTTP/2 stream. */
async function writeUniversal(stream: ServerHttp2Stream, res: UniversalServerResponse): Promise<void> {
  if (stream.destroyed) return;
  const headers: OutgoingHttpHeaders = { ":status": res.status };
  res.header?.forEach((v, k) => (headers[k] = v));
  const trailers: OutgoingHttpHeaders = {};
  let hasTrailers = false;
  res.trailer?.forEach((v, k) => {
    trailers[k] = v;
    hasTrailers = true;
  });
  stream.respond(headers, { waitForTrailers: hasTrailers, endStream: !res.body && !hasTrailers });
  if (hasTrailers) stream.once("wantTrailers", () => stream.sendTrailers(trailers));
  if (res.body) {
    for await (const chunk of res.body) {
      if (stream.destroyed) return;
      if (!stream.write(chunk)) await once(stream, "drain");
    }
  }
  if (res.body || hasTrailers) stream.end();
}
