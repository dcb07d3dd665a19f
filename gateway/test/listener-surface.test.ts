// Issue 22's smaller network surface: the metrics-only listener, health detail
// for local peers only, and the connection table's admission policy.
import http2 from "node:http2";
import net from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parseConfig, UsageError } from "../src/cli/config.js";
import type { Condition, ReadinessSnapshot, ReadinessProvider } from "../src/engine/readiness.js";
import { createHttpApp } from "../src/http/app.js";
import { Metrics } from "../src/observability/metrics.js";
import { ConnectionTable } from "../src/transport/connection-table.js";
import type { EdgeLimits } from "../src/transport/edge-limits.js";
import { FRAME, PREFACE, ackPings, frame } from "../../bench/soak/h2-wire.js";
import { IMAGE_NODE_FLAGS, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { dial, loopbackSockets, testEdge } from "./helpers/loopback.js";

describe("the listeners of a gateway started with --metrics-endpoint", () => {
  let gp: GatewayProcess;
  let metricsAt = "";
  beforeAll(async () => {
    gp = await startGatewayProcess(["--metrics-endpoint=127.0.0.1:0"], { nodeArgs: IMAGE_NODE_FLAGS });
    metricsAt = String(gp.logs().find((l) => l.msg === "probegate started")!.metricsEndpoint);
  }, 60_000);
  afterAll(() => gp?.stop("SIGKILL"));

  it("serves GET /metrics and nothing else; the HTTP endpoint no longer serves /metrics", async () => {
    const m = await fetch(`http://${metricsAt}/metrics`);
    expect(m.status).toBe(200);
    expect(await m.text()).toMatch(/^probegate_ready /m);
    for (const p of ["/livez", "/readyz", "/healthz", "/readyz?verbose", "/csi.v1.Identity/Probe"]) {
      const r = await fetch(`http://${metricsAt}${p}`);
      expect(r.status, p).toBe(404);
    }
    const connect = await fetch(`http://${metricsAt}/csi.v1.Identity/Probe`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(connect.status).toBe(404);
    expect((await fetch(`http://${gp.http}/metrics`)).status).toBe(404);
    expect((await fetch(`http://${gp.http}/readyz`)).status).toBe(200);
  });

  it("asks an idle HTTP/2 connection that sent frames for one PING ACK, not one per sweep, and keeps it while it answers", async () => {
    const s = dial(gp.http);
    let pings = 0;
    ackPings(s, () => pings++);
    s.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0, Buffer.alloc(0))]));
    await new Promise((r) => setTimeout(r, 3_000));
    expect(pings).toBe(1);
    expect(s.destroyed).toBe(false);
    s.destroy();
  });

  it("speaks no gRPC: an h2c Probe gets no answer but a closed connection", async () => {
    const client = http2.connect(`http://${metricsAt}`);
    const outcome = await new Promise<string>((resolve) => {
      client.on("error", (e) => resolve(`error ${e.message}`));
      const req = client.request({ ":method": "POST", ":path": "/csi.v1.Identity/Probe", "content-type": "application/grpc" });
      req.on("response", (h) => resolve(`answered ${h[":status"]}`));
      req.on("error", (e) => resolve(`error ${e.message}`));
      req.on("close", () => resolve("closed"));
      req.end(Buffer.alloc(5));
    });
    client.destroy();
    expect(outcome).not.toMatch(/^answered 200/);
  });
});

describe("endpoint flags", () => {
  const base = ["--mode=controller"];
  it("accept HOST:PORT, [V6]:PORT and an unbracketed IPv6 address (status.podIP) for --metrics-endpoint", () => {
    expect(parseConfig([...base, "--metrics-endpoint=10.1.2.3:29767"], {}).metricsEndpoint).toMatchObject({ host: "10.1.2.3", port: 29767 });
    expect(parseConfig([...base, "--metrics-endpoint=[fd00::12]:29767"], {}).metricsEndpoint).toMatchObject({ host: "fd00::12", port: 29767 });
    expect(parseConfig([...base, "--metrics-endpoint=fd00::12:29767"], {}).metricsEndpoint).toMatchObject({ host: "fd00::12", port: 29767 });
    expect(parseConfig([...base, "--http-endpoint=fd00::12:29762"], {}).httpEndpoint).toMatchObject({ host: "fd00::12", port: 29762 });
    expect(parseConfig(base, {}).metricsEndpoint).toBeUndefined();
  });

  it("refuse a metrics port that is the HTTP port, a unix metrics endpoint, and a per-address cap above the table", () => {
    expect(() => parseConfig([...base, "--http-endpoint=127.0.0.1:9000", "--metrics-endpoint=127.0.0.1:9000"], {})).toThrow(UsageError);
    expect(() => parseConfig([...base, "--metrics-endpoint=unix:///tmp/m.sock"], {})).toThrow(/must be HOST:PORT/);
    expect(() => parseConfig([...base, "--max-connections=10", "--max-connections-per-address=11"], {})).toThrow(/more than --max-connections/);
    expect(parseConfig([...base, "--max-connections=10"], {}).limits.maxConnectionsPerAddress).toBe(10);
    expect(parseConfig(base, {}).limits.maxConnectionsPerAddress).toBe(64);
  });
});

describe("health detail", () => {
  const now = new Date().toISOString();
  const failing: Condition = {
    name: "lnet-nids", probe: "readiness", severity: "required", status: "fail", reason: "NidMissing",
    message: "10.0.0.4@tcp is not configured", lastTransitionTime: now, lastRunTime: now, durationMs: 1,
    plugin: { name: "lnet-nids", version: "1", sha256: "0", file: "lnet-nids.wasm" }, fault: false,
  };
  const snapshot: ReadinessSnapshot = { phase: "not-ready", ready: false, live: true, conditions: [failing], refusals: [], generation: 1 };
  const readiness: ReadinessProvider = { snapshot: () => snapshot, subscribe: () => () => {} };
  const ask = (app: ReturnType<typeof createHttpApp>, remoteAddress: string | undefined, path: string, accept = "*/*") =>
    app.fetch(new Request(`http://x${path}`, { headers: { accept } }), { incoming: { socket: { remoteAddress } } });

  it("is served to loopback and the unix socket only, unless --readyz-detail-remote", async () => {
    const app = createHttpApp({ readiness, metrics: new Metrics() });
    for (const local of ["127.0.0.1", "::1", "::ffff:127.0.0.1", undefined]) {
      const r = await ask(app, local, "/readyz?verbose");
      expect(r.status).toBe(503);
      expect(await r.text(), String(local)).toContain("10.0.0.4@tcp");
    }
    for (const remote of ["10.0.0.9", "fd00::9", "::ffff:10.0.0.9"]) {
      const verbose = await ask(app, remote, "/readyz?verbose");
      expect(verbose.status).toBe(503);
      expect(await verbose.text()).toBe("not ready");
      const json = await ask(app, remote, "/readyz", "application/json");
      expect(json.status).toBe(503);
      expect(await json.text()).toBe("not ready");
    }
    const open = createHttpApp({ readiness, metrics: new Metrics(), detailRemote: true });
    expect(await (await ask(open, "10.0.0.9", "/readyz?verbose")).text()).toContain("10.0.0.4@tcp");
  });
});

describe("connection table", () => {
  const loopback = loopbackSockets();
  afterEach(() => loopback.close());
  const accepted = loopback.accepted;

  function table(limits: Partial<EdgeLimits>) {
    const { edge, counts } = testEdge(limits);
    return { t: new ConnectionTable(edge.limits, edge, "tcp"), counts };
  }

  it("when full, closes the connection idle the longest; refuses only when every one is busy", async () => {
    const { t, counts } = table({ maxConnections: 3 });
    const [a, b, c, d, e] = await accepted(5);
    const ca = t.accept(a!)!;
    const cb = t.accept(b!)!;
    const cc = t.accept(c!)!;
    t.busy(ca); // a call in progress: never evicted
    cb.idleSince -= 5_000; // idle the longest
    expect(t.accept(d!)).toBeTruthy();
    expect(b!.destroyed).toBe(true);
    expect(a!.destroyed || c!.destroyed).toBe(false);
    expect(counts.get("evicted")).toBe(1);
    t.busy(cc);
    t.busy(t.get(d!)!);
    expect(t.accept(e!)).toBeUndefined();
    expect(e!.destroyed).toBe(true);
    expect(counts.get("connections")).toBe(1);
    t.stop();
  });

  it("evicts a connection that never sent a request before a kept-alive one, even one idle longer", async () => {
    const { t, counts } = table({ maxConnections: 2 });
    const [kept, fresh, next] = await accepted(3);
    const ck = t.accept(kept!)!;
    t.busy(ck);
    t.done(ck); // it made a call: a kept-alive client's connection
    ck.idleSince -= 5_000;
    t.accept(fresh!); // never sent a request (what a flood is made of)
    expect(t.accept(next!)).toBeTruthy();
    expect(fresh!.destroyed).toBe(true);
    expect(kept!.destroyed).toBe(false);
    expect(counts.get("evicted")).toBe(1);
    t.stop();
  });

  it("caps one remote address, evicting its own idle connections first; local peers are not capped", async () => {
    const { t, counts } = table({ maxConnections: 10, maxConnectionsPerAddress: 2 });
    const remote = await accepted(3, "192.0.2.7");
    const other = await accepted(1, "192.0.2.8");
    const local = await accepted(5);
    for (const s of local) expect(t.accept(s)).toBeTruthy();
    const [r1, r2, r3] = remote;
    t.accept(r1!);
    t.busy(t.accept(r2!)!);
    expect(t.accept(r3!)).toBeTruthy(); // r1 (idle) makes room, not a local connection
    expect(r1!.destroyed).toBe(true);
    expect(local.some((s) => s.destroyed)).toBe(false);
    t.busy(t.get(r3!)!);
    const [r4] = await accepted(1, "192.0.2.7");
    expect(t.accept(r4!)).toBeUndefined(); // both of its connections busy
    expect(counts.get("per_address")).toBe(1);
    expect(t.accept(other[0]!)).toBeTruthy();
    t.stop();
  });

  it("shrinks idle and header timeouts past half full, to 1 s when full", async () => {
    const { t } = table({ maxConnections: 4 });
    const s = await accepted(4);
    t.accept(s[0]!);
    t.accept(s[1]!);
    expect(t.timeoutMs(30_000)).toBe(30_000);
    t.accept(s[2]!);
    expect(t.timeoutMs(30_000)).toBe(15_000);
    t.accept(s[3]!);
    expect(t.timeoutMs(30_000)).toBe(1_000);
    expect(t.timeoutMs(500)).toBe(500);
    // A kept connection's floor.
    expect(t.timeoutMs(30_000, 10_000)).toBe(10_000);
    t.stop();
  });
});

describe("connections that send nothing", () => {
  let gp: GatewayProcess;
  beforeAll(async () => {
    gp = await startGatewayProcess(["--header-timeout=1s"], { nodeArgs: IMAGE_NODE_FLAGS });
  }, 60_000);
  afterAll(() => gp?.stop("SIGKILL"));
  const port = () => Number(gp.http.split(":").pop());
  const headerTimeouts = async () => {
    const text = await (await fetch(`http://${gp.http}/metrics`)).text();
    return Number(/^probegate_edge_rejected_total\{reason="header_timeout"\} (\d+)/m.exec(text)?.[1] ?? 0);
  };

  it("are closed at the header timeout without an answer (the protocol is unknown) and counted as header_timeout", async () => {
    const before = await headerTimeouts();
    const got: Buffer[] = [];
    const s = dial(gp.http).on("data", (d) => got.push(d));
    const t0 = Date.now();
    await new Promise((r) => s.once("close", r));
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(Buffer.concat(got).length).toBe(0);
    expect(await headerTimeouts()).toBe(before + 1);
  });

  it("are closed at once when the peer half-closes, on the port and the socket", async () => {
    for (const target of [gp.http, gp.socket]) {
      const s = dial(target);
      s.resume();
      await new Promise((r) => s.once("connect", r));
      const t0 = Date.now();
      s.end();
      await new Promise((r) => s.once("close", r));
      // Well before the 1 s header timeout.
      expect(Date.now() - t0).toBeLessThan(800);
    }
  });
});
