// Issues 3 and 4 end to end: a real gateway process, fake lnetctl/lctl on PATH,
// fake procfs/sysfs trees, the bundled plugins, real clients.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import fs from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Identity } from "../gen/csi/v1/csi_pb.js";
import { fakeLnet, type FakeLnet, type FakeLnetSpec } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { grpcJsClient, unary } from "./helpers/grpc-js-client.js";
import { readyz, untilReadyz } from "./helpers/readyz.js";
import * as grpc from "@grpc/grpc-js";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../gen/grpc/health/v1/health_pb.js";
import { compileEcho, compileHostile } from "./hostile/build.js";

const BUNDLED = path.join(ROOT, "dist", "plugins");
const NODE_PLUGINS = ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping", "net-interfaces"];
const fixture = (p: string) => fs.readFileSync(path.join(ROOT, "plugins", "fixtures", p), "utf8");

const running: GatewayProcess[] = [];
const nodes: FakeLnet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
  for (const n of nodes.splice(0)) n.cleanup();
});

async function gatewayOn(spec: FakeLnetSpec, extra: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const node = fakeLnet(spec);
  nodes.push(node);
  const plugins = extra.some((a) => a.startsWith("--plugins-dir")) ? [] : [`--plugins-dir=${BUNDLED}`];
  const gw = await startGatewayProcess(
    [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", "--log-level=info", ...plugins, ...extra],
    { env: { ...node.env, ...env } },
  );
  running.push(gw);
  return { node, gw };
}

const until = untilReadyz;

const evaluated = (r: { text: string }) => !r.text.includes("initializing") && NODE_PLUGINS.every((n) => r.text.includes(`]${n} `));

async function probe(gw: GatewayProcess): Promise<{ ready?: boolean }> {
  const client = grpcJsClient(Identity, `unix://${gw.socket}`);
  try {
    return await unary(client, "probe", {});
  } finally {
    client.close();
  }
}

describe("node readiness from the bundled plugins", () => {
  it("a healthy node is ready over every transport, each check ok", async () => {
    const { gw } = await gatewayOn({ base: "healthy" });
    const r = await until(gw, (x) => x.status === 200, "ready");
    for (const n of NODE_PLUGINS) expect(r.text).toContain(`[+]${n} ok`);
    expect((await probe(gw)).ready).toBe(true);
    const connect = createClient(Identity, createConnectTransport({ baseUrl: `http://${gw.http}`, httpVersion: "1.1" }));
    expect((await connect.probe({})).ready).toBe(true);
    expect(await (await fetch(`http://${gw.http}/healthz`)).text()).toBe("ok");

    const json = await (await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } })).json();
    const nets = json.conditions.find((c: { name: string }) => c.name === "lnet-nets");
    expect(nets).toMatchObject({ status: "pass", probe: "readiness", severity: "required", plugin: { name: "lnet-nets" } });
    expect(nets.plugin.sha256).toMatch(/^[0-9a-f]{64}$/);
    for (const k of ["lastTransitionTime", "lastRunTime", "durationMs", "reason", "message"]) expect(nets).toHaveProperty(k);
  });

  it("every real NI down with loopback up is NOT ready (the reference script says ready here)", async () => {
    const { gw } = await gatewayOn({ base: "ni-down" });
    const r = await until(gw, (x) => evaluated(x) && x.status === 503, "not ready");
    expect(r.text).toMatch(/\[-\]lnet-nets failed: NiDown: .*10\.0\.0\.10@tcp/);
    expect(r.text).toMatch(/\[-\]net-interfaces failed: .*eth0 \(down\)/);
    expect(r.text).not.toMatch(/0@lo/);
    expect((await probe(gw)).ready).toBe(false);
    expect((await fetch(`http://${gw.http}/healthz`)).status).toBe(503);
    // Excluding the failing checks for one request makes that request pass, and only that one.
    const failing = [...r.text.matchAll(/\[-\]([a-z0-9-]+) failed/g)].map((m) => m[1]);
    expect((await readyz(gw, `?exclude=${failing.join(",")}`)).status).toBe(200);
    expect((await readyz(gw)).status).toBe(503);
  });

  it("multi-rail with one NI down names that NI", async () => {
    const { gw } = await gatewayOn({ base: "healthy", netShow: { out: fixture("net_show/multi-rail-one-down.yaml") } });
    const r = await until(gw, (x) => evaluated(x) && /\[-\]lnet-nets/.test(x.text), "lnet-nets failing");
    expect(r.text).toMatch(/\[-\]lnet-nets failed: NiDown: /);
    expect(r.status).toBe(503);
  });

  it("a missing lnetctl binary is a failed check naming it, not a crash", async () => {
    const node = fakeLnet({ base: "healthy" });
    nodes.push(node);
    // PATH without the fake tools: nothing named lnetctl or lctl anywhere.
    const emptyBin = tempDir();
    const gw = await startGatewayProcess([`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", `--plugins-dir=${BUNDLED}`], {
      env: { ...node.env, PATH: emptyBin },
    });
    running.push(gw);
    const r = await until(gw, (x) => evaluated(x), "evaluated");
    expect(r.status).toBe(503);
    expect(r.text).toMatch(/\[-\]lnet-nets failed: \w+: .*ENOENT: lnetctl not found on PATH/);
    expect(r.text).toMatch(/\[-\]lnet-nids failed: \w+: .*ENOENT: lctl not found on PATH/);
    expect((await probe(gw)).ready).toBe(false);
  });

  it("missing kernel modules are named; lnet_selftest is not lnet", async () => {
    const { gw } = await gatewayOn({ base: "healthy", modules: fixture("modules/selftest-only.txt") });
    const r = await until(gw, (x) => evaluated(x) && /kernel-modules failed/.test(x.text), "kernel-modules failing");
    expect(r.text).toMatch(/\[-\]kernel-modules failed: \w+: .*\blnet\b/);
  });

  it("recovers when the node heals, and logs each transition once", async () => {
    const { gw, node } = await gatewayOn({ base: "ni-down" });
    await until(gw, (x) => evaluated(x) && x.status === 503, "not ready");
    node.update({
      netShow: { out: fs.readFileSync(path.join(ROOT, "gateway/demo/scenarios/healthy/net_show.out"), "utf8") },
      ping: { out: fs.readFileSync(path.join(ROOT, "gateway/demo/scenarios/healthy/ping.out"), "utf8"), exit: 0 },
      operstate: { eth0: "up\n" },
    });
    fs.rmSync(path.join(node.dir, "ping.err"), { force: true });
    await until(gw, (x) => x.status === 200, "ready after healing", 40_000);
    expect((await probe(gw)).ready).toBe(true);
    const transitions = gw.logs().filter((l) => l.msg === "check status changed" && l.check === "lnet-nets");
    expect(transitions.map((t) => t.to)).toEqual(["fail", "pass"]);
  });
});

describe("Probe never waits on checks", () => {
  it("a thousand concurrent Probes are answered from memory: no extra lnetctl runs", async () => {
    const { gw, node } = await gatewayOn({ base: "healthy" }, ["--check-interval=1h"]);
    await until(gw, (x) => x.status === 200, "ready");
    // Every tool call counts (net show is served from the verbose run, so no one key stands for all).
    const before = node.calls().length;
    expect(before).toBeGreaterThan(0);
    const session = http2.connect("http://localhost", { createConnection: () => net.connect(gw.socket) });
    const one = () =>
      new Promise<string>((resolve, reject) => {
        const s = session.request({ ":method": "POST", ":path": "/csi.v1.Identity/Probe", "content-type": "application/grpc", te: "trailers" });
        const chunks: Buffer[] = [];
        s.on("data", (d: Buffer) => chunks.push(d));
        s.on("close", () => resolve(Buffer.concat(chunks).toString("hex")));
        s.on("error", reject);
        s.end(Buffer.alloc(5));
      });
    const answers = await Promise.all(Array.from({ length: 1000 }, one));
    session.close();
    expect(new Set(answers)).toEqual(new Set(["00000000040a020801"]));
    expect(node.calls().length).toBe(before);
  });

  it("a slow, hanging lnetctl does not slow Probe: it keeps answering (initializing, then not ready)", async () => {
    const { gw, node } = await gatewayOn({ base: "healthy", netShow: { delayMs: 600_000 }, ping: { delayMs: 600_000 } });
    let answered = 0;
    const deadline = Date.now() + 4000;
    while (Date.now() < deadline) {
      const r = await probe(gw);
      expect(r.ready).toBe(false);
      answered++;
    }
    expect(answered).toBeGreaterThan(10);
    // The command timeout fires and the check fails with it, naming the command.
    const r = await until(gw, (x) => /lnet-nets failed/.test(x.text), "lnet-nets timeout", 30_000);
    expect(r.text).toMatch(/ETIMEDOUT: lnetctl net show timed out/);
    expect(node.calls("net_show").length).toBeGreaterThan(0);
  });
});

describe("the plugins directory", () => {
  function pluginDir(names: string[]): string {
    const dir = tempDir("probegate-plugins-");
    for (const n of names) fs.copyFileSync(path.join(BUNDLED, `${n}.wasm`), path.join(dir, `${n}.wasm`));
    return dir;
  }

  it("adds, replaces and removes plugins while serving", async () => {
    const dir = pluginDir(["kernel-modules", "lnet-nets"]);
    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${dir}`]);
    await until(gw, (x) => x.status === 200 && x.text.includes("[+]lnet-nets ok"), "two plugins");

    fs.copyFileSync(path.join(BUNDLED, "lnet-nids.wasm"), path.join(dir, "lnet-nids.wasm"));
    await until(gw, (x) => x.text.includes("[+]lnet-nids ok"), "lnet-nids added");

    // lnet-self-ping needs the NID lnet-nids finds: removing lnet-nids leaves it without its fact.
    fs.copyFileSync(path.join(BUNDLED, "lnet-self-ping.wasm"), path.join(dir, "lnet-self-ping.wasm"));
    await until(gw, (x) => x.text.includes("[+]lnet-self-ping ok"), "self-ping added");
    fs.rmSync(path.join(dir, "lnet-nids.wasm"));
    const r = await until(gw, (x) => !/\]lnet-nids /.test(x.text) && /\[-\]lnet-self-ping/.test(x.text), "lnet-nids removed");
    expect(r.text).toMatch(/lnet\.selfNid/);
    expect(r.status).toBe(503);

    // Replacing a file with something that is not a plugin refuses it; the
    // last good version stays in force (issue 31), still failing, still not ready.
    fs.writeFileSync(path.join(dir, "lnet-self-ping.wasm"), "this is not wasm\n");
    const r2 = await until(gw, (x) => x.text.includes("[!]lnet-self-ping.wasm refused"), "replacement refused");
    expect(r2.text).toMatch(/\[-\]lnet-self-ping failed/);
    expect(r2.text).toContain("stays in force");
    expect(r2.status).toBe(503);
    const metrics = await (await fetch(`http://${gw.http}/metrics`)).text();
    expect(metrics).toMatch(/probegate_plugin_refusals_total\{reason="\w+"\} [1-9]/);
  });

  it("follows a ConfigMap-style ..data symlink swap", async () => {
    const dir = tempDir("probegate-cm-");
    const v1 = path.join(dir, "..2026_11_21_v1");
    const v2 = path.join(dir, "..2026_11_21_v2");
    fs.mkdirSync(v1);
    fs.mkdirSync(v2);
    fs.copyFileSync(path.join(BUNDLED, "kernel-modules.wasm"), path.join(v1, "kernel-modules.wasm"));
    fs.copyFileSync(path.join(BUNDLED, "kernel-modules.wasm"), path.join(v2, "kernel-modules.wasm"));
    fs.copyFileSync(path.join(BUNDLED, "lnet-nids.wasm"), path.join(v2, "lnet-nids.wasm"));
    fs.symlinkSync(path.basename(v1), path.join(dir, "..data"));
    for (const f of ["kernel-modules.wasm", "lnet-nids.wasm"]) fs.symlinkSync(path.join("..data", f), path.join(dir, f));

    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${dir}`]);
    await until(gw, (x) => x.text.includes("[+]kernel-modules ok") && !/\]lnet-nids /.test(x.text), "v1 set");
    // Kubernetes swaps the whole set atomically by renaming a new ..data link over the old one.
    fs.symlinkSync(path.basename(v2), path.join(dir, "..data_tmp"));
    fs.renameSync(path.join(dir, "..data_tmp"), path.join(dir, "..data"));
    await until(gw, (x) => x.text.includes("[+]lnet-nids ok"), "v2 set");
  });

  it("a plugin that loops forever times out, is quarantined, and Probe keeps answering throughout", async () => {
    const dir = pluginDir(["kernel-modules"]);
    fs.writeFileSync(path.join(dir, "loop.wasm"), await compileHostile("loop"));
    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${dir}`, "--plugin-timeout=300ms", "--quarantine-after=2"]);
    let answered = 0;
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      await probe(gw);
      answered++;
    }
    expect(answered).toBeGreaterThan(10);
    const r = await until(gw, (x) => /PluginQuarantined/.test(x.text), "quarantine", 30_000);
    expect(r.status).toBe(503);
    expect(r.text).toContain("[+]kernel-modules ok");
    expect(gw.child.exitCode).toBe(null);
  });
});

describe("liveness checks", () => {
  it("a failing liveness check makes Probe an error, /livez 503 and health NOT_SERVING; Watch sees each change", async () => {
    const dir = tempDir("probegate-liveness-");
    // Its verdict follows <procfs>/modules: "pass" or "fail".
    fs.writeFileSync(path.join(dir, "heartbeat.wasm"), await compileEcho({ name: "heartbeat", sources: ["proc.modules"], probe: "liveness" }));
    // A node needs at least one readiness check to be ready at all (NoChecks otherwise); this one always passes.
    fs.writeFileSync(path.join(dir, "always.wasm"), await compileEcho({ name: "always", sources: [] }));
    const { gw, node } = await gatewayOn({ base: "healthy", modules: "pass" }, [`--plugins-dir=${dir}`]);
    await until(gw, (x) => x.status === 200, "ready");

    const health = grpcJsClient(Health, `unix://${gw.socket}`);
    const seen: number[] = [];
    const watch = health.watch({ service: "liveness" });
    watch.on("data", (m: { status: number }) => seen.push(m.status));
    watch.on("error", () => {});
    const waitSeen = async (n: number) => {
      const start = Date.now();
      while (seen.length < n && Date.now() - start < 20_000) await new Promise((r) => setTimeout(r, 50));
      return seen.slice();
    };
    expect(await waitSeen(1)).toEqual([Status.SERVING]);

    fs.writeFileSync(path.join(node.procfs, "modules"), "fail");
    expect(await waitSeen(2)).toEqual([Status.SERVING, Status.NOT_SERVING]);
    const err = await probe(gw).then(() => undefined, (e: grpc.ServiceError) => e);
    expect(err?.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(err?.details).toMatch(/heartbeat: EchoFail: source said fail/);
    const livez = await fetch(`http://${gw.http}/livez?verbose`);
    expect(livez.status).toBe(503);
    expect(await livez.text()).toContain("[-]heartbeat failed: EchoFail");
    expect((await unary<{ status: number }>(health, "check", { service: "liveness" })).status).toBe(Status.NOT_SERVING);
    expect((await unary<{ status: number }>(health, "check", { service: "readiness" })).status).toBe(Status.NOT_SERVING);

    fs.writeFileSync(path.join(node.procfs, "modules"), "pass");
    expect(await waitSeen(3)).toEqual([Status.SERVING, Status.NOT_SERVING, Status.SERVING]);
    expect((await probe(gw)).ready).toBe(true);
    watch.cancel();
    health.close();
  });
});

describe("controller mode", () => {
  it("runs no node checks and is ready at once", async () => {
    const { gw, node } = await gatewayOn({ base: "lnet-down" }, ["--mode=controller"]);
    const r = await until(gw, (x) => x.status === 200, "ready");
    for (const n of NODE_PLUGINS) expect(r.text).not.toContain(n);
    expect((await probe(gw)).ready).toBe(true);
    expect(node.calls().length).toBe(0);
  });
});

describe("fail closed", () => {
  it("a node with an empty plugin directory is not ready: NoChecks", async () => {
    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${tempDir("probegate-empty-plugins-")}`, "--mode=node"]);
    const r = await until(gw, (x) => x.status === 503 && x.text.includes("NoChecks"), "NoChecks");
    expect(r.text).toMatch(/\[-\]\(no readiness checks\) failed: NoChecks: no readiness check is loaded in /);
    expect((await probe(gw)).ready).toBe(false);
    const json = await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } }).then((x) => x.json());
    expect(json.conditions).toMatchObject([{ reason: "NoChecks", status: "fail", probe: "readiness", severity: "required" }]);
  });

  it("--require-checks: a refused required plugin fails readiness with CheckMissing naming it, and heals when it loads", async () => {
    const dir = tempDir("probegate-required-");
    for (const n of ["kernel-modules", "lnet-nids"]) fs.copyFileSync(path.join(BUNDLED, `${n}.wasm`), path.join(dir, `${n}.wasm`));
    // An ABI mismatch after an upgrade looks like this: a file that does not load.
    fs.writeFileSync(path.join(dir, "lnet-nets.wasm"), Buffer.from("not a wasm module"));
    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${dir}`, "--require-checks=kernel-modules,lnet-nets,lnet-nids"]);
    const r = await until(gw, (x) => x.status === 503 && x.text.includes("CheckMissing") && x.text.includes("kernel-modules"), "CheckMissing");
    expect(r.text).toMatch(/\[-\]lnet-nets failed: CheckMissing: required check lnet-nets is not loaded \(--require-checks\); lnet-nets\.wasm was refused: CompileError/);
    expect(r.text).toMatch(/\[\+\]kernel-modules ok/);
    expect(r.text).not.toContain("NoChecks");
    fs.copyFileSync(path.join(BUNDLED, "lnet-nets.wasm"), path.join(dir, "lnet-nets.wasm"));
    const healed = await until(gw, (x) => x.status === 200 && x.text.includes("lnet-nets ok"), "ready once lnet-nets loads");
    expect(healed.text).toMatch(/\[\+\]lnet-nets ok/);
  });
});
