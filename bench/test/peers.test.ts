// The canned peers answer Probe correctly (node:http2 client with full decoding,
// and the raw bench client). No timing assertions.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { decodeProbeReady, parseGrpcFrames, PROBE_READY_FRAME } from "../lib/grpc.js";
import { freePort } from "../lib/net.js";
import { probeNewConnection } from "../load/probe-client.js";
import { rawProbe } from "../load/raw-h2-probe.js";
import { start as startConnect } from "../peers/connect-naive.js";
import { start as startGrpcJs } from "../peers/grpcjs.js";
import { start as startRaw } from "../peers/raw-h2.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pg-bench-test-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("gRPC bytes", () => {
  it("decodes ProbeResponse.ready", () => {
    expect(decodeProbeReady(parseGrpcFrames(PROBE_READY_FRAME)[0])).toBe(true);
    expect(decodeProbeReady(Buffer.from([0x0a, 0x00]))).toBe(false);
    expect(decodeProbeReady(Buffer.alloc(0))).toBeUndefined();
  });
});

for (const [name, start] of [["raw node:http2", startRaw], ["grpc-js", startGrpcJs], ["connect-naive", startConnect]] as const) {
  describe(`peer ${name}`, () => {
    it("answers Probe ready=true on a unix socket and over TCP", async () => {
      const socket = path.join(dir, `${name.replace(/\W/g, "")}.sock`);
      const port = await freePort();
      const peer = await start({ socket, port });
      try {
        expect(await probeNewConnection({ socketPath: socket })).toMatchObject({ ok: true, ready: true, grpcStatus: "0" });
        expect(await rawProbe({ socketPath: socket })).toMatchObject({ ok: true, ready: true });
        expect(await probeNewConnection({ host: "127.0.0.1", port })).toMatchObject({ ok: true, ready: true });
      } finally {
        await peer.close();
      }
    });
  });
}

describe("raw peer HTTP/1.1", () => {
  it("serves /healthz and the Connect JSON Probe", async () => {
    const httpPort = await freePort();
    const peer = await startRaw({ httpPort });
    try {
      const h = await fetch(`http://127.0.0.1:${httpPort}/healthz`);
      expect(h.status).toBe(200);
      expect(await h.text()).toBe("ok");
      const p = await fetch(`http://127.0.0.1:${httpPort}/csi.v1.Identity/Probe`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect(await p.json()).toEqual({ ready: true });
    } finally {
      await peer.close();
    }
  });
});
