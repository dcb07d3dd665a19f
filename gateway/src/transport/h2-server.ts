import { Code } from "@connectrpc/connect";
import type http from "node:http";
import http2 from "node:http2";
import type net from "node:net";
import type { Logger } from "../observability/logger.js";
import type { CallClass } from "./admission.js";
import { DeadlineSweep } from "./deadline-sweep.js";
import { DEFAULT_AUTHORITY, validAuthority } from "./authority.js";
import { answerStream, badAuthority, requestTimedOut, tooBusy } from "./edge-answer.js";
import { GOAWAY_GRACE_MS } from "./edge-limits.js";
import { respondTrailersOnly } from "./grpc-wire.js";
import type { Edge } from "./edge.js";
import type { Listener, StreamContext, StreamRoute } from "./stream-route.js";

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
/** Streams open on a session, kept on the session so idle checks need no lookup. */
const OPEN = Symbol("probegate.openStreams");

/** The admission class a stream was counted under, released when it closes. */
const CLASS = Symbol("probegate.callClass");
const SESSION = Symbol("probegate.session");
/** For answering in the client's protocol when the request times out. */
const CONTENT_TYPE = Symbol("probegate.contentType");
type AdmittedStream = http2.ServerHttp2Stream & {
  [CLASS]?: CallClass;
  [SESSION]?: TrackedSession;
  [CONTENT_TYPE]?: string | string[];
};

type TrackedSession = http2.ServerHttp2Session & { [OPEN]?: number; [LISTENER]?: StreamContext };

export interface H2Server {
  server: http2.Http2Server;
  sessions: Set<http2.ServerHttp2Session>;
  /** Stops the edge's timers (on shutdown). */
  stop(): void;
}

/**
 * An h2c server where raw stream routes (fast path, upstream proxy) see each
 * stream first and Node's compatibility layer (Connect, hono) gets the rest.
 * Node implements the compatibility API as a 'stream' listener that it adds
 * when a 'request' listener appears; we take that listener out and call it
 * ourselves, after the routes, so a stream is never answered twice.
 *
 * It also enforces the edge's HTTP/2 limits: streams per connection (nghttp2
 * answers REFUSED_STREAM), in-flight calls and Watch streams (RESOURCE_EXHAUSTED),
 * a request timeout per stream, an idle timeout per session, and a grace after
 * which a session that should be gone is destroyed: node:http2 sends GOAWAY on
 * a connection error but never closes the socket, so each bad frame would
 * otherwise hold a descriptor for good.
 */
export function createH2Server(opts: {
  ctx: StreamContext;
  routes: readonly StreamRoute[];
  handler: CompatHandler;
  logger: Logger;
  edge: Edge;
}): H2Server {
  const { ctx, routes, logger, edge } = opts;
  const { limits, admission } = edge;
  const listener = ctx.listener;
  const server = http2.createServer({
    // Probe bursts from many pollers open streams fast; keep per-session memory bounded.
    maxSessionMemory: 16,
    settings: { maxConcurrentStreams: limits.maxStreamsPerConnection },
  });
  let compat: StreamListener | undefined;

  // A stream whose request has not fully arrived by its deadline is answered and closed.
  const pending = new DeadlineSweep<http2.ServerHttp2Stream>(limits.requestTimeoutMs, (stream) => {
    if (stream.destroyed || stream.readableEnded) return;
    if (stream.headersSent) {
      // Answered while the request still trickles in (a bidi stream, or a reset the client ignored).
      if (stream.writableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
      return;
    }
    edge.rejected("request_timeout", { listener });
    answerStream(stream, (stream as AdmittedStream)[CONTENT_TYPE], requestTimedOut(limits.requestTimeoutMs));
    stream.close(http2.constants.NGHTTP2_CANCEL);
  });

  // One listener for every stream (no closure per call: Probe's fast path runs through here).
  function onStreamClose(this: AdmittedStream) {
    admission.leave(this[CLASS]!);
    pending.delete(this);
    const session = this[SESSION];
    if (session && --session[OPEN]! === 0) idle.set(session, Date.now() + limits.idleTimeoutMs);
  }

  const admit = (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): boolean => {
    const path = headers[":path"];
    const cls: CallClass = typeof path === "string" ? edge.classify(path) : "other";
    const refusal = admission.enter(cls);
    if (refusal) {
      edge.rejected(refusal, { listener, path });
      stream.on("error", () => {});
      answerStream(stream, headers["content-type"], tooBusy(refusal === "watches" ? "too many Watch streams" : "too many calls in progress"));
      return false;
    }
    const session = stream.session as TrackedSession | undefined;
    if (session && (session[OPEN] = (session[OPEN] ?? 0) + 1) === 1) idle.delete(session);
    (stream as AdmittedStream)[CLASS] = cls;
    // stream.session is gone by 'close'; keep it.
    (stream as AdmittedStream)[SESSION] = session;
    // 'close' comes once; on() spares the wrapper once() would allocate.
    stream.on("close", onStreamClose);
    (stream as AdmittedStream)[CONTENT_TYPE] = headers["content-type"];
    pending.set(stream, Date.now() + limits.requestTimeoutMs);
    return true;
  };

  const dispatch: StreamListener = (stream, headers, flags, rawHeaders) => {
    const authority = headers[":authority"] ?? headers.host;
    if (authority === undefined) headers[":authority"] = DEFAULT_AUTHORITY;
    else if (typeof authority !== "string" || !validAuthority(authority)) {
      edge.rejected("bad_authority", { listener });
      stream.on("error", () => {});
      answerStream(stream, headers["content-type"], badAuthority());
      return;
    }
    if (!admit(stream, headers)) return;
    for (const route of routes) {
      try {
        if (route(stream, headers, ctx)) return;
      } catch (err) {
        logger.error({ err, path: headers[":path"] }, "stream route failed");
        respondTrailersOnly(stream, Code.Internal, "internal error");
        return;
      }
    }
    resetUnreadRequest(stream);
    compat!(stream, headers, flags, rawHeaders);
  };

  server.on("stream", dispatch);
  server.on("request", opts.handler);
  compat = server.listeners("stream").find((l) => l !== dispatch) as StreamListener | undefined;
  if (!compat) throw new Error("node:http2 compatibility layer not found; unsupported Node.js version");
  server.removeListener("stream", compat);

  const sessions = new Set<http2.ServerHttp2Session>();
  // Idle means no stream open for the idle timeout, whatever else the client
  // sends: PINGs or SETTINGS trickled every second must not keep a connection forever.
  const idle = new DeadlineSweep<TrackedSession>(limits.idleTimeoutMs, (session) => {
    if (!session.destroyed && !session.closed && (session[OPEN] ?? 0) === 0) goAway(session);
  });
  /** Destroys a session (and its socket) unless it has closed by itself within the grace. */
  const destroyLater = (session: http2.ServerHttp2Session, reason: "goaway_grace") => {
    setTimeout(() => {
      if (session.destroyed) return;
      edge.rejected(reason, { listener });
      session.destroy();
    }, GOAWAY_GRACE_MS).unref();
  };
  const goAway = (session: TrackedSession) => {
    edge.rejected("idle_timeout", { listener });
    session.close();
    destroyLater(session, "goaway_grace");
  };
  /** Node's session timeout: no frame at all either way for the idle timeout. */
  const onIdle = (session: TrackedSession) => {
    if (session.destroyed) return;
    if ((session[OPEN] ?? 0) === 0) {
      if (!session.closed) goAway(session);
      return;
    }
    // Streams are open but nothing moved (a quiet Watch, or a session nghttp2
    // has already given up on): a PING tells a live peer from a dead one.
    const timer = setTimeout(() => {
      if (session.destroyed) return;
      edge.rejected("goaway_grace", { listener });
      session.destroy();
    }, GOAWAY_GRACE_MS);
    timer.unref();
    try {
      const sent = session.ping((err) => {
        clearTimeout(timer);
        if (err && !session.destroyed) session.destroy();
      });
      if (!sent) {
        clearTimeout(timer);
        session.destroy();
      }
    } catch {
      clearTimeout(timer);
      session.destroy();
    }
  };
  server.on("session", (session: TrackedSession) => {
    session[LISTENER] = ctx;
    session[OPEN] = 0;
    sessions.add(session);
    session.setTimeout(limits.idleTimeoutMs, () => onIdle(session));
    idle.set(session, Date.now() + limits.idleTimeoutMs);
    session.once("close", () => {
      sessions.delete(session);
      idle.delete(session);
      disarmSessionTimeout(session);
    });
    session.on("error", (err) => logger.debug({ err, listener }, "http2 session error"));
  });
  server.on("sessionError", (err) => logger.debug({ err, listener, surface: ctx.surface }, "http2 session error"));
  return {
    server,
    sessions,
    stop: () => {
      pending.stop();
      idle.stop();
    },
  };
}

/**
 * node:http2 leaves a session's setTimeout() timer armed after the session is
 * destroyed, and the timer holds the session and its buffers until it fires:
 * ~2 KiB per connection for the whole idle timeout. At 1,000 new connections
 * a second (the livenessprobe pattern, server on one core) that ran the 48 MiB
 * heap out in 15 s; on a bare node:http2 server 5,000 connections keep 10 MiB.
 * session.setTimeout(0) is a no-op once the session is destroyed, so the
 * timer is cleared through the session's own "timeout" symbol (so on Node 20
 * and 24; were a later Node to rename it, this does nothing and the bench's
 * 1,000 connections/s row and the soak's RSS slope would show the retention).
 */
function disarmSessionTimeout(session: http2.Http2Session): void {
  const key = Object.getOwnPropertySymbols(session).find((s) => s.description === "timeout");
  const timer = key ? (session as unknown as Record<symbol, unknown>)[key] : undefined;
  if (timer) clearTimeout(timer as NodeJS.Timeout);
}

/** Connection cap on a listening server: Node closes the extra sockets on accept and says so with 'drop'. */
export function capConnections(server: net.Server, max: number, edge: Edge, listener: Listener): void {
  server.maxConnections = max;
  server.on("drop", () => edge.rejected("connections", { listener }));
}

/**
 * Once a stream is answered, stops the rest of its request: RST_STREAM(NO_ERROR)
 * (RFC 9113 §8.1), as gRPC servers do. An oversized request is refused after
 * its first few KiB, and without this its stream (and the client's upload)
 * would stay open until the client gave up.
 */
export function resetUnreadRequest(stream: http2.ServerHttp2Stream): void {
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
