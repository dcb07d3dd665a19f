import type { Metrics } from "../observability/metrics.js";
import type { RuntimeOptions } from "./runtime.js";

/** The runtime's hooks that feed the plugin metrics (loads, refusals, quarantines). */
export function pluginMetricHooks(
  m: Metrics,
): Pick<RuntimeOptions, "onLoaded" | "onRefused" | "onQuarantined" | "onQuarantineRetry" | "onQuarantineCount"> {
  return {
    onLoaded: () => m.pluginLoads.inc({ result: "loaded" }),
    onRefused: (r) => {
      m.pluginLoads.inc({ result: "refused" });
      m.pluginRefusals.inc({ reason: r.reason });
    },
    onQuarantined: (p) => m.pluginQuarantines.inc({ plugin: p.manifest.name }),
    onQuarantineRetry: (p) => m.pluginQuarantineRetries.inc({ plugin: p.manifest.name }),
    onQuarantineCount: (n) => m.pluginsQuarantined.set(n),
  };
}
