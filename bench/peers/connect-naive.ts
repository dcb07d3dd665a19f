// Peer (d, for the profile and as a reference point): the naive Connect server,
// `connectNodeAdapter` on `http2.createServer`, with the generated csi.v1 Identity.
// It serves gRPC, gRPC-Web and Connect on the same handler; HTTP/1.1 side serves
// the Connect JSON Probe and a /healthz fallback.
import http from "node:http";
import http2 from "node:http2";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Identity } from "../../gateway/gen/csi/v1/csi_pb.js";
import { type PeerOptions, type RunningPeer, listenPromise, removeStaleSocket, runAsMain } from "./common.js";

function routes(router: ConnectRouter): void {
  router.service(Identity, {
    probe: () => ({ ready: true }),
    getPluginInfo: () => ({ name: "bench.probegate.example", vendorVersion: "0.0.0", manifest: {} }),
    getPluginCapabilities: () => ({ capabilities: [] }),
  });
}

export async function start(o: PeerOptions): Promise<RunningPeer> {
  const handler = connectNodeAdapter({
    routes,
    fallback: (req, res) => {
      if (req.url === "/healthz") {
        res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
        res.end("ok");
      } else {
        res.writeHead(404);
        res.end();
      }
    },
  });
  const servers: { close(cb: () => void): unknown }[] = [];
  if (o.socket) {
    removeStaleSocket(o.socket);
    const s = http2.createServer(handler);
    await listenPromise(s, o.socket);
    servers.push(s);
  }
  if (o.port) {
    const s = http2.createServer(handler);
    await listenPromise(s, o.port, "127.0.0.1");
    servers.push(s);
  }
  if (o.httpPort) {
    const s = http.createServer({ keepAliveTimeout: 60_000 }, handler);
    await listenPromise(s, o.httpPort, "127.0.0.1");
    servers.push(s);
  }
  return {
    close: () => Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r())))).then(() => {}),
  };
}

runAsMain(import.meta.url, start);
