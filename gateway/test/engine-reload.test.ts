import { mkdir, readFile, rename, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ReadinessSnapshot } from "../src/engine/readiness.js";
import { Metrics } from "../src/observability/metrics.js";
import { compileAs, compileEcho, compileHostile } from "./hostile/build.js";
import { engineOver, FakeCatalog, tempDir, waitFor } from "./hostile/harness.js";

let bin: Record<string, Uint8Array>;

beforeAll(async () => {
  bin = {
    a1: await compileEcho({ name: "ready-a", sources: ["t.a"] }),
    a2: await compileEcho({ name: "ready-a", version: "2.0.0", sources: ["t.a"] }),
    b: await compileEcho({ name: "other-b", sources: ["t.b"] }),
    good: await compileEcho({ name: "good" }),
    dupOfGood: await compileEcho({ name: "good", version: "9.9.9" }),
    flaky: await compileHostile("flaky"),
    // Same plugin, different bytes: a new version of flaky.
    flakyRebuilt: await compileAs(`${await readFile(join(import.meta.dirname, "hostile/assembly/flaky.ts"), "utf8")}\nexport const rebuilt: i32 = 2;\n`),
  };
  for (const n of ["loop", "memhog", "trap", "abort", "bigout", "wasi", "noexport", "badmanifest", "unknownsource"]) {
    bin[n] = await compileHostile(n);
  }
}, 120_000);

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function startEngine(
  dir: string,
  opts: { catalog?: FakeCatalog; quarantineAfter?: number; pluginTimeoutMs?: number; watchPollMs?: number; quarantineBackoffMs?: number; quarantineBackoffMaxMs?: number } = {},
) {
  const metrics = new Metrics({ processMetrics: false });
  const engine = engineOver(dir, {
    catalog: opts.catalog ?? new FakeCatalog(),
    metrics,
    runtime: {
      // Generous unless a test is about timeouts: the cores are shared.
      timeoutMs: opts.pluginTimeoutMs ?? 2000,
      quarantineAfter: opts.quarantineAfter,
      quarantineBackoffMs: opts.quarantineBackoffMs,
      quarantineBackoffMaxMs: opts.quarantineBackoffMaxMs,
      pollMs: opts.watchPollMs,
    },
  });
  cleanups.push(() => engine.stop());
  await engine.start();
  return { engine, metrics };
}

async function newDir() {
  const d = await tempDir();
  cleanups.push(d.cleanup);
  return d.path;
}

const cond = (s: ReadinessSnapshot, name: string) => s.conditions.find((c) => c.name === name);

/** probegate_plugin_quarantined{plugin} as the registry holds it (undefined: no series). */
async function quarantinedGauge(metrics: Metrics, plugin: string): Promise<number | undefined> {
  return (await metrics.registry.getSingleMetric("probegate_plugin_quarantined")!.get()).values.find((v) => v.labels.plugin === plugin)?.value;
}

describe("plugin directory", () => {
  it("refuses each hostile file with its reason, runs faulting ones as failed checks, and leaves the good plugin alone", async () => {
    const dir = await newDir();
    for (const n of ["loop", "memhog", "trap", "abort", "bigout", "wasi", "noexport", "badmanifest", "unknownsource"]) {
      await writeFile(join(dir, `${n}.wasm`), bin[n]!);
    }
    await writeFile(join(dir, "good.wasm"), bin.good!);
    await writeFile(join(dir, "zz-dup.wasm"), bin.dupOfGood!);
    await writeFile(join(dir, "truncated.wasm"), bin.good!.subarray(0, 200));
    await writeFile(join(dir, "readme.wasm"), "this is not a module\n");
    await writeFile(join(dir, ".hidden.wasm"), bin.good!);
    await writeFile(join(dir, "notes.txt"), "ignored");
    const { engine, metrics } = await startEngine(dir, { pluginTimeoutMs: 500 });
    const s = await waitFor(() => {
      const s = engine.snapshot();
      return ["loop", "memhog", "trap", "abort", "bigout"].every((n) => cond(s, n)) && s;
    }, "a verdict for every loaded plugin", 20_000);
    const refused = Object.fromEntries(s.refusals.map((r) => [r.file, r.reason]));
    expect(refused).toEqual({
      "badmanifest.wasm": "BadManifest",
      "noexport.wasm": "MissingExport",
      "readme.wasm": "CompileError",
      "truncated.wasm": "CompileError",
      "unknownsource.wasm": "UnknownSource",
      "wasi.wasm": "ForbiddenImport",
      "zz-dup.wasm": "DuplicateName",
    });
    expect(s.refusals.find((r) => r.file === "zz-dup.wasm")!.message).toContain("good.wasm");
    expect(cond(s, "good")).toMatchObject({ status: "pass" });
    expect(cond(s, "loop")).toMatchObject({ status: "fail", reason: "PluginTimeout" });
    expect(cond(s, "memhog")).toMatchObject({ status: "fail", reason: "PluginMemoryLimit" });
    expect(cond(s, "trap")).toMatchObject({ status: "fail", reason: "PluginTrap" });
    expect(cond(s, "abort")).toMatchObject({ status: "fail", reason: "PluginTrap" });
    expect(cond(s, "abort")!.message).toContain("boom from plugin");
    expect(cond(s, "bigout")!.reason).toMatch(/PluginMemoryLimit|PluginOutputTooLarge/);
    const refusalsMetric = await metrics.registry.getSingleMetric("probegate_plugins_refused")!.get();
    expect(refusalsMetric.values[0]!.value).toBe(7);
    // One series per refused file, with its reason, for the alert that names it.
    const perFile = await metrics.registry.getSingleMetric("probegate_plugin_refused")!.get();
    expect(Object.fromEntries(perFile.values.map((v) => [v.labels.file, [v.labels.reason, v.value]]))).toEqual(
      Object.fromEntries(Object.entries(refused).map(([f, r]) => [f, [r, 1]])),
    );
  });

  it("picks up added, replaced and removed files", async () => {
    const dir = await newDir();
    await writeFile(join(dir, "a.wasm"), bin.a1!);
    const { engine } = await startEngine(dir);
    await waitFor(() => cond(engine.snapshot(), "ready-a"), "a loaded");

    await writeFile(join(dir, "b.wasm"), bin.b!);
    await waitFor(() => cond(engine.snapshot(), "other-b"), "b added");

    // Replace by rename, the way tools install files atomically.
    await writeFile(join(dir, ".a.wasm.tmp"), bin.a2!);
    await rename(join(dir, ".a.wasm.tmp"), join(dir, "a.wasm"));
    await waitFor(() => cond(engine.snapshot(), "ready-a")?.plugin.version === "2.0.0", "a replaced");

    await unlink(join(dir, "b.wasm"));
    await waitFor(() => !cond(engine.snapshot(), "other-b"), "b removed");
    expect(engine.snapshot().conditions.map((c) => c.name)).toEqual(["ready-a"]);
  });

  it("follows a ConfigMap-style ..data symlink swap", async () => {
    const dir = await newDir();
    await mkdir(join(dir, "..2026_11_21_01"));
    await writeFile(join(dir, "..2026_11_21_01", "a.wasm"), bin.a1!);
    await symlink("..2026_11_21_01", join(dir, "..data"));
    await symlink("..data/a.wasm", join(dir, "a.wasm"));
    // Long poll: the watcher, not the safety-net poll, must notice the swap.
    const { engine } = await startEngine(dir, { watchPollMs: 60_000 });
    await waitFor(() => cond(engine.snapshot(), "ready-a")?.plugin.version === "1.0.0", "initial version");

    await mkdir(join(dir, "..2026_11_21_02"));
    await writeFile(join(dir, "..2026_11_21_02", "a.wasm"), bin.a2!);
    await writeFile(join(dir, "..2026_11_21_02", "b.wasm"), bin.b!);
    await symlink("..2026_11_21_02", join(dir, "..data_tmp"));
    await rename(join(dir, "..data_tmp"), join(dir, "..data"));
    await symlink("..data/b.wasm", join(dir, "b.wasm"));
    await rm(join(dir, "..2026_11_21_01"), { recursive: true });

    const s = await waitFor(() => {
      const s = engine.snapshot();
      return cond(s, "ready-a")?.plugin.version === "2.0.0" && cond(s, "other-b") && s;
    }, "swapped set");
    expect(cond(s, "ready-a")!.plugin.file).toBe("a.wasm");
    expect(s.refusals).toEqual([]);
  });

  it("starts without the directory and loads it once it appears", async () => {
    const parent = await newDir();
    const dir = join(parent, "plugins");
    const { engine } = await startEngine(dir, { watchPollMs: 100 });
    // Fail closed: a node with no readiness check is not ready (NoChecks), not vacuously ready.
    const none = await waitFor(() => engine.snapshot().phase === "not-ready" && engine.snapshot(), "not ready without plugins");
    expect(none.conditions.map((c) => [c.reason, c.status])).toEqual([["NoChecks", "fail"]]);
    await mkdir(dir);
    await writeFile(join(dir, "a.wasm"), bin.a1!);
    await waitFor(() => cond(engine.snapshot(), "ready-a"), "plugin from the new directory");
    const s = await waitFor(() => engine.snapshot().phase === "ready" && engine.snapshot(), "ready once a check loaded");
    expect(s.conditions.map((c) => c.name)).toEqual(["ready-a"]);
  });

  it("never shows a stall or a failed snapshot while files churn", async () => {
    const dir = await newDir();
    await writeFile(join(dir, "a.wasm"), bin.a1!);
    const { engine } = await startEngine(dir);
    await waitFor(() => engine.snapshot().phase === "ready", "ready");
    let calls = 0;
    let bad = 0;
    let running = true;
    const spin = () => {
      if (!running) return;
      const s = engine.snapshot();
      calls++;
      if (s.phase !== "ready") bad++;
      setImmediate(spin);
    };
    spin();
    for (let i = 0; i < 6; i++) {
      await writeFile(join(dir, ".a.tmp"), i % 2 ? bin.a1! : bin.a2!);
      await rename(join(dir, ".a.tmp"), join(dir, "a.wasm"));
      const want = i % 2 ? "1.0.0" : "2.0.0";
      await waitFor(() => cond(engine.snapshot(), "ready-a")?.plugin.version === want, `swap ${i}`);
    }
    running = false;
    expect(calls).toBeGreaterThan(0);
    expect(bad).toBe(0);
  });
});

describe("quarantine", () => {
  it("quarantines after N consecutive faults and releases when the file changes", async () => {
    const dir = await newDir();
    await writeFile(join(dir, "flaky.wasm"), bin.flaky!);
    const catalog = new FakeCatalog();
    catalog.outputs.set("t.a", "explode");
    const { engine, metrics } = await startEngine(dir, { catalog, quarantineAfter: 3 });
    // Fault 1 (first round) and fault 2 are reported as what they are...
    await waitFor(() => cond(engine.snapshot(), "flaky"), "first verdict");
    await engine.refresh();
    let s = engine.snapshot();
    expect(cond(s, "flaky")).toMatchObject({ status: "fail", reason: "PluginTrap" });
    // ...the third one quarantines the plugin.
    await engine.refresh();
    s = engine.snapshot();
    expect(cond(s, "flaky")).toMatchObject({ status: "fail", reason: "PluginQuarantined" });
    expect(engine.plugins()[0]!.quarantined).toBe(true);
    const q = await metrics.registry.getSingleMetric("probegate_plugin_quarantines_total")!.get();
    expect(q.values.find((v) => v.labels.plugin === "flaky")!.value).toBe(1);
    expect(await quarantinedGauge(metrics, "flaky")).toBe(1);

    // The cause goes away, but a quarantined plugin is not run again...
    catalog.outputs.set("t.a", "fine");
    await engine.refresh();
    expect(cond(engine.snapshot(), "flaky")!.reason).toBe("PluginQuarantined");

    // ...until its file content changes (a new version of the same plugin:
    // another plugin's module in its place would be refused, NameChanged).
    await writeFile(join(dir, "flaky.wasm"), bin.flakyRebuilt!);
    await waitFor(() => cond(engine.snapshot(), "flaky")?.status === "pass", "replacement runs");
    expect(await quarantinedGauge(metrics, "flaky")).toBe(0);
  });

  it("retries a quarantined plugin after a backoff that doubles per failed retry up to the cap, and one good verdict ends it", async () => {
    const dir = await newDir();
    await writeFile(join(dir, "flaky.wasm"), bin.flaky!);
    const catalog = new FakeCatalog();
    catalog.outputs.set("t.a", "explode");
    const base = 300;
    const max = 1200;
    const { engine, metrics } = await startEngine(dir, { catalog, quarantineAfter: 1, quarantineBackoffMs: base, quarantineBackoffMaxMs: max });
    await waitFor(() => cond(engine.snapshot(), "flaky")?.reason === "PluginQuarantined", "quarantined");
    // Each failed retry sets a later retry time; collect them from the messages.
    const retryAts: number[] = [];
    const deadline = Date.now() + 30_000;
    while (retryAts.length < 5 && Date.now() < deadline) {
      await engine.refresh();
      const c = cond(engine.snapshot(), "flaky")!;
      expect(c.reason).toBe("PluginQuarantined");
      const m = /next retry in (\d+)s \(at ([^)]+)\)/.exec(c.message)!;
      expect(Number(m[1])).toBeLessThanOrEqual(Math.ceil(max / 1000));
      const at = Date.parse(m[2]!);
      if (retryAts.at(-1) !== at) retryAts.push(at);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(retryAts.length).toBe(5);
    // A retry runs no earlier than its time, and the next one is set a backoff after it: gaps at least double, up to the cap.
    for (let k = 1; k < retryAts.length; k++) {
      expect(retryAts[k]! - retryAts[k - 1]!).toBeGreaterThanOrEqual(Math.min(base * 2 ** k, max) - 5);
    }
    const retries = await metrics.registry.getSingleMetric("probegate_plugin_quarantine_retries_total")!.get();
    expect(retries.values.find((v) => v.labels.plugin === "flaky")!.value).toBeGreaterThanOrEqual(4);
    expect((await metrics.registry.getSingleMetric("probegate_plugins_quarantined")!.get()).values[0]!.value).toBe(1);

    catalog.outputs.set("t.a", "fine");
    await waitFor(async () => {
      await engine.refresh();
      return cond(engine.snapshot(), "flaky")?.status === "pass";
    }, "released by a good verdict", 20_000);
    expect((await metrics.registry.getSingleMetric("probegate_plugins_quarantined")!.get()).values[0]!.value).toBe(0);
    expect(await quarantinedGauge(metrics, "flaky")).toBe(0);
    expect(engine.plugins()[0]!.quarantined).toBe(false);
  });

  it("resets the fault count after a good verdict", async () => {
    const dir = await newDir();
    await writeFile(join(dir, "flaky.wasm"), bin.flaky!);
    const catalog = new FakeCatalog();
    catalog.outputs.set("t.a", "explode");
    const { engine } = await startEngine(dir, { catalog, quarantineAfter: 2 });
    await waitFor(() => cond(engine.snapshot(), "flaky"), "first verdict");
    catalog.outputs.set("t.a", "fine");
    await engine.refresh();
    catalog.outputs.set("t.a", "explode");
    await engine.refresh();
    expect(cond(engine.snapshot(), "flaky")!.reason).toBe("PluginTrap");
    catalog.outputs.set("t.a", "fine");
    await engine.refresh();
    expect(cond(engine.snapshot(), "flaky")).toMatchObject({ status: "pass", reason: "Fine" });
  });
});
