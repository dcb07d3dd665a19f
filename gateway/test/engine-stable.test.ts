// Issue 30, round cost: the engine's own rounds (readiness and storage checks)
// keep a check's verdict marked `stable` while everything it reads is equal,
// without building its input or calling the sandbox. On a fake Lustre client
// with the real catalog (fake lctl/lfs on PATH), plugin runtime, engine and
// storage health evaluator. Besides the bundled lustre-imports, a storage
// test plugin counts its own calls (its module instance lives across calls)
// and says so in its message: a message that does not move is a call that
// was not made.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { fakeLustre, type FakeLustreState } from "./helpers/fake-lustre.js";
import { ROOT } from "./helpers/gateway-process.js";
import { callsIn, COUNTING_PLUGIN_PRELUDE, metricValue, startChecks } from "./helpers/checks-harness.js";
import { compileAs } from "./hostile/build.js";
import { silentLogger, waitFor } from "./hostile/harness.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const INSTANCE = "ffff8f0a3b5c9000";

/**
 * probe:"storage" (or another kind) over the state listing. Message `TAG mark=M calls=N`.
 * Stable unless the listing holds DISCONN; bad output (a fault) when it holds
 * RECOVER; an event when it holds EVICTED.
 */
function counterPlugin(tag: string, name = "counter", probe = "storage"): Promise<Uint8Array> {
  const manifest = JSON.stringify({
    abi: 1,
    name,
    version: "1.0.0",
    description: "test: counts its calls",
    sources: ["lctl.import_states"],
    modes: ["node"],
    probe,
    severity: "required",
    config: { mark: { type: "string", default: "a", description: "echoed" } },
  });
  return compileAs(`${COUNTING_PLUGIN_PRELUDE}export function manifest(): string {
  return ${JSON.stringify(manifest)};
}
export function check(input: string): string {
  calls++;
  if (input.includes("RECOVER")) return "not json";
  const msg = ${JSON.stringify(tag)} + " mark=" + between(input, '"mark":"', '"') + " calls=" + calls.toString();
  let out = '{"status":"pass","reason":"Counted","message":"' + msg + '","facts":{}';
  if (input.includes("EVICTED")) out += ',"events":[{"reason":"Seen","fs":"lustrefs"}]';
  if (!input.includes("DISCONN")) out += ',"stable":true';
  return out + "}";
}
`);
}

let counterV1: Uint8Array;
let counterV2: Uint8Array;
/** The same, as a readiness check: the engine keeps any probe kind's stable verdict. */
let readyCounter: Uint8Array;
beforeAll(async () => {
  [counterV1, counterV2, readyCounter] = await Promise.all([counterPlugin("v1"), counterPlugin("v2"), counterPlugin("r", "ready-counter", "readiness")]);
}, 120_000);

function lustre(opts: { ost3?: "DISCONN" | "RECOVER"; evictedAt?: number } = {}): FakeLustreState {
  const now = Math.floor(Date.now() / 1000);
  const history: NonNullable<FakeLustreState["filesystems"][number]["history"]> = {};
  if (opts.ost3) history["OST0003"] = [[now - 3600, "FULL"], [now - 300, opts.ost3]];
  // Evicted and FULL again since: no entry, one event.
  else if (opts.evictedAt) history["OST0003"] = [[now - 3600, "FULL"], [opts.evictedAt, "EVICTED"], [opts.evictedAt, "FULL"]];
  return {
    version: "2.15",
    mgsNid: "10.0.0.2@tcp",
    since: 1764000000,
    filesystems: [
      {
        name: "lustrefs",
        instance: INSTANCE,
        mountpoint: "/mnt/lustre",
        mdts: 1,
        osts: 4,
        ...(opts.ost3 ? { states: { OST0003: opts.ost3 } } : {}),
        ...(Object.keys(history).length ? { history } : {}),
      },
    ],
  };
}

async function setup() {
  const n = fakeLustre({ base: "healthy", lustre: lustre() });
  cleanups.push(() => n.cleanup());
  const pluginsDir = join(n.dir, "storage-plugins");
  mkdirSync(pluginsDir);
  copyFileSync(join(ROOT, "dist/plugins/lustre-imports.wasm"), join(pluginsDir, "lustre-imports.wasm"));
  writeFileSync(join(pluginsDir, "counter.wasm"), counterV1);
  writeFileSync(join(pluginsDir, "ready-counter.wasm"), readyCounter);
  const catalog = await SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silentLogger });
  const { metrics, runtime, engine, health } = await startChecks(catalog, pluginsDir, cleanups);
  await waitFor(() => engine.snapshot().conditions.some((c) => c.name === "counter") && engine.snapshot().conditions.some((c) => c.name === "lustre-imports"), "both checks ran");
  const cond = (name: string) => engine.snapshot().conditions.find((c) => c.name === name)!;
  return {
    n,
    runtime,
    pluginsDir,
    cond,
    storage: () => health.view.storage(),
    /** Past the catalog's command cache (2 s): every round runs the fake lctl anew (new results, same text). */
    round: async () => {
      await new Promise((r) => setTimeout(r, 2100));
      await engine.refresh();
    },
    evaluations: async (check: string) => ({
      run: await metricValue(metrics, "probegate_check_evaluations_total", { check, result: "run" }),
      reused: await metricValue(metrics, "probegate_check_evaluations_total", { check, result: "reused" }),
    }),
    /** Calls timed (the duration histogram's count): reused verdicts add none. */
    timedCalls: async (check: string) => {
      const data = await metrics.registry.getSingleMetric("probegate_check_duration_seconds")?.get();
      return data?.values.find((v) => v.labels.check === check && (v as { metricName?: string }).metricName === "probegate_check_duration_seconds_count")?.value ?? 0;
    },
    evaluationsByStatus: (check: string, reason: string) => metricValue(metrics, "probegate_check_runs_total", { check, reason }),
    events: (check: string, reason: string) => metricValue(metrics, "probegate_storage_events_total", { check, reason }),
  };
}

describe("engine checks with a stable verdict", () => {
  it("are not called while what they read is equal; a changed listing is judged at once, and an eviction is counted", async () => {
    const s = await setup();
    const counter = s.cond("counter");
    const ready = s.cond("ready-counter");
    const imports = s.cond("lustre-imports");
    expect(imports.reason).toBe("ImportsHealthy");
    expect(s.storage()).toEqual([]);
    const lctlBefore = s.n.calls("import_states").length;
    const ev = await s.evaluations("lustre-imports");
    const timed = await s.timedCalls("lustre-imports");
    const runsBefore = await s.evaluationsByStatus("lustre-imports", "ImportsHealthy");

    for (let i = 0; i < 3; i++) await s.round();
    // lctl ran again every round (the listing was read anew, byte for byte the same)...
    expect(s.n.calls("import_states").length).toBeGreaterThanOrEqual(lctlBefore + 3);
    // ...but neither plugin was called: the counter's message still carries its first count.
    expect(s.cond("counter").message).toBe(counter.message);
    expect(s.cond("ready-counter").message).toBe(ready.message);
    expect((await s.evaluations("ready-counter")).reused).toBeGreaterThanOrEqual(3);
    const ev2 = await s.evaluations("lustre-imports");
    expect(ev2.run).toBe(ev.run);
    expect(ev2.reused).toBe(ev.reused + 3);
    expect(await s.timedCalls("lustre-imports")).toBe(timed);
    // Downstream sees the same answer again: an evaluation per round, a new
    // lastRunTime, the same status since the same time.
    expect(await s.evaluationsByStatus("lustre-imports", "ImportsHealthy")).toBe(runsBefore + 3);
    expect(s.cond("lustre-imports").lastTransitionTime).toBe(imports.lastTransitionTime);
    expect(s.cond("lustre-imports").lastRunTime).not.toBe(imports.lastRunTime);
    expect(s.cond("lustre-imports").message).toBe(imports.message);

    // An OST goes DISCONN (300 s ago: beyond the grace): judged in the very next round.
    s.n.setLustre(lustre({ ost3: "DISCONN" }));
    await s.round();
    expect(s.cond("lustre-imports").reason).toBe("OstUnreachable");
    expect(s.storage()).toMatchObject([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable", check: "lustre-imports" }]);
    expect(callsIn(s.cond("counter").message)).toBe(callsIn(counter.message) + 1);
    expect(callsIn(s.cond("ready-counter").message)).toBe(callsIn(ready.message) + 1);
    // Not stable: called every round while it lasts.
    await s.round();
    expect(callsIn(s.cond("counter").message)).toBe(callsIn(counter.message) + 2);

    // Back to FULL with an eviction in the history since the last call: the
    // event is counted although the verdict before was stable and reused.
    expect(await s.events("lustre-imports", "Evicted")).toBe(0);
    // Stamped after the last call's epoch, before the next round's.
    s.n.setLustre(lustre({ evictedAt: Math.floor(Date.now() / 1000) + 1 }));
    await s.round();
    expect(s.cond("lustre-imports").reason).toBe("ImportsHealthy");
    expect(s.storage()).toEqual([]);
    expect(await s.events("lustre-imports", "Evicted")).toBe(1);
    // A verdict with events is never kept: the counter is called each round while it reports one.
    const withEvent = callsIn(s.cond("counter").message);
    await s.round();
    await s.round();
    expect(callsIn(s.cond("counter").message)).toBe(withEvent + 2);
    expect(await s.events("counter", "Seen")).toBe(3);
    // lustre-imports' verdict is stable again (the eviction is before the round): reused, not counted twice.
    const ev3 = await s.evaluations("lustre-imports");
    await s.round();
    expect((await s.evaluations("lustre-imports")).reused).toBe(ev3.reused + 1);
    expect(await s.events("lustre-imports", "Evicted")).toBe(1);
  }, 60_000);

  it("are called again after a new configuration or a new module", async () => {
    const s = await setup();
    const first = s.cond("counter");
    await s.round();
    expect(s.cond("counter").message).toBe(first.message);

    writeFileSync(join(s.pluginsDir, "counter.yaml"), "mark: b\n");
    await s.runtime.rescan();
    await s.round();
    const configured = s.cond("counter").message;
    expect(configured).toMatch(/^v1 mark=b calls=\d+$/);
    await s.round();
    expect(s.cond("counter").message).toBe(configured);

    writeFileSync(join(s.pluginsDir, "counter.wasm"), counterV2);
    await s.runtime.rescan();
    await s.round();
    // A new module instance: its count starts again, then it is kept.
    expect(s.cond("counter").message).toBe("v2 mark=b calls=1");
    await s.round();
    expect(s.cond("counter").message).toBe("v2 mark=b calls=1");
  }, 60_000);

  it("never reuse a fault: a check that faulted is called again every round, and a healed one answers at once", async () => {
    const s = await setup();
    const first = callsIn(s.cond("counter").message);
    s.n.setLustre(lustre({ ost3: "RECOVER" }));
    const before = await s.evaluations("counter");
    await s.round();
    await s.round();
    expect(s.cond("counter")).toMatchObject({ status: "fail", reason: "PluginBadOutput", fault: true });
    const after = await s.evaluations("counter");
    expect(after.run).toBe(before.run + 2);
    expect(after.reused).toBe(before.reused);
    // Healthy listing again: the same text as the stable verdict before the
    // fault, yet the fault was not kept and neither is that verdict: a call.
    s.n.setLustre(lustre());
    await s.round();
    expect(s.cond("counter")).toMatchObject({ status: "pass", reason: "Counted" });
    expect(callsIn(s.cond("counter").message)).toBe(first + 3);
  }, 60_000);
});
