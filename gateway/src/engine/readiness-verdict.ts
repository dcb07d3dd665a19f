import { cannotTell, type Condition, type ReadinessSnapshot, type Override, type Phase, type Refusal } from "./readiness.js";

/** A condition plus the plugin key the engine tracks it by. */
export interface TrackedCondition {
  condition: Condition;
  key: string;
}

export interface ReadinessVerdict {
  phase: Phase;
  ready: boolean;
  live: boolean;
}

/**
 * Readiness fails closed: a required readiness check that fails, or whose
 * plugin faults, makes the gateway not ready — a check that cannot run cannot
 * vouch for the node; so does a required liveness check that cannot run. Liveness fails open on faults: live:false makes the CO
 * restart the driver, which cannot fix a broken plugin and would turn one bad
 * plugin rollout into a restart loop on every node.
 */
export function judge(conditions: readonly Condition[], firstRoundDone: boolean): ReadinessVerdict {
  const live = !conditions.some((c) => c.probe === "liveness" && c.severity === "required" && c.status === "fail" && !c.fault);
  if (!firstRoundDone) return { phase: "initializing", ready: false, live };
  const ready = !conditions.some((c) => (c.probe === "readiness" && c.severity === "required" && c.status === "fail") || cannotTell(c));
  return { phase: ready ? "ready" : "not-ready", ready, live };
}

/** What must differ for generation to move: verdict, condition set, statuses, reasons, plugin identity, refusals. */
export function signature(v: ReadinessVerdict, conditions: readonly TrackedCondition[], refusals: readonly Refusal[]): string {
  return JSON.stringify([
    v.phase,
    v.ready,
    v.live,
    conditions.map((t) => [t.condition.name, t.condition.status, t.condition.reason, t.condition.plugin.sha256, t.condition.plugin.config?.sha256 ?? ""]),
    refusals.map((r) => [r.dir ?? "", r.file, r.reason, r.sha256 ?? "", r.reason === "ConfigInvalid" || r.reason === "SourcesInvalid" ? r.message : ""]),
  ]);
}

export function buildSnapshot(
  v: ReadinessVerdict,
  conditions: readonly TrackedCondition[],
  refusals: readonly Refusal[],
  generation: number,
  overrides: readonly Override[] = [],
): ReadinessSnapshot {
  return Object.freeze({
    ...v,
    conditions: Object.freeze(conditions.map((t) => Object.freeze({ ...t.condition, plugin: Object.freeze({ ...t.condition.plugin }) }))),
    refusals: Object.freeze(refusals.map((r) => Object.freeze({ ...r }))),
    overrides: Object.freeze(overrides.map((o) => Object.freeze({ ...o }))),
    generation,
  });
}
