// Fail closed on missing checks: a node whose readiness rests on no check at
// all, or on a required check that did not load (an ABI mismatch after an
// upgrade, a file left out of a ConfigMap), must not report ready. The gaps
// become conditions like any other, so /readyz?verbose, JSON, gating and
// Probe's error texts name them without special cases.

import { basename } from "node:path";
import type { TrackedCondition } from "./readiness-verdict.js";
import type { Condition, Refusal } from "./readiness.js";

export const NO_CHECKS = "NoChecks";
export const CHECK_MISSING = "CheckMissing";
/** The condition name NoChecks is reported under (not a valid plugin name, so it cannot clash). */
export const NO_CHECKS_CONDITION = "(no readiness checks)";

export interface CoverageInput {
  mode: "node" | "controller";
  /** Names of the checks the scheduler runs in this mode, with their probe kind. */
  scheduled: ReadonlyArray<{ name: string; probe: string }>;
  refusals: readonly Refusal[];
  required: readonly string[];
  /** Plugins directory, for the message. */
  pluginsDir?: string;
}

/** Key under which synthetic conditions are tracked: never a real plugin key. */
const SYNTHETIC_KEY = "synthetic:";

/**
 * Conditions for what is missing. `since` keeps lastTransitionTime stable
 * across rounds: it maps condition name to when the gap was first seen.
 */
export function coverageGaps(input: CoverageInput, since: Map<string, string>, now: string): TrackedCondition[] {
  const out: TrackedCondition[] = [];
  const names = new Set(input.scheduled.map((s) => s.name));
  for (const name of input.required) {
    if (names.has(name)) continue;
    const refused = input.refusals.filter((r) => basename(r.file).replace(/\.wasm$/, "") === name);
    const why = refused.length
      ? `; ${refused.map((r) => `${basename(r.file)} was refused: ${r.reason}: ${r.message}`).join("; ")}`
      : "";
    out.push(gap(name, CHECK_MISSING, `required check ${name} is not loaded (--require-checks)${why}`, since, now));
  }
  if (input.mode === "node" && !input.scheduled.some((s) => s.probe === "readiness")) {
    const refused = input.refusals.length ? `, ${input.refusals.length} plugin file(s) refused` : "";
    const where = input.pluginsDir ? ` in ${input.pluginsDir}` : "";
    out.push(gap(NO_CHECKS_CONDITION, NO_CHECKS, `no readiness check is loaded${where}${refused}: nothing vouches for this node`, since, now));
  }
  const live = new Set(out.map((t) => t.condition.name));
  for (const k of [...since.keys()]) if (!live.has(k)) since.delete(k);
  return out;
}

function gap(name: string, reason: string, message: string, since: Map<string, string>, now: string): TrackedCondition {
  if (!since.has(name)) since.set(name, now);
  const condition: Condition = {
    name,
    probe: "readiness",
    severity: "required",
    status: "fail",
    reason,
    message,
    lastTransitionTime: since.get(name)!,
    lastRunTime: now,
    durationMs: 0,
    plugin: { name, version: "", sha256: "", file: "" },
    fault: false,
  };
  return { key: `${SYNTHETIC_KEY}${name}`, condition };
}
