import type { Admission } from "./admission.js";
import type { EdgeLimits, EdgeRejection } from "./edge-limits.js";

/** What every listener shares: the limits, the global admission counts, and where refusals are reported. */
export interface Edge {
  limits: EdgeLimits;
  admission: Admission;
  /** Counts (and, rate-limited, logs) a refusal. */
  rejected(reason: EdgeRejection, detail?: Record<string, unknown>): void;
}
