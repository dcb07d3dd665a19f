// One loopback helper for the edge tests: an in-process edge with real
// admission counts, real accepted sockets, and raw bytes to a listener.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { Admission } from "../../src/transport/admission.js";
import { DEFAULT_EDGE_LIMITS, type EdgeLimits, type EdgeRejection } from "../../src/transport/edge-limits.js";
import type { Edge } from "../../src/transport/edge.js";

/** An edge as startGateway builds one, counting its refusals by reason instead of into metrics. */
export function testEdge(limits: Partial<EdgeLimits> = {}): { edge: Edge; counts: Map<EdgeRejection, number> } {
  const counts = new Map<EdgeRejection, number>();
  const l = { ...DEFAULT_EDGE_LIMITS, ...limits };
  const edge: Edge = {
    limits: l,
    admission: new Admission(l.maxInflight, l.maxWatches),
    rejected: (reason) => counts.set(reason, (counts.get(reason) ?? 0) + 1),
  };
  return { edge, counts };
}

/** The host and port of a listener's "host:port" (IPv6 in brackets or not). */
export function hostPort(target: string): { host: string; port: number } {
  const at = target.lastIndexOf(":");
  return { host: target.slice(0, at).replace(/^\[(.*)\]$/, "$1"), port: Number(target.slice(at + 1)) };
}

/** "host:port" or a unix socket path, as a net.connect() target. */
export function dialTarget(target: string): net.NetConnectOpts {
  return target.startsWith("/") ? { path: target } : hostPort(target);
}

/** A socket to a listener ("host:port" or a unix socket path) whose errors are the test's to observe. */
export function dial(target: string): net.Socket {
  return net.connect(dialTarget(target)).on("error", () => {});
}

/** Raw bytes to a listener; resolves with everything it sent once it closes (or the wait ends). */
export function raw(target: string, chunks: Array<Buffer | string>, waitMs: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = dial(target);
    let got = Buffer.alloc(0);
    let closed = false;
    s.on("data", (d) => (got = Buffer.concat([got, d])));
    s.on("close", () => {
      closed = true;
      clearTimeout(timer);
      resolve({ text: got.toString("latin1"), closed });
    });
    for (const c of chunks) s.write(c);
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ text: got.toString("latin1"), closed });
    }, waitMs);
  });
}

/**
 * Real accepted server-side sockets over loopback, for code that takes what a
 * listener accepts (the connection table). remote, when given, is the address
 * they pretend to come from. close() ends both sides and the server.
 */
export function loopbackSockets(): { accepted(n: number, remote?: string): Promise<net.Socket[]>; close(): void } {
  const servers: net.Server[] = [];
  const sockets: net.Socket[] = [];
  return {
    async accepted(n, remote) {
      const got: net.Socket[] = [];
      const server = net.createServer((s) => got.push(s));
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const port = (server.address() as net.AddressInfo).port;
      for (let i = 0; i < n; i++) sockets.push(net.connect(port, "127.0.0.1").on("error", () => {}));
      while (got.length < n) await new Promise((r) => setTimeout(r, 10));
      for (const s of got) {
        sockets.push(s);
        if (remote) Object.defineProperty(s, "remoteAddress", { value: remote });
      }
      return got;
    },
    close() {
      for (const s of sockets.splice(0)) s.destroy();
      for (const s of servers.splice(0)) s.close();
    },
  };
}

export interface Answer {
  /** "1.1" or "2.0". */
  httpVersion: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** HTTP/2 trailers (gRPC's status when the answer is not trailers-only). */
  trailers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface RequestSpec {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

/** One HTTP/1.1 request on a fresh connection to "host:port" or a unix socket path (node:http, as curl --unix-socket does). */
export function h1Request(target: string, spec: RequestSpec): Promise<Answer> {
  const where = target.startsWith("/") ? { socketPath: target } : hostPort(target);
  return new Promise((resolve, reject) => {
    const req = http.request({ ...where, method: spec.method ?? "GET", path: spec.path, headers: spec.headers, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ httpVersion: res.httpVersion, status: res.statusCode ?? 0, headers: res.headers, trailers: res.trailers, text }));
    });
    req.on("error", reject);
    req.end(spec.body);
  });
}

/** One HTTP/2 (prior knowledge) request on a fresh session to "host:port" or a unix socket path. */
export function h2Request(target: string, spec: RequestSpec): Promise<Answer> {
  const session = target.startsWith("/")
    ? http2.connect("http://localhost", { createConnection: () => dial(target) })
    : http2.connect(`http://${target}`);
  return new Promise<Answer>((resolve, reject) => {
    session.on("error", reject);
    const req = session.request({ ":method": spec.method ?? "GET", ":path": spec.path, ...spec.headers });
    let headers: Answer["headers"] = {};
    let trailers: Answer["trailers"] = {};
    let text = "";
    req.setEncoding("utf8");
    req.on("response", (h) => (headers = h));
    req.on("trailers", (t) => (trailers = t));
    req.on("data", (d) => (text += d));
    req.on("end", () => resolve({ httpVersion: "2.0", status: Number(headers[":status"]), headers, trailers, text }));
    req.on("error", reject);
    req.end(spec.body);
  }).finally(() => session.close());
}
