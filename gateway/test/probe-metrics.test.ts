// Issue 27: probegate_probe_requests_total counts each answer once, with the
// same labels and result whichever path gave it (the fast path, the Connect
// services, the HTTP endpoints); and the 4 KiB limit on the calls probegate
// answers itself is fixed, whatever --max-request-bytes says.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type http2 from "node:http2";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { Identity } from "../gen/csi/v1/csi_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";

const COUNTER = "probegate_probe_requests_total";

async function expectCode(call: Promise<unknown>, code: Code): Promise<void> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ConnectError.from(err).code).toBe(code);
}

/** The same calls over every path: gRPC on both listeners, Connect, gRPC-Web, the HTTP endpoints. */
async function exercise(gw: GatewayProcess): Promise<void> {
  const unix = createGrpcTransport({
    baseUrl: "http://localhost",
    nodeOptions: { createConnection: () => net.connect(gw.socket) } as http2.SecureClientSessionOptions,
  });
  const tcp = createGrpcTransport({ baseUrl: `http://${gw.http}` });
  const connect = createConnectTransport({ baseUrl: `http://${gw.http}`, httpVersion: "1.1" });
  const web = createGrpcWebTransport({ baseUrl: `http://${gw.http}`, httpVersion: "1.1" });
  for (const t of [unix, tcp, connect, web]) {
    const identity = createClient(Identity, t);
    const health = createClient(Health, t);
    await identity.probe({});
    await health.check({ service: "readiness" });
    await health.check({ service: "" });
    await expectCode(health.check({ service: "no-such" }), Code.NotFound);
  }
  await createClient(Identity, unix).probe({});
  for (const path of ["/healthz", "/readyz", "/livez"]) await (await fetch(`http://${gw.http}${path}`)).text();
}

/** `transport method result` → count, from a scrape. */
async function probeCounts(gw: GatewayProcess): Promise<Record<string, number>> {
  const text = await (await fetch(`http://${gw.http}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${COUNTER}\\{transport="([^"]+)",method="([^"]+)",result="([^"]+)"\\} (\\d+)$`, "gm"))) {
    out[`${m[1]} ${m[2]} ${m[3]}`] = Number(m[4]);
  }
  return out;
}

async function countsFor(args: string[], fastPath: "on" | "off"): Promise<Record<string, number>> {
  const gw = await startGatewayProcess(args, { env: { PROBEGATE_FAST_PATH: fastPath } });
  try {
    // Only what exercise() adds: starting up may have polled /readyz.
    const before = await probeCounts(gw);
    await exercise(gw);
    const after = await probeCounts(gw);
    for (const [k, n] of Object.entries(before)) if ((after[k] -= n) === 0) delete after[k];
    return after;
  } finally {
    expect(await gw.stop()).toBe(0);
  }
}

function expected(ready: boolean): Record<string, number> {
  const r = ready ? "ready" : "not_ready";
  const out: Record<string, number> = {};
  for (const t of ["grpc-unix", "grpc-tcp", "connect", "grpc-web"]) {
    out[`${t} Probe ${r}`] = t === "grpc-unix" ? 2 : 1;
    // "" is liveness (SERVING either way); "readiness" follows readiness; "no-such" is an error.
    out[`${t} Health.Check ready`] = ready ? 2 : 1;
    if (!ready) out[`${t} Health.Check not_ready`] = 1;
    out[`${t} Health.Check error`] = 1;
  }
  out[`http healthz ${r}`] = 1;
  out[`http readyz ${r}`] = 1;
  out["http livez ready"] = 1;
  return out;
}

describe("probegate_probe_requests_total", () => {
  it("counts every answer once, the same with and without the fast path", async () => {
    // Controller mode without checks is ready; node mode without checks is not (NoChecks).
    for (const [args, ready] of [
      [["--mode=controller"], true],
      [["--mode=node", `--plugins-dir=${tempDir("probegate-no-plugins-")}`], false],
    ] as const) {
      const fast = await countsFor([...args], "on");
      const viaConnect = await countsFor([...args], "off");
      expect(fast).toEqual(expected(ready));
      expect(viaConnect).toEqual(fast);
    }
  }, 60_000);
});

describe("the limit on calls probegate answers itself", () => {
  it("stays 4 KiB when --max-request-bytes is lower", async () => {
    for (const fastPath of ["on", "off"] as const) {
      const gw = await startGatewayProcess(["--max-request-bytes=1024"], { env: { PROBEGATE_FAST_PATH: fastPath } });
      try {
        const health = createClient(
          Health,
          createGrpcTransport({
            baseUrl: "http://localhost",
            nodeOptions: { createConnection: () => net.connect(gw.socket) } as http2.SecureClientSessionOptions,
          }),
        );
        // 2,000 bytes: over --max-request-bytes, under the fixed 4 KiB, so it is read and answered.
        await expectCode(health.check({ service: "x".repeat(2000) }), Code.NotFound);
        await expectCode(health.check({ service: "x".repeat(5000) }), Code.ResourceExhausted);
      } finally {
        expect(await gw.stop()).toBe(0);
      }
    }
  }, 30_000);
});
