// What the serving layers (services/, upstream/) may use of the transport:
// the raw stream route contract, the compat-API handler shape, and the stream
// context a request carries. The servers' internals stay in h1-/h2-server.ts.
import type { Http2ServerRequest, IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { LISTENER, resetUnreadRequest, type CompatHandler } from "./h2-server.js";

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

/** A request handler for both HTTP/1.1 and the HTTP/2 compatibility API (Connect's and hono's shape). */
export type { CompatHandler };
/** Marks which listener a session came in on; resetUnreadRequest: see h2-server.ts. */
export { LISTENER, resetUnreadRequest };

/** The context of the HTTP/2 session a compat-API request came on; HTTP/1.1 has none and is taken for NETWORK_TCP. */
export function requestContext(req: Parameters<CompatHandler>[0]): StreamContext {
  const session = (req as Http2ServerRequest).stream?.session as unknown as Record<symbol, StreamContext> | undefined;
  return session?.[LISTENER] ?? NETWORK_TCP;
}
