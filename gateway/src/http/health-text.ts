import type { Condition, HealthSnapshot, ProbeKind } from "../engine/state.js";

export interface HealthView {
  ok: boolean;
  lines: string[];
}

/**
 * The verdict of one health endpoint for one request, computed from the
 * snapshot minus the checks the caller excluded (like the Kubernetes API
 * server's ?exclude=), with one verbose line per check.
 */
export function healthView(s: HealthSnapshot, probe: ProbeKind, exclude: ReadonlySet<string>): HealthView {
  const lines: string[] = [];
  if (probe === "readiness" && s.phase === "initializing") lines.push("[-]initializing: first evaluation has not completed");
  for (const c of s.conditions) {
    if (c.probe !== probe) continue;
    if (exclude.has(c.name)) lines.push(`[+]${c.name} excluded: ${c.status === "fail" ? "failed" : "ok"}`);
    else lines.push(conditionLine(c));
  }
  if (probe === "readiness") {
    // An unhealthy node is not ready either: Probe answers with an error then.
    for (const c of s.conditions) {
      if (c.probe === "liveness" && failsLiveness(c) && !exclude.has(c.name)) {
        lines.push(`[-]${c.name} (liveness) failed: ${c.reason}: ${c.message}`);
      }
    }
  }
  for (const r of s.refusals) lines.push(`[!]${r.file} refused: ${r.reason}: ${r.message}`);
  return { ok: verdict(s, probe, exclude), lines };
}

/** Faults of the plugin itself, which the engine keeps from ever failing liveness. */
const PLUGIN_FAULTS = new Set(["PluginTimeout", "PluginTrap", "PluginQuarantined", "PluginBadOutput", "PluginOutputTooLarge", "PluginUnloaded"]);

function failsLiveness(c: Condition): boolean {
  return c.severity === "required" && c.status === "fail" && !PLUGIN_FAULTS.has(c.reason);
}

/**
 * The endpoint's verdict: the snapshot's own (what Probe and gRPC health say)
 * unless the caller excluded checks, which is then recomputed without them.
 */
function verdict(s: HealthSnapshot, probe: ProbeKind, exclude: ReadonlySet<string>): boolean {
  if (exclude.size === 0) return probe === "readiness" ? s.ready && s.live : s.live;
  const counted = s.conditions.filter((c) => !exclude.has(c.name));
  const live = !counted.some((c) => c.probe === "liveness" && failsLiveness(c));
  if (probe === "liveness") return live;
  const readinessFails = counted.some((c) => c.probe === "readiness" && c.severity === "required" && c.status === "fail");
  return s.phase !== "initializing" && live && !readinessFails;
}

function conditionLine(c: Condition): string {
  if (c.status === "pass") return `[+]${c.name} ok`;
  const label = c.status === "warn" ? "warn" : c.severity === "advisory" ? "failed (advisory)" : "failed";
  const mark = c.status === "fail" && c.severity === "required" ? "-" : "+";
  return `[${mark}]${c.name} ${label}: ${c.reason}: ${c.message}`;
}

/** Parses ?exclude=a&exclude=b,c into a set. */
export function excludeSet(values: readonly string[]): Set<string> {
  const set = new Set<string>();
  for (const v of values) for (const name of v.split(",")) if (name.trim()) set.add(name.trim());
  return set;
}
