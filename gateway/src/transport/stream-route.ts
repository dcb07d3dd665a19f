import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";

/** Which listener a stream arrived on; used for metrics labels and routing. */
export type Listener = "unix" | "tcp";

export interface StreamContext {
  listener: Listener;
}

/**
 * A raw HTTP/2 stream handler that runs before Connect's router.
 * Returns true when it has taken the stream (it must then answer it);
 * false to let the next route, and finally Connect, handle it.
 * Used by the Probe/Health fast path and by gateway mode's upstream proxy.
 * It must decide from the headers alone, synchronously, without reading the body.
 */
export type StreamRoute = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  ctx: StreamContext,
) => boolean;
