// node:http2 keeps a destroyed session's setTimeout() timer armed, and the
// timer holds the session for the whole idle timeout: at the livenessprobe's
// pattern (a new connection per Probe) at 1,000/s on one core that ran the
// image's 48 MiB heap out in 15 s (found by `npm run bench -- --pin`). The edge
// must let a closed connection's session go at once.
import fs from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import v8 from "node:v8";
import vm from "node:vm";
import { afterAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/observability/logger.js";
import { createH2Server } from "../src/transport/h2-server.js";
import { ListenerAdmission } from "../src/transport/listener-admission.js";
import type { StreamRoute } from "../src/transport/stream-route.js";
import { dial, testEdge } from "./helpers/loopback.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-h2-retention-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const answer: StreamRoute = (stream) => {
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
  stream.end(Buffer.from([0, 0, 0, 0, 2, 8, 1]));
  return true;
};

function probeOnce(socketPath: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const client = http2.connect("http://localhost", { createConnection: () => dial(socketPath) });
    client.on("error", reject);
    const req = client.request({ ":method": "POST", ":path": "/csi.v1.Identity/Probe", "content-type": "application/grpc" });
    req.on("error", reject);
    req.resume();
    req.on("close", () => {
      client.destroy();
      resolve();
    });
    req.end(Buffer.alloc(5));
  });
}

describe("HTTP/2 sessions of closed connections", () => {
  it("are not kept alive by the idle timeout once their client has gone", async () => {
    const admission = new ListenerAdmission(testEdge().edge, "unix");
    const { server: h2server, attach, stop } = createH2Server({
      ctx: { listener: "unix", surface: "csi" },
      routes: [answer],
      handler: () => {},
      logger: createLogger("silent"),
      admission,
    });
    // As the CSI listener accepts: into the connection table, then to the HTTP/2 server.
    const server = net.createServer((socket) => {
      const conn = admission.accept(socket);
      if (conn) attach(conn);
    });
    const refs: WeakRef<http2.ServerHttp2Session>[] = [];
    let closed = 0;
    h2server.on("session", (s: http2.ServerHttp2Session) => {
      refs.push(new WeakRef(s));
      s.once("close", () => closed++);
    });
    const socketPath = path.join(dir, "s.sock");
    await new Promise<void>((r) => server.listen(socketPath, r));
    try {
      const N = 200;
      for (let i = 0; i < N; i++) await probeOnce(socketPath);
      for (let i = 0; i < 100 && closed < N; i++) await new Promise((r) => setTimeout(r, 20));
      expect(closed).toBe(N);
      // The default idle timeout is 30 s: a session its timer still held would survive these collections.
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setImmediate(r));
        gc();
      }
      const alive = refs.filter((r) => r.deref() !== undefined).length;
      expect(alive).toBeLessThanOrEqual(2);
    } finally {
      stop();
      admission.stop();
      await new Promise((r) => server.close(r));
    }
  }, 60_000);
});
