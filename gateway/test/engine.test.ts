import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ReadinessSnapshot } from "../src/engine/readiness.js";
import { Metrics } from "../src/observability/metrics.js";
import { compileEcho, compileHostile } from "./hostile/build.js";
import { engineOver, FakeCatalog, tempDir, waitFor } from "./hostile/harness.js";

let bin: Record<string, Uint8Array>;

beforeAll(async () => {
  bin = {
    readiness: await compileEcho({ name: "ready-a", sources: ["t.a"] }),
    advisory: await compileEcho({ name: "advice", sources: ["t.b"], severity: "advisory" }),
    liveness: await compileEcho({ name: "alive", sources: ["t.live"], probe: "liveness" }),
    nodeOnly: await compileEcho({ name: "node-only", sources: ["t.a"], modes: ["node"] }),
    volume: await compileEcho({ name: "vol", sources: ["t.a"], probe: "volume" }),
    nids: await compileEcho({ name: "nids", sources: ["t.b"], facts: { "lnet.selfNid": "10.1.0.4@tcp" } }),
    ping: await compileEcho({ name: "ping", sources: ["t.nid"] }),
    loop: await compileHostile("loop"),
    memhog: await compileHostile("memhog"),
  };
}, 120_000);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function engineWith(files: Record<string, Uint8Array>, opts: { mode?: "node" | "controller"; catalog?: FakeCatalog; checkIntervalMs?: number; pluginTimeoutMs?: number } = {}) {
  const dir = await tempDir();
  for (const [name, bytes] of Object.entries(files)) await writeFile(join(dir.path, name), bytes);
  const catalog = opts.catalog ?? new FakeCatalog();
  const metrics = new Metrics({ processMetrics: false });
  const engine = engineOver(dir.path, {
    catalog,
    metrics,
    mode: opts.mode,
    checkIntervalMs: opts.checkIntervalMs,
    runtime: { timeoutMs: opts.pluginTimeoutMs },
  });
  cleanups.push(dir.cleanup, () => engine.stop());
  return { engine, catalog, metrics, dir: dir.path };
}

const cond = (s: ReadinessSnapshot, name: string) => s.conditions.find((c) => c.name === name);

describe("ReadinessEngine semantics", () => {
  it("is initializing (not ready, live) until the first round completes, then ready", async () => {
    const { engine, metrics } = await engineWith({ "a.wasm": bin.readiness! });
    const before = engine.snapshot();
    expect(before).toMatchObject({ phase: "initializing", ready: false, live: true, conditions: [] });
    await engine.start();
    const s = await waitFor(() => engine.snapshot().phase !== "initializing" && engine.snapshot(), "first round");
    expect(s).toMatchObject({ phase: "ready", ready: true, live: true });
    expect(s.generation).toBeGreaterThan(before.generation);
    expect(cond(s, "ready-a")).toMatchObject({
      probe: "readiness",
      severity: "required",
      status: "pass",
      reason: "EchoPass",
      plugin: { name: "ready-a", version: "1.0.0", file: "a.wasm" },
    });
    expect(cond(s, "ready-a")!.plugin.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((await metrics.registry.getSingleMetric("probegate_ready")!.get()).values[0]!.value).toBe(1);
    expect((await metrics.registry.getSingleMetric("probegate_plugins_loaded")!.get()).values[0]!.value).toBe(1);
  });

  it("goes not-ready on a required failure, keeps lastTransitionTime and generation while nothing changes", async () => {
    const { engine, catalog } = await engineWith({ "a.wasm": bin.readiness! });
    const seen: ReadinessSnapshot[] = [];
    engine.subscribe((s) => seen.push(s));
    await engine.start();
    await waitFor(() => engine.snapshot().phase === "ready", "ready");
    catalog.outputs.set("t.a", "fail");
    await engine.refresh();
    const failed = engine.snapshot();
    expect(failed).toMatchObject({ phase: "not-ready", ready: false, live: true });
    expect(cond(failed, "ready-a")).toMatchObject({ status: "fail", reason: "EchoFail", message: "source said fail" });
    const notified = seen.length;
    await engine.refresh();
    const again = engine.snapshot();
    expect(again.generation).toBe(failed.generation);
    expect(seen.length).toBe(notified);
    expect(cond(again, "ready-a")!.lastTransitionTime).toBe(cond(failed, "ready-a")!.lastTransitionTime);
    catalog.outputs.set("t.a", "warn");
    await engine.refresh();
    expect(engine.snapshot()).toMatchObject({ phase: "ready", ready: true });
    expect(cond(engine.snapshot(), "ready-a")!.status).toBe("warn");
    expect(engine.snapshot().generation).toBeGreaterThan(again.generation);
    expect(seen.at(-1)).toBe(engine.snapshot());
  });

  it("reports advisory failures without affecting readiness, and liveness failures as live:false", async () => {
    const catalog = new FakeCatalog();
    catalog.outputs.set("t.b", "fail");
    const { engine, metrics } = await engineWith({ "a.wasm": bin.readiness!, "b.wasm": bin.advisory!, "c.wasm": bin.liveness! }, { catalog });
    await engine.start();
    await waitFor(() => engine.snapshot().phase !== "initializing", "first round");
    let s = engine.snapshot();
    expect(s).toMatchObject({ phase: "ready", ready: true, live: true });
    expect(cond(s, "advice")).toMatchObject({ severity: "advisory", status: "fail" });
    catalog.outputs.set("t.live", "fail");
    await engine.refresh();
    s = engine.snapshot();
    expect(s).toMatchObject({ ready: true, live: false });
    expect(cond(s, "alive")).toMatchObject({ probe: "liveness", status: "fail" });
    expect((await metrics.registry.getSingleMetric("probegate_live")!.get()).values[0]!.value).toBe(0);
    const statusMetric = await metrics.registry.getSingleMetric("probegate_check_status")!.get();
    expect(statusMetric.values.find((v) => v.labels.check === "alive" && v.labels.status === "fail")!.value).toBe(1);
  });

  it("in controller mode skips node-only plugins and is ready as soon as started", async () => {
    const catalog = new FakeCatalog();
    catalog.outputs.set("t.a", "fail");
    const { engine } = await engineWith({ "n.wasm": bin.nodeOnly!, "v.wasm": bin.volume! }, { mode: "controller", catalog });
    await engine.start();
    expect(engine.snapshot()).toMatchObject({ phase: "ready", ready: true, live: true, conditions: [] });
    await engine.refresh();
    expect(engine.snapshot().conditions).toEqual([]);
    expect(catalog.reads).toEqual([]);
    expect(engine.plugins().map((p) => [p.name, p.scheduled])).toEqual([
      ["node-only", false],
      ["vol", false],
    ]);
  });

  it("keeps volume plugins loaded and listed but does not schedule them", async () => {
    const { engine } = await engineWith({ "a.wasm": bin.readiness!, "v.wasm": bin.volume! });
    await engine.start();
    await engine.refresh();
    expect(engine.snapshot().conditions.map((c) => c.name)).toEqual(["ready-a"]);
    expect(engine.plugins().find((p) => p.name === "vol")).toMatchObject({ probe: "volume", scheduled: false });
  });

  it("runs fact-needing plugins in a second stage with facts from the first", async () => {
    const { engine, catalog } = await engineWith({ "nids.wasm": bin.nids!, "ping.wasm": bin.ping! });
    await engine.start();
    await engine.refresh();
    const s = engine.snapshot();
    expect(cond(s, "ping")).toMatchObject({ status: "pass", reason: "GotFact" });
    expect(cond(s, "nids")).toMatchObject({ status: "pass" });
    const pingReads = catalog.reads.filter((r) => r.name === "t.nid");
    expect(pingReads.length).toBeGreaterThan(0);
    for (const r of pingReads) expect(r.facts).toEqual({ "lnet.selfNid": "10.1.0.4@tcp" });
    // Stage one sees no facts.
    for (const r of catalog.reads.filter((r) => r.name === "t.b")) expect(r.facts).toEqual({});
  });

  it("re-evaluates on its interval without being asked", async () => {
    const { engine, catalog } = await engineWith({ "a.wasm": bin.readiness! }, { checkIntervalMs: 50 });
    await engine.start();
    await waitFor(() => engine.snapshot().phase === "ready", "ready");
    catalog.outputs.set("t.a", "fail");
    await waitFor(() => engine.snapshot().phase === "not-ready", "scheduled round picking up the failure");
  });

  it("answers every snapshot() while plugins loop and hog memory, then fails those checks", async () => {
    const { engine } = await engineWith({ "a.wasm": bin.readiness!, "loop.wasm": bin.loop!, "memhog.wasm": bin.memhog! }, { pluginTimeoutMs: 300 });
    await engine.start();
    let answered = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      const s = engine.snapshot();
      if (s && typeof s.ready === "boolean") answered++;
      setImmediate(spin);
    };
    spin();
    const s = await waitFor(() => cond(engine.snapshot(), "loop") && cond(engine.snapshot(), "memhog") && engine.snapshot(), "loop and memhog conditions");
    running = false;
    expect(answered).toBeGreaterThan(100);
    expect(cond(s, "loop")).toMatchObject({ status: "fail", reason: "PluginTimeout" });
    expect(cond(s, "memhog")).toMatchObject({ status: "fail", reason: "PluginMemoryLimit" });
    expect(cond(s, "ready-a")).toMatchObject({ status: "pass" });
    expect(s).toMatchObject({ phase: "not-ready", live: true });
  });
});
