import { Code } from "@connectrpc/connect";
import http2 from "node:http2";
import type { Logger } from "../observability/logger.js";
import type { Conn } from "./connection-table.js";
import { DeadlineSweep } from "./deadline-sweep.js";
import { DEFAULT_AUTHORITY } from "./authority.js";
import { answerStream, requestTimedOut } from "./edge-answer.js";
import { GOAWAY_GRACE_MS } from "./edge-limits.js";
import { respondTrailersOnly } from "./grpc-wire.js";
import type { ListenerAdmission, Ticket } from "./listener-admission.js";
import { LISTENER, resetUnreadRequest, type CompatHandler, type StreamContext, type StreamRoute } from "./stream-route.js";

type StreamListener = (
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  flags: number,
  rawHeaders: string[],
) => void;

/** The admission ticket of a stream, released when it closes. */
const TICKET = Symbol("probegate.ticket");
/** The connection-table entry of the stream's connection (stream.session is gone by 'close'). */
const CONN = Symbol("probegate.conn");
/** For answering in the client's protocol when the request times out. */
const CONTENT_TYPE = Symbol("probegate.contentType");
type AdmittedStream = http2.ServerHttp2Stream & {
  [TICKET]?: Ticket;
  [CONN]?: Conn;
  [CONTENT_TYPE]?: string | string[];
};

/** A session's connection-table entry. */
const CONN_OF = Symbol("probegate.sessionConn");
type TrackedSession = http2.ServerHttp2Session & { [LISTENER]?: StreamContext; [CONN_OF]?: Conn };

export interface H2Server {
  server: http2.Http2Server;
  /** Hands an admitted connection to the server (the TCP port sniffs the protocol first). */
  attach(conn: Conn): void;
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
 * a request timeout per stream, and a grace after which a session that should
 * be gone is destroyed. Its idle and first-request timeouts are the connection
 * table's. node:http2 sends GOAWAY on a connection error (a bad frame) but
 * neither closes the socket nor tells anyone: such a session just stops
 * answering. So an idle session that has received anything since it was last
 * checked is sent a PING, and destroyed when no ACK comes within the grace.
 */
export function createH2Server(opts: {
  ctx: StreamContext;
  routes: readonly StreamRoute[];
  handler: CompatHandler;
  logger: Logger;
  admission: ListenerAdmission;
}): H2Server {
  const { ctx, routes, logger, admission } = opts;
  const { limits, table } = admission;
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
    admission.rejected("request_timeout");
    answerStream(stream, (stream as AdmittedStream)[CONTENT_TYPE], requestTimedOut(limits.requestTimeoutMs));
    stream.close(http2.constants.NGHTTP2_CANCEL);
  });

  // One listener for every stream (no closure per call: Probe's fast path runs through here).
  function onStreamClose(this: AdmittedStream) {
    admission.release(this[TICKET]!);
    pending.delete(this);
    const conn = this[CONN];
    if (conn) table.done(conn);
  }

  const dispatch: StreamListener = (stream, headers, flags, rawHeaders) => {
    const authority = headers[":authority"] ?? headers.host;
    const entry = admission.admit(headers[":path"], authority);
    if (!entry.admitted) {
      stream.on("error", () => {});
      answerStream(stream, headers["content-type"], entry.answer);
      return;
    }
    if (authority === undefined) headers[":authority"] = DEFAULT_AUTHORITY;
    const conn = (stream.session as TrackedSession | undefined)?.[CONN_OF];
    if (conn) table.busy(conn);
    (stream as AdmittedStream)[TICKET] = entry;
    (stream as AdmittedStream)[CONN] = conn;
    // 'close' comes once; on() spares the wrapper once() would allocate.
    stream.on("close", onStreamClose);
    (stream as AdmittedStream)[CONTENT_TYPE] = headers["content-type"];
    pending.set(stream, Date.now() + limits.requestTimeoutMs);
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

  /** Destroys a session (and its socket) unless it has closed by itself within the grace. */
  const destroyLater = (session: http2.ServerHttp2Session, reason: "goaway_grace") => {
    afterGrace(() => {
      if (session.destroyed) return;
      admission.rejected(reason);
      session.destroy();
    });
  };
  /**
   * The table's timeout: no stream open for the idle timeout (or none ever, for
   * the header timeout), whatever else the client sends: PINGs or SETTINGS
   * trickled every second must not keep a connection.
   */
  const goAway = (session: TrackedSession, reason: "header_timeout" | "idle_timeout") => {
    admission.rejected(reason);
    if (session.destroyed) return;
    session.close();
    destroyLater(session, "goaway_grace");
  };
  /** Node's session timeout: no frame at all either way for the idle timeout. */
  const onIdle = (session: TrackedSession) => {
    // With no stream open it is the connection table's to close.
    if (session.destroyed || (session[CONN_OF]?.busy ?? 0) === 0) return;
    // Streams are open but nothing moved (a quiet Watch, or a session nghttp2
    // has already given up on): a PING tells a live peer from a dead one.
    const timer = afterGrace(() => {
      if (session.destroyed) return;
      admission.rejected("goaway_grace");
      session.destroy();
    });
    try {
      const sent = session.ping((err) => {
        timer.cancel();
        if (err && !session.destroyed) session.destroy();
      });
      if (!sent) {
        timer.cancel();
        session.destroy();
      }
    } catch {
      timer.cancel();
      session.destroy();
    }
  };
  /**
   * While idle: a session that has received bytes since the last look is asked
   * for a PING ACK; one that cannot give it (a connection error made nghttp2
   * stop, or a peer that is not HTTP/2) is destroyed after the grace.
   */
  const checkAlive = (conn: Conn, session: TrackedSession, seen: { bytes: number; waiting: boolean }) => {
    const bytes = conn.socket.bytesRead;
    if (seen.waiting || bytes === seen.bytes || session.destroyed) return;
    seen.bytes = bytes;
    seen.waiting = true;
    const timer = afterGrace(() => {
      if (session.destroyed || conn.busy > 0) return;
      admission.rejected("goaway_grace");
      session.destroy();
    });
    try {
      session.ping(() => {
        timer.cancel();
        seen.waiting = false;
        // The ACK itself is bytes read; only what the peer sends after it asks for another look.
        seen.bytes = conn.socket.bytesRead;
      });
    } catch {
      timer.cancel();
      session.destroy();
    }
  };
  let incoming: Conn | undefined;
  server.on("session", (session: TrackedSession) => {
    session[LISTENER] = ctx;
    const conn = incoming;
    if (conn) {
      session[CONN_OF] = conn;
      conn.session = session;
      conn.onTimeout = (reason) => goAway(session, reason);
      const seen = { bytes: 0, waiting: false };
      conn.onIdleTick = () => checkAlive(conn, session, seen);
    }
    session.setTimeout(limits.idleTimeoutMs, () => onIdle(session));
    session.once("close", () => disarmSessionTimeout(session));
    session.on("error", (err: NodeJS.ErrnoException) => {
      // Node 24 ends a session at once on a peer's protocol error (Node 20
      // sends GOAWAY and waits: checkAlive ends those as goaway_grace); a
      // peer's reset or a closed socket is no refusal and is not counted.
      if (err.code === "ERR_HTTP2_ERROR" || err.code === "ERR_HTTP2_SESSION_ERROR") admission.rejected("protocol_error");
      logger.debug({ err, listener }, "http2 session error");
    });
  });
  server.on("sessionError", (err) => logger.debug({ err, listener, surface: ctx.surface }, "http2 session error"));
  return {
    server,
    attach(conn) {
      // 'session' is emitted synchronously from the server's connection listener.
      incoming = conn;
      try {
        server.emit("connection", conn.socket);
      } finally {
        incoming = undefined;
      }
    },
    stop: () => pending.stop(),
  };
}

/**
 * Runs `then` once the grace has passed and whatever arrived meanwhile has
 * been read. A timer fires before the loop polls its sockets, so after a
 * stall (a connection flood, a long GC) the peer's PING ACK or next request
 * may already be waiting unread when the grace ends: judging then would reset
 * a live connection and the call on it. The check phase comes after the poll.
 */
function afterGrace(then: () => void): { cancel(): void } {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(then);
  }, GOAWAY_GRACE_MS);
  timer.unref();
  return {
    cancel() {
      clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
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
