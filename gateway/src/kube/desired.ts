// The verdict as Kubernetes should see it: Node conditions and whether the
// node is ready. Pure, computed from the engine's snapshot; no API access.
import { failing, type Condition, type ReadinessSnapshot } from "../engine/readiness.js";
import { conditionDomain, qualifiedNameProblem } from "./spec.js";
import { oneLine } from "../support/one-line.js";

export type ConditionStatus = "True" | "False" | "Unknown";

export interface DesiredCondition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

export interface DesiredState {
  /** false until the first check round is done. */
  known: boolean;
  /** ready and live: what the taint and the Events follow. */
  ready: boolean;
  conditions: DesiredCondition[];
  /** With --node-storage-taint: false while storage is unreachable (the taint follows it; `ready` does not). */
  storageOk?: boolean;
  /** Names of the checks that make the node not ready, for Events. */
  failingChecks: string[];
  summary: string;
}

/** Bounded so a chatty check cannot grow the Node object (kubelet's own messages are short). */
export const MESSAGE_LIMIT = 1024;

/** A CamelCase reason Kubernetes accepts (it validates reason loosely; kubectl shows it as a word). */
export function camelReason(s: string, fallback: string): string {
  const words = s.split(/[^A-Za-z0-9]+/).filter(Boolean);
  let out = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join("");
  if (!/^[A-Za-z]/.test(out)) out = fallback;
  return out.slice(0, 128);
}

export function boundMessage(s: string): string {
  return oneLine(s, MESSAGE_LIMIT);
}

/**
 * Only readiness and liveness checks speak for the node here: volume checks
 * are about one volume, and storage checks report through storage health
 * (their Node condition is a later opt-in), never through readiness.
 */
function countsForNode(c: Condition): boolean {
  return c.probe === "readiness" || c.probe === "liveness";
}

function describe(c: Condition): string {
  return c.message ? `${c.name}: ${c.reason} (${c.message})` : `${c.name}: ${c.reason}`;
}

/** Which checks stand in the way: failed liveness first, then failed readiness. */
function blocking(s: ReadinessSnapshot): Condition[] {
  const seen = new Set<string>();
  const out: Condition[] = [];
  for (const c of [...failing(s, "liveness"), ...failing(s, "readiness")]) {
    if (!seen.has(c.name)) {
      seen.add(c.name);
      out.push(c);
    }
  }
  return out;
}

export function desiredState(s: ReadinessSnapshot, conditionType: string | undefined, perCheck: boolean): DesiredState {
  const known = s.phase !== "initializing";
  const ready = known && s.ready && s.live;
  const blockers = blocking(s);
  let main: DesiredCondition;
  if (!known) {
    main = { type: "", status: "Unknown", reason: "Initializing", message: "probegate has not finished its first check round" };
  } else if (ready) {
    const n = s.conditions.filter(countsForNode).length;
    main = { type: "", status: "True", reason: "AllChecksPassed", message: `${n} check${n === 1 ? "" : "s"} passed` };
  } else if (blockers.length > 0) {
    main = {
      type: "",
      status: "False",
      reason: camelReason(blockers[0]!.reason, "CheckFailed"),
      message: boundMessage(blockers.map(describe).join("; ")),
    };
  } else {
    main = { type: "", status: "False", reason: "NotReady", message: "probegate is not ready" };
  }
  const conditions: DesiredCondition[] = [];
  if (conditionType) {
    conditions.push({ ...main, type: conditionType });
    if (perCheck) {
      const domain = conditionDomain(conditionType);
      for (const c of s.conditions) {
        if (!countsForNode(c)) continue;
        const type = `${domain}/${c.name}`;
        // A plugin name the API server would refuse as a condition type is left out, not sent to fail every write.
        if (qualifiedNameProblem(type, true)) continue;
        conditions.push({
          type,
          status: !known ? "Unknown" : c.status === "fail" ? "False" : "True",
          reason: camelReason(c.reason, c.status === "fail" ? "CheckFailed" : "CheckPassed"),
          message: boundMessage(c.message || c.reason),
        });
      }
    }
  }
  return {
    known,
    ready,
    conditions,
    failingChecks: blockers.map((c) => c.name),
    summary: main.message,
  };
}

/** The storage entries that count against a node (opt-in): what makes its file systems unreachable. */
export interface StorageEntryLike {
  status: string;
  reason: string;
  message: string;
  fs?: string;
}

/**
 * The opt-in storage condition (--node-storage-condition), built like the
 * readiness one but from the storage health entries, and never part of the
 * readiness verdict: True while no file system is unreachable (a degraded one
 * is named in the message but keeps True: the node can still serve its
 * volumes), False while one is (the Events carry the checks' messages), Unknown until the first check round.
 */
/**
 * The opt-in operations condition (--node-operations-condition): False while
 * the storage health carries a VolumeOperationsStuck entry (a mount or unmount
 * the driver has not completed for --operation-stuck-after), so an operator or
 * the Node Readiness Controller can cordon or drain the node; True otherwise.
 * Never part of the readiness verdict or Probe. The message is stable (no
 * durations): a changed message is a Node write.
 */
export function operationsCondition(entries: readonly StorageEntryLike[], known: boolean, type: string): DesiredCondition {
  if (!known) return { type, status: "Unknown", reason: "Initializing", message: "probegate has not finished its first check round" };
  const stuck = entries.find((e) => e.reason === OPERATIONS_STUCK_REASON);
  if (stuck) return { type, status: "False", reason: OPERATIONS_STUCK_REASON, message: "a volume operation is stuck on this node (NodeGetStorageHealth, the PV's Events and probegate_volume_operations_stuck name it)" };
  return { type, status: "True", reason: "NoStuckOperations", message: "no volume operation stuck" };
}

/** The storage health reason of stuck operations (storage-health/operations-view.ts). */
const OPERATIONS_STUCK_REASON = "VolumeOperationsStuck";

export function storageCondition(entries: readonly StorageEntryLike[], known: boolean, type: string): DesiredCondition & { ok: boolean } {
  if (!known) {
    return { type, status: "Unknown", reason: "Initializing", message: "probegate has not finished its first check round", ok: true };
  }
  // Status, reason and file system only: a check's message may carry a duration
  // that changes every round, and a changed message is a Node write.
  const describeEntry = (e: StorageEntryLike) => `${e.status} ${e.reason}${e.fs ? ` (${e.fs})` : ""}`;
  const unreachable = entries.filter((e) => e.status === "STORAGE_UNREACHABLE");
  if (unreachable.length > 0) {
    return { type, status: "False", reason: camelReason(unreachable[0]!.reason, "StorageUnreachable"), message: boundMessage(unreachable.map(describeEntry).join("; ")), ok: false };
  }
  if (entries.length > 0) {
    return { type, status: "True", reason: "StorageDegraded", message: boundMessage(entries.map(describeEntry).join("; ")), ok: true };
  }
  return { type, status: "True", reason: "StorageReachable", message: "no storage problem known", ok: true };
}
