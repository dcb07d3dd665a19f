import type http2 from "node:http2";
import net from "node:net";
import type { Logger } from "../observability/logger.js";
import type { Endpoint } from "./endpoint.js";
import type { Edge } from "./edge.js";
import { createH1Server } from "./h1-server.js";
import { capConnections, createH2Server, type CompatHandler } from "./h2-server.js";
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
  edge: Edge;
}): Promise<RunningListener> {
  const { endpoint, edge } = opts;
  const ctx = { listener: endpoint.kind === "unix" ? "unix" : "tcp", surface: "csi" } as const;
  const listener = ctx.listener;
  const { server, sessions, stop } = createH2Server({ ctx, routes: opts.routes, handler: opts.handler, logger: opts.logger, edge });
  capConnections(server, edge.limits.maxConnections, edge, listener);
  if (endpoint.kind === "unix") {
    try {
      await prepareSocketPath(endpoint.path);
    } catch (err) {
      throw new ListenError(`${endpoint.display}: ${(err as Error).message}`);
    }
  }
  await listen(server, endpoint);
  // After listening, accept errors (EMFILE when descriptors run out) are worth a line, never a crash.
  server.on("error", (err) => opts.logger.warn({ err, listener }, "listener error"));
  const address = boundAddress(server, endpoint);
  return {
    endpoint,
    address,
    async close(deadlineMs) {
      server.close();
      await drain(sessions, new Set(), deadlineMs);
      stop();
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
  edge: Edge;
}): Promise<RunningListener> {
  const { endpoint, logger, edge } = opts;
  const h2 = createH2Server({ ctx: NETWORK_TCP, routes: opts.routes, handler: opts.handler, logger, edge });
  const h1 = createH1Server({ handler: opts.handler, logger, edge });
  const tcp = net.createServer((socket) => {
    socket.on("error", (err) => logger.debug({ err }, "connection error"));
    sniffConnection(
      socket,
      (proto, s) => {
        if (proto === "h2c") h2.server.emit("connection", s);
        else h1.attach(s);
      },
      edge.limits.headerTimeoutMs,
    );
  });
  capConnections(tcp, edge.limits.maxConnections, edge, "tcp");
  if (endpoint.kind !== "tcp") throw new ListenError(`${endpoint.display}: the HTTP endpoint must be TCP`);
  await listen(tcp, endpoint);
  tcp.on("error", (err) => logger.warn({ err, listener: "tcp" }, "listener error"));
  const address = boundAddress(tcp, endpoint);
  return {
    endpoint,
    address,
    async close(deadlineMs) {
      tcp.close();
      h1.server.close();
      await drain(h2.sessions, h1.sockets, deadlineMs, () => h1.server.closeIdleConnections());
      h1.stop();
      h2.stop();
    },
  };
}
