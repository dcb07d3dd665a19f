import type http from "node:http";
import http2 from "node:http2";
import type { Logger } from "../observability/logger.js";
import type { StreamContext, StreamRoute } from "./stream-route.js";

/** A request handler for both HTTP/1.1 and the HTTP/2 compatibility API (Connect's and hono's shape). */
export type CompatHandler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

type StreamListener = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  flags: number,
  rawHeaders: string[],
) => void;

/** Marks which listener a session came in on (its StreamContext), for routing and metrics labels. */
export const LISTENER = Symbol("probegate.listener");

export interface H2Server {
  server: http2.Http2Server;
  sessions: Set<http2.ServerHttp2Session>;
}

/**
 * An h2c server where raw stream routes (fast path, upstream proxy) see each
 * stream first and Node's compatibility layer (Connect, hono) gets the rest.
 * Node implements the compatibility API as a 'stream' listener that it adds
 * when a 'request' listener appears; we take that listener out and call it
 * ourselves, after the routes, so a stream is never answered twice.
 */
export function createH2Server(opts: {
  ctx: StreamContext;
  routes: readonly StreamRoute[];
  handler: CompatHandler;
  logger: Logger;
}): H2Server {
  const { ctx, routes, logger } = opts;
  const server = http2.createServer({
    // Probe bursts from many pollers open streams fast; keep per-session memory bounded.
    maxSessionMemory: 16,
    settings: { maxConcurrentStreams: 1000 },
  });
  let compat: StreamListener | undefined;

  const dispatch: StreamListener = (stream, headers, flags, rawHeaders) => {
    for (const route of routes) {
      try {
        if (route(stream, headers, ctx)) return;
      } catch (err) {
        logger.error({ err, path: headers[":path"] }, "stream route failed");
        if (!stream.headersSent && !stream.destroyed) {
          stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "13", "grpc-message": "internal error" }, { endStream: true });
        }
        return;
      }
    }
    compat!(stream, headers, flags, rawHeaders);
  };

  server.on("stream", dispatch);
  server.on("request", opts.handler);
  compat = server.listeners("stream").find((l) => l !== dispatch) as StreamListener | undefined;
  if (!compat) throw new Error("node:http2 compatibility layer not found; unsupported Node.js version");
  server.removeListener("stream", compat);

  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    (session as unknown as Record<symbol, StreamContext>)[LISTENER] = ctx;
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  server.on("sessionError", (err) => logger.debug({ err, listener: ctx.listener, surface: ctx.surface }, "http2 session error"));
  return { server, sessions };
}
