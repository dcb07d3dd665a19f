import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";

/** Which kind of socket a stream arrived on; used for metrics labels. */
export type Listener = "unix" | "tcp";

/**
 * Which endpoint a stream arrived on. Only the CSI endpoint may carry the
 * mount API (forwarded Node/Controller calls); the network port serves probes,
 * health, reflection and metrics, whatever its socket kind.
 */
export type Surface = "csi" | "network";

export interface StreamContext {
  listener: Listener;
  surface: Surface;
}

/** What a request with no known session (HTTP/1.1 on the network port) is taken for: the safe side. */
export const NETWORK_TCP: StreamContext = Object.freeze({ listener: "tcp", surface: "network" });

/**
 * A raw HTTP/2 stream handler that runs before Connect's router.
 * Returns true when it has taken the stream (it must then answer it);
 * false to let the next route, and finally Connect, handle it.
 * Used by the Probe/Health fast path and by gateway mode's upstream proxy
 * (the latter on the CSI endpoint only).
 * It must decide from the headers alone, synchronously, without reading the body.
 */
export type StreamRoute = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  ctx: StreamContext,
) => boolean;
