// The smallest guarded change that brings the Node, as last seen, to the
// desired state: the conditions to write or delete and the taint patch. Pure:
// the reporter does the I/O.
import type { JsonPatchOp } from "./client/api.js";
import type { DesiredCondition } from "./desired.js";
import { hasTaint, rfc3339, sameTaint, type NodeCondition, type NodeTaint, type NodeView } from "./node-view.js";
import type { TaintSpec } from "./spec.js";

export interface ConditionPlan {
  /** Full conditions to write (strategic merge by type); empty when nothing is due. */
  write: NodeCondition[];
  /** Types to delete ($patch: delete): per-check conditions of checks that are gone. */
  remove: string[];
  /** When the oldest heartbeat among ours falls due (ms since epoch), for the timer. */
  nextDueMs: number;
}

/**
 * Writes what changed, plus every one of ours whose heartbeat is stale (one
 * write carries all, so heartbeats of several conditions cost one request).
 * lastTransitionTime is kept from the Node while the status is unchanged, so it
 * survives a probegate restart.
 */
export function planConditions(
  view: NodeView,
  desired: readonly DesiredCondition[],
  stale: readonly string[],
  nowMs: number,
  heartbeatMs: number,
): ConditionPlan {
  const now = rfc3339(nowMs);
  const current = new Map(view.conditions.map((c) => [c.type, c]));
  const changed: boolean[] = [];
  let anyDue = false;
  let nextDueMs = Number.POSITIVE_INFINITY;
  for (const d of desired) {
    const c = current.get(d.type);
    const same = c !== undefined && c.status === d.status && c.reason === d.reason && c.message === d.message;
    const beat = c?.lastHeartbeatTime ? Date.parse(c.lastHeartbeatTime) : NaN;
    const due = !same || !Number.isFinite(beat) || nowMs - beat >= heartbeatMs;
    changed.push(due);
    if (due) anyDue = true;
    else nextDueMs = Math.min(nextDueMs, beat + heartbeatMs);
  }
  const remove = stale.filter((t) => current.has(t));
  if (!anyDue) return { write: [], remove, nextDueMs };
  // Once a write is due, refresh every heartbeat in it: the request costs the same.
  const write = desired.map((d) => {
    const c = current.get(d.type);
    const keep = c !== undefined && c.status === d.status && c.lastTransitionTime;
    return {
      type: d.type,
      status: d.status,
      reason: d.reason,
      message: d.message,
      lastHeartbeatTime: now,
      lastTransitionTime: keep ? c.lastTransitionTime! : now,
    };
  });
  return { write, remove, nextDueMs: nowMs + heartbeatMs };
}

/**
 * spec.taints has no merge key: any patch that sets it replaces the whole list.
 * So the new list is derived from the list just read, and the patch first tests
 * that the list is still exactly that: if anyone (the node controller, an
 * operator) changed the taints meanwhile, the API server refuses the patch and
 * the reporter re-reads instead of overwriting their change. With no list yet,
 * the resourceVersion is the guard.
 */
export function planTaint(view: NodeView, spec: TaintSpec, present: boolean, nowMs: number): JsonPatchOp[] | null {
  const has = hasTaint(view, spec);
  if (has === present) return null;
  const before = view.taints;
  let after: NodeTaint[];
  if (present) {
    const t: NodeTaint = { key: spec.key, effect: spec.effect, timeAdded: rfc3339(nowMs) };
    if (spec.value) t.value = spec.value;
    after = [...(before ?? []), t];
  } else {
    after = (before ?? []).filter((t) => !sameTaint(t, spec));
  }
  const guard: JsonPatchOp =
    before === undefined
      ? { op: "test", path: "/metadata/resourceVersion", value: view.resourceVersion }
      : { op: "test", path: "/spec/taints", value: before };
  return [guard, { op: "add", path: "/spec/taints", value: after }];
}
