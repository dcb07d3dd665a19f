// The contract between the check engine (producer) and everything that
// answers health questions (Probe, gRPC health, /healthz, /readyz, /livez).
// Answering must never wait on a check: consumers read the latest snapshot.

import type { Override, ProbeKind, Refusal } from "../runtime/types.js";

// Defined by the runtime, which produces them; part of the snapshot's contract.
export type { Override, ProbeKind, Refusal };

export type CheckStatus = "pass" | "warn" | "fail";
export type Severity = "required" | "advisory";

/** One check's latest state, like a Kubernetes condition. */
export interface Condition {
  name: string;
  probe: ProbeKind;
  severity: Severity;
  status: CheckStatus;
  reason: string;
  message: string;
  /** ISO-8601 time status last changed. */
  lastTransitionTime: string;
  /** ISO-8601 time the check last ran. */
  lastRunTime: string;
  durationMs: number;
  plugin: { name: string; version: string; sha256: string; file: string; dir?: string; config?: { file: string; sha256: string } };
  /**
   * The plugin faulted (timeout, trap, bad output, quarantine) instead of
   * judging, or (liveness) judged only that its tool is missing. A fault
   * fails readiness, also for a liveness check, but never liveness: see judge().
   */
  fault: boolean;
}

export type Phase = "initializing" | "ready" | "not-ready";

export interface ReadinessSnapshot {
  /** initializing until the first evaluation round has completed. */
  phase: Phase;
  /** Probe's ready field; false while initializing. */
  ready: boolean;
  /** false when any liveness check fails: Probe then returns an error. */
  live: boolean;
  conditions: readonly Condition[];
  refusals: readonly Refusal[];
  /** Plugin names a later --plugins-dir overrides (empty with one directory). */
  overrides?: readonly Override[];
  /** Monotonic counter, bumped on every change of ready/live/phase or any condition's status. */
  generation: number;
}

export interface ReadinessProvider {
  snapshot(): ReadinessSnapshot;
  /** Called after every change of generation. Returns an unsubscribe function. */
  subscribe(listener: (s: ReadinessSnapshot) => void): () => void;
}

/**
 * The conditions that make a kind fail, for error messages: required failures,
 * except that a plugin fault never counts against liveness (as in judge()).
 */
export function failing(s: ReadinessSnapshot, probe: ProbeKind): Condition[] {
  return s.conditions.filter((c) =>
    probe === "readiness"
      ? (c.probe === "readiness" && c.severity === "required" && c.status === "fail") || cannotTell(c)
      : c.probe === probe && c.severity === "required" && c.status === "fail" && !(probe === "liveness" && c.fault),
  );
}

/**
 * A required liveness check whose plugin could not judge (quarantined, timed
 * out, trapped, its tool missing). It cannot vouch for the node, so readiness
 * fails; a restart cannot fix it, so liveness does not.
 */
export function cannotTell(c: Condition): boolean {
  return c.probe === "liveness" && c.severity === "required" && c.status === "fail" && c.fault;
}
