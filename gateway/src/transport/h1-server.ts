import http from "node:http";
import type net from "node:net";
import type { Logger } from "../observability/logger.js";
import { DeadlineSweep } from "./deadline-sweep.js";
import { DEFAULT_AUTHORITY, validAuthority } from "./authority.js";
import { answerResponse, badAuthority, requestTimedOut, tooBusy } from "./edge-answer.js";
import { GOAWAY_GRACE_MS, MAX_PIPELINED } from "./edge-limits.js";
import type { Edge } from "./edge.js";
import type { CompatHandler } from "./h2-server.js";
import { requestPath } from "./request-path.js";

type Phase = "headers" | "request" | "busy" | "idle";

interface Conn {
  phase: Phase;
  req?: http.IncomingMessage;
  res?: http.ServerResponse;
  /** Pipelined requests waiting for the one being served. */
  queue: Array<[http.IncomingMessage, http.ServerResponse]>;
}

const TIMEOUT_408 = "HTTP/1.1 408 Request Timeout\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";

export interface H1Server {
  /** Hands a connection to the server (the TCP port sniffs the protocol first). */
  attach(socket: net.Socket): void;
  sockets: Set<net.Socket>;
  server: http.Server;
  stop(): void;
}

/**
 * The HTTP/1.1 side of the TCP port. Sockets arrive through emit('connection')
 * and the server never listen()s, so Node's own header and request timeouts
 * never run; this enforces them itself, with the keep-alive idle timeout, on
 * one coarse timer. Pipelined requests are served one at a time per connection
 * (Node would start them all at once), at most MAX_PIPELINED waiting.
 */
export function createH1Server(opts: { handler: CompatHandler; logger: Logger; edge: Edge }): H1Server {
  const { edge, logger } = opts;
  const { limits } = edge;
  const conns = new WeakMap<net.Socket, Conn>();
  const sockets = new Set<net.Socket>();

  const closeSoon = (socket: net.Socket) => {
    setTimeout(() => socket.destroy(), GOAWAY_GRACE_MS).unref();
  };

  const sweep = new DeadlineSweep<net.Socket>(Math.min(limits.headerTimeoutMs, limits.requestTimeoutMs, limits.idleTimeoutMs), (socket) => {
    const c = conns.get(socket);
    if (!c || socket.destroyed) return;
    if (c.phase === "headers") {
      edge.rejected("header_timeout", { listener: "tcp" });
      if (socket.writable) socket.end(TIMEOUT_408);
      closeSoon(socket);
    } else if (c.phase === "request") {
      if (c.req?.complete) return;
      edge.rejected("request_timeout", { listener: "tcp" });
      answerResponse(c.res!, c.req?.headers["content-type"], requestTimedOut(limits.requestTimeoutMs), true);
      closeSoon(socket);
    } else if (c.phase === "idle") {
      edge.rejected("idle_timeout", { listener: "tcp" });
      socket.destroy();
    }
  });

  const serve = (socket: net.Socket, c: Conn, req: http.IncomingMessage, res: http.ServerResponse) => {
    c.phase = "request";
    c.req = req;
    c.res = res;
    sweep.set(socket, Date.now() + limits.requestTimeoutMs);
    const cls = edge.classify(requestPath(req.url));
    const refusal = edge.admission.enter(cls);
    let done = false;
    const finished = () => {
      if (done) return;
      done = true;
      if (!refusal) edge.admission.leave(cls);
      c.req = undefined;
      c.res = undefined;
      const next = c.queue.shift();
      if (next) serve(socket, c, next[0], next[1]);
      else if (!socket.destroyed) {
        c.phase = "idle";
        sweep.set(socket, Date.now() + limits.idleTimeoutMs);
      }
    };
    res.once("finish", finished);
    res.once("close", finished);
    const host = req.headers.host;
    // HTTP/1.0 may omit Host (HTTP/1.1 without one never gets here: Node answers 400).
    if (host === undefined) req.headers.host = DEFAULT_AUTHORITY;
    else if (!validAuthority(host)) {
      edge.rejected("bad_authority", { listener: "tcp" });
      req.resume();
      answerResponse(res, req.headers["content-type"], badAuthority(), true);
      return;
    }
    if (refusal) {
      edge.rejected(refusal, { listener: "tcp", path: requestPath(req.url) });
      req.resume();
      answerResponse(res, req.headers["content-type"], tooBusy(refusal === "watches" ? "too many Watch streams" : "too many calls in progress"), false);
      return;
    }
    // The body may still be arriving; once it is in, only the handler's own time counts.
    if (req.complete) c.phase = "busy";
    else req.once("end", () => c.req === req && (c.phase = "busy"));
    opts.handler(req, res);
  };

  const server = http.createServer(
    // Node's own timers cannot run here (see above); its keep-alive timer can, so it agrees with ours.
    { keepAliveTimeout: limits.idleTimeoutMs, requestTimeout: 0 },
    (req, res) => {
      const socket = req.socket;
      const c = conns.get(socket);
      if (!c) {
        opts.handler(req, res);
        return;
      }
      if (c.phase === "headers" || c.phase === "idle") {
        serve(socket, c, req, res);
        return;
      }
      if (c.queue.length >= MAX_PIPELINED) {
        edge.rejected("pipeline_depth", { listener: "tcp" });
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
    sockets,
    attach(socket) {
      sockets.add(socket);
      conns.set(socket, { phase: "headers", queue: [] });
      sweep.set(socket, Date.now() + limits.headerTimeoutMs);
      socket.once("close", () => {
        sockets.delete(socket);
        sweep.delete(socket);
      });
      server.emit("connection", socket);
    },
    stop: () => sweep.stop(),
  };
}
