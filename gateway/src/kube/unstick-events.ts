// The --unstick=unmount steps as Events: one per step (and per refusal), on
// the Node and, when the path is a kubelet publish path, on its
// PersistentVolume; repeats of the same step on the same path join one Event.
import type { UnstickReport } from "../storage-health/unstick.js";
import { boundMessage } from "./desired.js";
import { pvNameFromTargetPath, type RecordEvent } from "./health-events.js";

/** Where the steps come from: the unsticker (storage-health/unstick.ts). */
export interface UnstickSource {
  subscribe(fn: (r: UnstickReport) => void): () => void;
}

const REASON: Record<string, string> = {
  force: "UnmountForced",
  lazy: "UnmountLazy",
  none: "UnmountNotAttempted",
};

export function recordUnstickEvents(source: UnstickSource, nodeName: string, record: RecordEvent): () => void {
  return source.subscribe((r) => {
    const reason = REASON[r.step ?? "none"]!;
    const note = boundMessage(`probegate: ${r.op.method} of volume ${r.op.volumeId} stuck on node ${nodeName}: ${r.outcome}: ${r.detail}`);
    const key = `${reason}\u0000${r.outcome}\u0000${r.op.path}`;
    record("Warning", reason, note, { about: { kind: "Node", name: nodeName }, key, action: "Unstick" });
    const pv = pvNameFromTargetPath(r.op.path);
    if (pv) record("Warning", reason, note, { about: { kind: "PersistentVolume", name: pv }, key, action: "Unstick" });
  });
}
