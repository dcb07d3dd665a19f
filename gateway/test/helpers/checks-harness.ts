// The checks as the gateway wires them (cli/checks.ts), in the test process:
// the real catalog, plugin runtime, readiness engine and storage health
// evaluator, on one registry. Rounds run when the test asks (an hour apart
// otherwise), so a test counts calls round by round.
import type { SourceCatalog } from "../../src/engine/sources/index.js";
import { ReadinessEngine } from "../../src/engine/readiness-engine.js";
import { Metrics } from "../../src/observability/metrics.js";
import { pluginMetricHooks } from "../../src/runtime/plugin-metrics.js";
import { PluginRuntime } from "../../src/runtime/runtime.js";
import { createStorageHealth } from "../../src/storage-health/index.js";
import { silentLogger, waitFor } from "../hostile/harness.js";

/**
 * AssemblyScript a counting test plugin starts with: `calls`, its calls so
 * far (the module instance lives across calls), and `between`, to echo a
 * configuration value from its input.
 */
export const COUNTING_PLUGIN_PRELUDE = `
let calls: i32 = 0;
function between(s: string, start: string, end: string): string {
  const i = s.indexOf(start);
  if (i < 0) return "";
  const j = s.indexOf(end, i + start.length);
  return j < 0 ? "" : s.substring(i + start.length, j);
}
`;

/** A counting plugin's calls, from the message it wrote them into (`calls=N`). */
export const callsIn = (message: string) => Number(/calls=(\d+)/.exec(message)![1]);

/** The value of one series on the registry (0 when absent). */
export async function metricValue(m: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const data = await m.registry.getSingleMetric(name)?.get();
  return data?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val))?.value ?? 0;
}

/**
 * Starts the engine and the evaluator over `pluginsDir` and waits for the
 * first round; `cleanups` gets their stops (and the catalog's).
 */
export async function startChecks(catalog: SourceCatalog, pluginsDir: string, cleanups: Array<() => Promise<void> | void>) {
  const metrics = new Metrics({ processMetrics: false });
  const runtime = new PluginRuntime({ dir: pluginsDir, isKnownSource: (s) => catalog.has(s), logger: silentLogger, ...pluginMetricHooks(metrics) });
  const engine = new ReadinessEngine({ mode: "node", catalog, runtime, checkIntervalMs: 3_600_000, logger: silentLogger, metrics });
  const health = createStorageHealth({ mode: "node", engine, runtime, catalog, logger: silentLogger, metrics });
  cleanups.push(() => catalog.stop(), () => engine.stop(), () => health.stop());
  health.start();
  await engine.start();
  await waitFor(() => engine.snapshot().phase !== "initializing", "first round");
  return { metrics, runtime, engine, health };
}
