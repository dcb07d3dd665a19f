// Peer (a): what a Node developer would write for a CSI Identity server:
// @grpc/grpc-js + @grpc/proto-loader on the CSI proto, Probe returns ready=true.
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { type PeerOptions, type RunningPeer, removeStaleSocket, runAsMain } from "./common.js";

/** proto/ at the repository root, from bench/peers (source) or dist/bench/peers (built). */
function protoRoot(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const up = here.includes(`${path.sep}dist${path.sep}`) ? "../../../proto" : "../../proto";
  return path.resolve(here, up);
}

export async function start(o: PeerOptions): Promise<RunningPeer> {
  const root = protoRoot();
  const def = protoLoader.loadSync(path.join(root, "csi/v1/csi.proto"), {
    includeDirs: [root],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as any;
  const server = new grpc.Server();
  server.addService(pkg.csi.v1.Identity.service, {
    Probe: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { ready: { value: true } }),
    GetPluginInfo: (_call: unknown, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, { name: "bench.probegate.example", vendor_version: "0.0.0", manifest: {} }),
    GetPluginCapabilities: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { capabilities: [] }),
  });
  const bind = (addr: string) =>
    new Promise<void>((resolve, reject) =>
      server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
  if (o.socket) {
    removeStaleSocket(o.socket);
    await bind(`unix://${o.socket}`);
  }
  if (o.port) await bind(`127.0.0.1:${o.port}`);
  return {
    close: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}

runAsMain(import.meta.url, start);
