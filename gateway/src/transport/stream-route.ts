// What the serving layers (services/, upstream/) may use of the transport:
// the raw stream route contract, the compat-API handler shape, the stream
// context a request carries, and the reset of an answered stream's unread
// request. The servers' internals stay in h1-/h2-server.ts.
import type http from "node:http";
import http2, { type Http2ServerRequest, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";

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
export type CompatHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

/** Marks which listener a session came in on (its StreamContext), for routing and metrics labels. */
export const LISTENER = Symbol("probegate.listener");

/**
 * The context of the connection a compat-API request came on: its HTTP/2
 * session's, or for HTTP/1.1 its socket's (the listener marks both); a request
 * on neither is taken for NETWORK_TCP.
 */
export function requestContext(req: Parameters<CompatHandler>[0]): StreamContext {
  const session = (req as Http2ServerRequest).stream?.session as unknown as Record<symbol, StreamContext> | undefined;
  if (session) return session[LISTENER] ?? NETWORK_TCP;
  const socket = (req as http.IncomingMessage).socket as unknown as Record<symbol, StreamContext> | undefined;
  return socket?.[LISTENER] ?? NETWORK_TCP;
}

/**
 * Once a stream is answered, stops the rest of its request: RST_STREAM(NO_ERROR)
 * (RFC 9113 §8.1), as gRPC servers do. An oversized request is refused after
 * its first few KiB, and without this its stream (and the client's upload)
 * would stay open until the client gave up.
 */
export function resetUnreadRequest(stream: ServerHttp2Stream): void {
  const reset = () => {
    if (!stream.destroyed && !stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  };
  stream.once("finish", () => {
    if (stream.destroyed || stream.readableEnded) return;
    // Trailers still to come: the reset must follow them, not cut them off.
    if (stream.listenerCount("wantTrailers") > 0) stream.once("wantTrailers", () => setImmediate(reset));
    else reset();
  });
}
