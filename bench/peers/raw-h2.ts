// Peer (b): the ceiling for Node here. A bare node:http2 server that answers
// Probe (and grpc.health.v1 Check) with canned bytes: no routing framework,
// no protobuf, no per-call objects beyond what node:http2 itself creates.
// Its HTTP/1.1 side answers /healthz and the Connect JSON Probe with canned bodies.
import http from "node:http";
import http2 from "node:http2";
import { HEALTH_CHECK_PATH, PROBE_PATH, PROBE_READY_FRAME, grpcFrame } from "../lib/grpc.js";
import { type PeerOptions, type RunningPeer, listenPromise, removeStaleSocket, runAsMain } from "./common.js";

const SERVING_FRAME = grpcFrame(Buffer.from([0x08, 0x01])); // HealthCheckResponse{status: SERVING}
const RESPONSE_HEADERS = { ":status": 200, "content-type": "application/grpc" };
const OK_TRAILERS = { "grpc-status": "0" };
const CONNECT_JSON = Buffer.from('{"ready":true}');

function onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
  const path = headers[":path"];
  const body = path === PROBE_PATH ? PROBE_READY_FRAME : path === HEALTH_CHECK_PATH ? SERVING_FRAME : null;
  stream.on("error", () => {});
  // Drain the (tiny) request body; answer at once.
  stream.resume();
  if (body === null) {
    stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "12" }, { endStream: true });
    return;
  }
  stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
  stream.once("wantTrailers", () => stream.sendTrailers(OK_TRAILERS));
  stream.end(body);
}

function onHttp1(req: http.IncomingMessage, res: http.ServerResponse): void {
  req.resume();
  if (req.url === "/healthz" && req.method === "GET") {
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8", "content-length": 2 });
    res.end("ok");
  } else if (req.url === PROBE_PATH && req.method === "POST") {
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json", "content-length": CONNECT_JSON.length });
      res.end(CONNECT_JSON);
    });
  } else {
    res.writeHead(404).end();
  }
}

export async function start(o: PeerOptions): Promise<RunningPeer> {
  const servers: { close(cb: () => void): unknown }[] = [];
  const h2 = http2.createServer();
  h2.on("stream", onStream);
  h2.on("sessionError", () => {});
  if (o.socket) {
    removeStaleSocket(o.socket);
    await listenPromise(h2, o.socket);
  }
  const h2tcp = o.port ? http2.createServer() : null;
  if (h2tcp) {
    h2tcp.on("stream", onStream);
    await listenPromise(h2tcp, o.port, "127.0.0.1");
  }
  const h1 = o.httpPort ? http.createServer({ keepAliveTimeout: 60_000 }, onHttp1) : null;
  if (h1) await listenPromise(h1, o.httpPort, "127.0.0.1");
  for (const s of [h2, h2tcp, h1]) if (s) servers.push(s);
  return {
    close: () => Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r())))).then(() => {}),
  };
}

runAsMain(import.meta.url, start);
