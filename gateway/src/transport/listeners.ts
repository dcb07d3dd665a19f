import http from "node:http";
import type http2 from "node:http2";
import net from "node:net";
import type { Logger } from "../observability/logger.js";
import type { Endpoint } from "./endpoint.js";
import { createH2Server, type CompatHandler } from "./h2-server.js";
import { sniffConnection } from "./sniff.js";
import { NETWORK_TCP, type StreamRoute } from "./stream-route.js";
import { prepareSocketPath, removeSocketPath } from "./unix-socket.js";

export class ListenError extends Error {}

export interface RunningListener {
  endpoint: Endpoint;
  /** Bound address (the real port when 0 was asked for). */
  address: string;
  /** Stop accepting, let in-flight calls finish within the deadline, then cut the rest. */
  close(deadlineMs: number): Promise<void>;
}

function listen(server: net.Server, ep: Endpoint): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.removeListener("listening", onListening);
      const what = ep.display;
      if (err.code === "EADDRINUSE") reject(new ListenError(`${what} is already in use`));
      else if (err.code === "EACCES") reject(new ListenError(`${what}: permission denied`));
      else if (err.code === "EADDRNOTAVAIL") reject(new ListenError(`${what}: address not available on this host`));
      else reject(new ListenError(`${what}: ${err.message}`));
    };
    const onListening = () => {
      server.removeListener("error", onError);
      resolve();
    };
    server.once("error", onError);
    server.once("listening", onListening);
    if (ep.kind === "unix") server.listen(ep.path);
    else server.listen(ep.port, ep.host);
  });
}

function boundAddress(server: net.Server, ep: Endpoint): string {
  if (ep.kind === "unix") return ep.display;
  const a = server.address() as net.AddressInfo;
  return `${a.address.includes(":") ? `[${a.address}]` : a.address}:${a.port}`;
}

/** Waits for every tracked connection to go away, or the deadline. */
async function drain(
  sessions: Set<http2.ServerHttp2Session>,
  sockets: Set<net.Socket>,
  deadlineMs: number,
  onTick?: () => void,
): Promise<void> {
  for (const s of sessions) s.close();
  const start = Date.now();
  while ((sessions.size > 0 || sockets.size > 0) && Date.now() - start < deadlineMs) {
    // Keep-alive connections become idle as their last call ends; close them then.
    onTick?.();
    await new Promise((r) => setTimeout(r, 20));
  }
  for (const s of sessions) s.destroy();
  for (const s of sockets) s.destroy();
}

/** The CSI endpoint: gRPC over h2c only (what kubelet-side tools speak). */
export async function startCsiListener(opts: {
  endpoint: Endpoint;
  routes: readonly StreamRoute[];
  handler: CompatHandler;
  logger: Logger;
}): Promise<RunningListener> {
  const { endpoint } = opts;
  const ctx = { listener: endpoint.kind === "unix" ? "unix" : "tcp", surface: "csi" } as const;
  const { server, sessions } = createH2Server({ ctx, routes: opts.routes, handler: opts.handler, logger: opts.logger });
  if (endpoint.kind === "unix") {
    try {
      await prepareSocketPath(endpoint.path);
    } catch (err) {
      throw new ListenError(`${endpoint.display}: ${(err as Error).message}`);
    }
  }
  await listen(server, endpoint);
  const address = boundAddress(server, endpoint);
  return {
    endpoint,
    address,
    async close(deadlineMs) {
      server.close();
      await drain(sessions, new Set(), deadlineMs);
      if (endpoint.kind === "unix") await removeSocketPath(endpoint.path);
    },
  };
}

/**
 * The HTTP endpoint: one TCP port for gRPC (h2c prior knowledge), gRPC-Web and
 * Connect over HTTP/1.1 or h2c, and the plain HTTP paths. Each connection's
 * first bytes decide which server gets it.
 */
export async function startHttpListener(opts: {
  endpoint: Endpoint;
  routes: readonly StreamRoute[];
  handler: CompatHandler;
  logger: Logger;
}): Promise<RunningListener> {
  const { endpoint, logger } = opts;
  const h2 = createH2Server({ ctx: NETWORK_TCP, routes: opts.routes, handler: opts.handler, logger });
  const h1 = http.createServer({ keepAliveTimeout: 65_000, requestTimeout: 30_000 }, opts.handler as http.RequestListener);
  h1.on("clientError", (err, socket) => {
    logger.debug({ err }, "http/1.1 client error");
    if (socket.writable) socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    else socket.destroy();
  });
  const h1Sockets = new Set<net.Socket>();
  const tcp = net.createServer((socket) => {
    socket.on("error", (err) => logger.debug({ err }, "connection error"));
    sniffConnection(socket, (proto, s) => {
      if (proto === "h2c") {
        h2.server.emit("connection", s);
      } else {
        h1Sockets.add(s);
        s.once("close", () => h1Sockets.delete(s));
        h1.emit("connection", s);
      }
    });
  });
  if (endpoint.kind !== "tcp") throw new ListenError(`${endpoint.display}: the HTTP endpoint must be TCP`);
  await listen(tcp, endpoint);
  const address = boundAddress(tcp, endpoint);
  return {
    endpoint,
    address,
    async close(deadlineMs) {
      tcp.close();
      h1.close();
      await drain(h2.sessions, h1Sockets, deadlineMs, () => h1.closeIdleConnections());
    },
  };
}
