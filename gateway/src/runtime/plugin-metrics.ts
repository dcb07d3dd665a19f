import type { Metrics } from "../observability/metrics.js";
import type { RuntimeOptions } from "./runtime.js";

/**
 * The runtime's hooks that count plugin events (loads, refusals, quarantines).
 * Gauges of the runtime's current state are the check engine's to set, when
 * the set or the quarantine count changes.
 */
export function pluginMetricHooks(m: Metrics): Pick<RuntimeOptions, "onLoaded" | "onRefused" | "onQuarantined" | "onQuarantineRetry"> {
  return {
    onLoaded: () => m.pluginLoads.inc({ result: "loaded" }),
    onRefused: (r) => {
      m.pluginLoads.inc({ result: "refused" });
      m.pluginRefusals.inc({ reason: r.reason });
    },
    onQuarantined: (p) => m.pluginQuarantines.inc({ plugin: p.manifest.name }),
    onQuarantineRetry: (p) => m.pluginQuarantineRetries.inc({ plugin: p.manifest.name }),
  };
}
