import http from "node:http";
import type net from "node:net";
import type { Logger } from "../observability/logger.js";
import type { Conn } from "./connection-table.js";
import { DeadlineSweep } from "./deadline-sweep.js";
import { DEFAULT_AUTHORITY } from "./authority.js";
import { answerResponse, requestTimedOut, tooBusy } from "./edge-answer.js";
import { GOAWAY_GRACE_MS, MAX_PIPELINED } from "./edge-limits.js";
import type { ListenerAdmission } from "./listener-admission.js";
import { LISTENER, NETWORK_TCP, type CompatHandler, type StreamContext } from "./stream-route.js";

/**
 * An HTTP/1.1 connection's own state, kept beside its connection-table entry:
 * waiting for a request (its header and idle timeouts are the table's), a
 * request whose body is still arriving (the request timeout, here), or busy.
 */
interface H1State {
  phase: "waiting" | "request" | "busy";
  req?: http.IncomingMessage;
  res?: http.ServerResponse;
  /** Pipelined requests waiting for the one being served. */
  queue: Array<[http.IncomingMessage, http.ServerResponse]>;
}

const TIMEOUT_408 = "HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

export interface H1Server {
  /** Hands an admitted connection to the server (the TCP port sniffs the protocol first). */
  attach(conn: Conn): void;
  server: http.Server;
  stop(): void;
}

/**
 * The HTTP/1.1 side of a TCP port. Sockets arrive through emit('connection')
 * and the server never listen()s, so Node's own header and request timeouts
 * never run: the connection table enforces the header and keep-alive idle
 * timeouts, this the request timeout, on one coarse timer. Pipelined requests
 * are served one at a time per connection (Node would start them all at once),
 * at most MAX_PIPELINED waiting.
 */
export function createH1Server(opts: {
  handler: CompatHandler;
  logger: Logger;
  admission: ListenerAdmission;
  /** Which endpoint its connections arrive on (default: the network port). */
  ctx?: StreamContext;
}): H1Server {
  const { logger, admission } = opts;
  const { limits, table } = admission;
  const states = new WeakMap<Conn, H1State>();

  const closeSoon = (socket: net.Socket) => {
    setTimeout(() => socket.destroy(), GOAWAY_GRACE_MS).unref();
  };

  const sweep = new DeadlineSweep<Conn>(limits.requestTimeoutMs, (conn) => {
    const c = states.get(conn);
    if (!c || conn.socket.destroyed || c.phase !== "request" || c.req?.complete) return;
    admission.rejected("request_timeout");
    answerResponse(c.res!, c.req?.headers["content-type"], requestTimedOut(limits.requestTimeoutMs), true);
    closeSoon(conn.socket);
  });

  const onTimeout = (conn: Conn, reason: "header_timeout" | "idle_timeout") => {
    admission.rejected(reason);
    // Headers begun and not finished get an answer; a quiet keep-alive connection just goes.
    if (reason === "idle_timeout") conn.socket.destroy();
    else {
      if (conn.socket.writable) conn.socket.end(TIMEOUT_408);
      closeSoon(conn.socket);
    }
  };

  const serve = (conn: Conn, c: H1State, req: http.IncomingMessage, res: http.ServerResponse) => {
    c.phase = "request";
    c.req = req;
    c.res = res;
    // The connection is busy while anything is answered on it, a refusal too.
    table.busy(conn);
    sweep.set(conn, Date.now() + limits.requestTimeoutMs);
    // HTTP/1.0 may omit Host (HTTP/1.1 without one never gets here: Node answers 400).
    const entry = admission.admit(req.url, req.headers.host);
    let done = false;
    const finished = () => {
      if (done) return;
      done = true;
      if (entry.admitted) admission.release(entry);
      c.req = undefined;
      c.res = undefined;
      sweep.delete(conn);
      const next = c.queue.shift();
      if (next) serve(conn, c, next[0], next[1]);
      else c.phase = "waiting";
      // After the next one is counted, so a half-closed peer's queue is still served.
      table.done(conn);
    };
    res.once("finish", finished);
    res.once("close", finished);
    if (!entry.admitted) {
      req.resume();
      answerResponse(res, req.headers["content-type"], entry.answer, entry.closeConnection);
      return;
    }
    req.headers.host ??= DEFAULT_AUTHORITY;
    // The body may still be arriving; once it is in, only the handler's own time counts.
    if (req.complete) c.phase = "busy";
    else req.once("end", () => c.req === req && (c.phase = "busy"));
    opts.handler(req, res);
  };

  const server = http.createServer(
    // Node's own timers cannot run here (see above); its keep-alive timer can, so it agrees with ours.
    { keepAliveTimeout: limits.idleTimeoutMs, requestTimeout: 0 },
    (req, res) => {
      const conn = table.get(req.socket);
      const c = conn && states.get(conn);
      if (!conn || !c) {
        opts.handler(req, res);
        return;
      }
      if (c.phase === "waiting") {
        serve(conn, c, req, res);
        return;
      }
      if (c.queue.length >= MAX_PIPELINED) {
        admission.rejected("pipeline_depth");
        req.resume();
        // Answered at once, in order after the ones waiting; the connection stays usable.
        answerResponse(res, req.headers["content-type"], tooBusy("too many pipelined requests"), false);
        return;
      }
      c.queue.push([req, res]);
    },
  );
  server.on("clientError", (err, socket) => {
    logger.debug({ err }, "http/1.1 client error");
    if (socket.writable) {
      socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
      closeSoon(socket as net.Socket);
    } else socket.destroy();
  });

  return {
    server,
    attach(conn) {
      states.set(conn, { phase: "waiting", queue: [] });
      (conn.socket as unknown as Record<symbol, StreamContext>)[LISTENER] = opts.ctx ?? NETWORK_TCP;
      conn.onTimeout = (reason) => onTimeout(conn, reason);
      conn.socket.once("close", () => sweep.delete(conn));
      server.emit("connection", conn.socket);
    },
    stop: () => sweep.stop(),
  };
}
