import net from "node:net";
import type { Logger } from "../observability/logger.js";
import type { Endpoint } from "./endpoint.js";
import type { Edge } from "./edge.js";
import { createH1Server } from "./h1-server.js";
import type { Conn } from "./connection-table.js";
import { createH2Server } from "./h2-server.js";
import { ListenerAdmission } from "./listener-admission.js";
import { sniffConnection } from "./sniff.js";
import { NETWORK_TCP, type CompatHandler, type StreamContext, type StreamRoute } from "./stream-route.js";
import { prepareSocketPath, removeSocketPath } from "./unix-socket.js";

export class ListenError extends Error {}

export interface RunningListener {
  endpoint: Endpoint;
  /** Bound address (the real port when 0 was asked for). */
  address: string;
  /** Stop accepting, let in-flight calls finish within the deadline, then cut the rest. */
  close(deadlineMs: number): Promise<void>;
}

/**
 * Connections the kernel may hold for us before they are accepted (it caps
 * this at net.core.somaxconn). Node's 511 is less than one flood of 1,000
 * connects arriving while the event loop is busy: past it a unix socket's
 * connect fails with EAGAIN, so kubelet's probe would be refused before the
 * connection table could make room by evicting an idle connection.
 */
const LISTEN_BACKLOG = 4096;

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
    if (ep.kind === "unix") server.listen({ path: ep.path, backlog: LISTEN_BACKLOG });
    else server.listen({ port: ep.port, host: ep.host, backlog: LISTEN_BACKLOG });
  });
}

function boundAddress(server: net.Server, ep: Endpoint): string {
  if (ep.kind === "unix") return ep.display;
  const a = server.address() as net.AddressInfo;
  return `${a.address.includes(":") ? `[${a.address}]` : a.address}:${a.port}`;
}

/**
 * Accepts connections through a listener's admission and hands each admitted
 * one on; its table closes idle ones to make room, and drains them on close.
 */
function acceptInto(admission: ListenerAdmission, logger: Logger, onConn: (conn: Conn) => void): net.Server {
  return net.createServer((socket) => {
    socket.on("error", (err) => logger.debug({ err }, "connection error"));
    const conn = admission.accept(socket);
    if (conn) onConn(conn);
  });
}

interface SniffedListenerOpts {
  endpoint: Endpoint;
  routes: readonly StreamRoute[];
  handler: CompatHandler;
  logger: Logger;
  edge: Edge;
}

/**
 * A listener whose connections' first bytes pick the server: HTTP/2 prior
 * knowledge (gRPC) or HTTP/1.1. The CSI socket and the HTTP port differ only
 * in the context their streams carry and, on a unix socket, the socket file.
 */
async function startSniffedListener(opts: SniffedListenerOpts, ctx: StreamContext): Promise<RunningListener> {
  const { endpoint, edge, logger } = opts;
  const listener = ctx.listener;
  const admission = new ListenerAdmission(edge, listener);
  const h2 = createH2Server({ ctx, routes: opts.routes, handler: opts.handler, logger, admission });
  const h1 = createH1Server({ handler: opts.handler, logger, admission, ctx });
  const server = acceptInto(admission, logger, (conn) =>
    sniffConnection(conn.socket, (proto) => (proto === "h2c" ? h2.attach(conn) : h1.attach(conn))),
  );
  if (endpoint.kind === "unix") {
    try {
      await prepareSocketPath(endpoint.path);
    } catch (err) {
      throw new ListenError(`${endpoint.display}: ${(err as Error).message}`);
    }
  }
  await listen(server, endpoint);
  // After listening, accept errors (EMFILE when descriptors run out) are worth a line, never a crash.
  server.on("error", (err) => logger.warn({ err, listener }, "listener error"));
  const address = boundAddress(server, endpoint);
  return {
    endpoint,
    address,
    async close(deadlineMs) {
      server.close();
      h1.server.close();
      await admission.table.drain(deadlineMs);
      h1.stop();
      h2.stop();
      if (endpoint.kind === "unix") await removeSocketPath(endpoint.path);
    },
  };
}

/**
 * The CSI endpoint: gRPC over h2c (what kubelet-side tools speak), and
 * HTTP/1.1 for someone on the node with curl (`curl --unix-socket`): /readyz,
 * Connect and gRPC-Web as on the HTTP port. The mount API (gateway mode's
 * routes) is gRPC, so HTTP/2 only.
 */
export function startCsiListener(opts: SniffedListenerOpts): Promise<RunningListener> {
  return startSniffedListener(opts, { listener: opts.endpoint.kind === "unix" ? "unix" : "tcp", surface: "csi" });
}

/**
 * The HTTP endpoint: one TCP port for gRPC (h2c prior knowledge), gRPC-Web and
 * Connect over HTTP/1.1 or h2c, and the plain HTTP paths. Each connection's
 * first bytes decide which server gets it.
 */
export async function startHttpListener(opts: SniffedListenerOpts): Promise<RunningListener> {
  if (opts.endpoint.kind !== "tcp") throw new ListenError(`${opts.endpoint.display}: the HTTP endpoint must be TCP`);
  return startSniffedListener(opts, NETWORK_TCP);
}

/**
 * The metrics endpoint: HTTP/1.1 (what Prometheus speaks) for GET /metrics and
 * nothing else, so the address Prometheus scrapes serves no Probe, health,
 * readiness detail or reflection. It has its own connection table and the
 * same edge limits.
 */
export async function startMetricsListener(opts: {
  endpoint: Endpoint;
  handler: CompatHandler;
  logger: Logger;
  edge: Edge;
}): Promise<RunningListener> {
  const { endpoint, logger, edge } = opts;
  if (endpoint.kind !== "tcp") throw new ListenError(`${endpoint.display}: the metrics endpoint must be TCP`);
  const admission = new ListenerAdmission(edge, "tcp");
  const h1 = createH1Server({ handler: opts.handler, logger, admission });
  const tcp = acceptInto(admission, logger, (conn) => h1.attach(conn));
  await listen(tcp, endpoint);
  tcp.on("error", (err) => logger.warn({ err, listener: "metrics" }, "listener error"));
  return {
    endpoint,
    address: boundAddress(tcp, endpoint),
    async close(deadlineMs) {
      tcp.close();
      h1.server.close();
      await admission.table.drain(deadlineMs);
      h1.stop();
    },
  };
}
