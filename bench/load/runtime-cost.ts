// Plugin cost through probegate's own runtime (dist/gateway/src/...), loaded
// dynamically so the bench builds and runs even while those modules change:
//  - sandbox call: a plugin loaded once in the runtime's worker-thread Sandbox,
//    then callCheck() repeatedly (what one check costs the gateway per round);
//  - runPluginOnce: load + one call + teardown (what `probegate plugin test` costs);
//  - ReadinessEngine round with 1, 8 and 32 plugins loaded (copies of the bundled
//    readiness plugins with renamed manifests), sources served from memory.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { allSources, pluginInput } from "../lib/lnet-inputs.js";
import { repoRoot } from "../lib/paths.js";

export interface RuntimeCost {
  available: boolean;
  note: string;
  sandboxCall?: { plugin: string; nis: number; medianUs: number; calls: number }[];
  runPluginOnce?: { plugin: string; nis: number; medianUs: number; calls: number }[];
  engine?: { plugins: number; roundMedianUs: number; rounds: number }[];
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const round = (x: number) => Math.round(x * 10) / 10;
const imp = (rel: string) => import(pathToFileURL(path.join(repoRoot(), "dist/gateway/src", rel)).href);

/**
 * Replaces the plugin's name string (UTF-16LE in the data segment, as AssemblyScript
 * stores string literals) by one of equal length, so copies load under distinct names.
 */
export function renamePlugin(bytes: Uint8Array, name: string, newName: string): Uint8Array | null {
  if (newName.length !== name.length) return null;
  const needle = Buffer.from(name, "utf16le");
  const repl = Buffer.from(newName, "utf16le");
  const buf = Buffer.from(bytes);
  let found = 0;
  for (let at = buf.indexOf(needle); at >= 0; at = buf.indexOf(needle, at + needle.length)) {
    repl.copy(buf, at);
    found++;
  }
  return found ? buf : null;
}

async function timeLoop(budgetMs: number, min: number, fn: () => Promise<unknown>): Promise<{ med: number; n: number }> {
  await fn();
  const times: number[] = [];
  const deadline = performance.now() + budgetMs;
  while (performance.now() < deadline || times.length < min) {
    const t = performance.now();
    await fn();
    times.push((performance.now() - t) * 1000);
  }
  return { med: round(median(times)), n: times.length };
}

export async function measureRuntime(files: string[], budgetMs: number, engineCounts: number[]): Promise<RuntimeCost> {
  const res: RuntimeCost = { available: false, note: "" };
  let rt: any;
  try {
    const [loader, sandbox, inspect, sources] = await Promise.all([
      imp("runtime/loader.js"),
      imp("runtime/sandbox.js"),
      imp("runtime/inspect.js"),
      imp("engine/sources/index.js"),
    ]);
    // Offline tools judge sources against the built-in catalog, as `plugin test` does without --sources.
    rt = { ...loader, ...sandbox, ...inspect, isBuiltinSource: (n: string) => sources.BUILTIN_SOURCE_NAMES.includes(n) };
  } catch (e) {
    res.note = `runtime not built (${(e as Error).message.split("\n")[0]})`;
    return res;
  }
  res.available = true;
  const manifests = new Map<string, any>();
  // 1) steady-state call through the Sandbox
  if (rt.Sandbox && rt.loadPlugin) {
    const { callCheck } = await imp("runtime/check-call.js");
    const sandbox = new rt.Sandbox({});
    res.sandboxCall = [];
    try {
      for (const f of files) {
        const r = await rt.loadPlugin(fs.readFileSync(f), path.basename(f), { sandbox, isKnownSource: rt.isBuiltinSource });
        if (!r.ok) {
          res.note += `${path.basename(f)} refused: ${r.refusal.reason}. `;
          continue;
        }
        manifests.set(f, r.plugin.manifest);
        const m = r.plugin.manifest;
        const input = pluginInput(16, m.sources ?? [], (m.modes ?? ["node"])[0]);
        const t = await timeLoop(budgetMs, 20, () => callCheck(sandbox, r.plugin, input));
        res.sandboxCall.push({ plugin: m.name, nis: 16, medianUs: t.med, calls: t.n });
      }
    } finally {
      await sandbox.close();
    }
  }
  // 2) one-off
  if (rt.runPluginOnce) {
    res.runPluginOnce = [];
    for (const f of files.slice(0, 2)) {
      const m = manifests.get(f);
      if (!m) continue;
      const input = pluginInput(16, m.sources ?? [], (m.modes ?? ["node"])[0]);
      const bytes = fs.readFileSync(f);
      const t = await timeLoop(Math.min(budgetMs, 300), 3, () => rt.runPluginOnce(bytes, input, { isKnownSource: rt.isBuiltinSource }));
      res.runPluginOnce.push({ plugin: m.name, nis: 16, medianUs: t.med, calls: t.n });
    }
  }
  // 3) engine rounds
  try {
    const { ReadinessEngine } = await imp("engine/readiness-engine.js");
    const { PluginRuntime } = await imp("runtime/runtime.js");
    const { createLogger } = await imp("observability/logger.js");
    const { Metrics } = await imp("observability/metrics.js");
    // Readiness rounds as before the health checks: storage and volume plugins are measured per call above.
    const readiness = files.filter((f) => manifests.get(f) && !["volume", "storage"].includes(manifests.get(f).probe ?? "readiness"));
    const sources = allSources(16);
    const catalog = {
      has: (n: string) => n in sources,
      names: () => Object.keys(sources),
      requiredFacts: (n: string) => (n === "lnetctl.ping" ? ["lnet.selfNid"] : n === "sys.net.operstate" ? ["lnet.interfaces"] : []),
      read: async (n: string) => ({ ...(sources as any)[n], fetchedAtMs: Date.now() }),
    };
    res.engine = [];
    for (const k of engineCounts) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pg-bench-engine-"));
      let written = 0;
      for (let i = 0; i < k && readiness.length; i++) {
        const f = readiness[i % readiness.length];
        const name: string = manifests.get(f).name;
        const copy = i < readiness.length ? fs.readFileSync(f) : renamePlugin(fs.readFileSync(f), name, name.slice(0, -2) + i.toString(36).padStart(2, "0"));
        if (!copy) {
          res.note += `cannot rename ${name}. `;
          continue;
        }
        fs.writeFileSync(path.join(dir, `p${i}.wasm`), copy);
        written++;
      }
      const logger = createLogger("silent");
      const runtime = new PluginRuntime({ dir, isKnownSource: catalog.has, logger });
      const engine = new ReadinessEngine({
        mode: "node", catalog, runtime, checkIntervalMs: 3_600_000, logger, metrics: new Metrics({ processMetrics: false }),
      });
      try {
        await engine.start();
        await engine.refresh();
        const loaded = engine.plugins().filter((p: any) => p.scheduled).length;
        const t = await timeLoop(budgetMs, 10, () => engine.refresh());
        res.engine.push({ plugins: loaded, roundMedianUs: t.med, rounds: t.n });
        if (loaded !== written) res.note += `engine: ${written} written, ${loaded} scheduled. `;
      } finally {
        await engine.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } catch (e) {
    res.note += `engine not measured: ${(e as Error).message.split("\n")[0]}. `;
  }
  return res;
}
