import type { CheckOutcome } from "../runtime/runtime.js";
import type { LoadedPlugin } from "../runtime/types.js";

/** The legacy volume_condition of NodeGetVolumeStats: abnormal or not, and why. */
export interface LegacyVolumeCondition {
  abnormal: boolean;
  message: string;
}

/**
 * One verdict from every volume plugin's outcome. A required plugin's fail
 * makes the volume abnormal; warnings and plugin faults are reported in the
 * message but do not, since they say nothing certain about the volume.
 */
export function combineVolumeOutcomes(plugins: readonly LoadedPlugin[], outcomes: readonly CheckOutcome[]): LegacyVolumeCondition {
  const failing: string[] = [];
  const notes: string[] = [];
  const passes: string[] = [];
  plugins.forEach((p, i) => {
    const o = outcomes[i];
    const name = p.manifest.name;
    if (!o) return;
    if (o.kind === "fault") {
      notes.push(`${name}: check could not run: ${o.reason}: ${o.message}`);
      return;
    }
    const line = `${name}: ${o.output.reason}: ${o.output.message}`;
    if (o.output.status === "fail" && p.manifest.severity === "required") failing.push(line);
    else if (o.output.status === "pass") passes.push(line);
    else notes.push(line);
  });
  if (failing.length > 0) return { abnormal: true, message: [...failing, ...notes].join("; ") };
  return { abnormal: false, message: [...notes, ...passes].join("; ") || "no volume checks ran" };
}
