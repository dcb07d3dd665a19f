// Storage and volume health transitions as Kubernetes Events, for clusters
// without the CSIVolumeHealth gate (the kubelet writes nothing there): on the
// Node for the node's storage entries, on the PersistentVolume for a volume's.
// Only transitions are recorded (an entry appears, an entry clears), never the
// state of a round; repeats of the same transition join one Event (events.ts),
// so a node whose health does not change writes nothing.
import type { HealthEntry, HealthChange, StorageHealthView, VolumeRef } from "../storage-health/view.js";
import { boundMessage } from "./desired.js";
import type { EventObject, PendingEvent } from "./events.js";

export type RecordEvent = (
  type: PendingEvent["type"],
  reason: string,
  note: string,
  opts: { about: EventObject; key: string; action: string },
) => void;

const KUBELET_CSI_TARGET = /\/volumes\/kubernetes\.io~csi\/([^/]+)\/mount\/?$/;
const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const PV_NAME = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);

/**
 * The PersistentVolume's name, from the kubelet's publish (target) path
 * `.../pods/<uid>/volumes/kubernetes.io~csi/<pv-name>/mount`. Staging paths
 * carry a hash, not the name, and inline (ephemeral) volumes have no PV: undefined.
 */
export function pvNameFromTargetPath(targetPath: string | undefined): string | undefined {
  const name = targetPath ? KUBELET_CSI_TARGET.exec(targetPath)?.[1] : undefined;
  return name && name.length <= 253 && PV_NAME.test(name) ? name : undefined;
}

type Seen = Map<string, HealthEntry<string>>;

const keyOf = (e: { status: string; reason: string }) => `${e.status}\u0000${e.reason}`;

function index(entries: readonly HealthEntry<string>[] | undefined): Seen {
  const m: Seen = new Map();
  for (const e of entries ?? []) if (!m.has(keyOf(e))) m.set(keyOf(e), e);
  return m;
}

export class HealthEvents {
  private storage: Seen | undefined;
  private readonly volumes = new Map<string, { seen: Seen; pv: string | undefined }>();
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly view: StorageHealthView,
    private readonly nodeName: string,
    private readonly record: RecordEvent,
  ) {}

  /** Reads the current state (adverse entries already there are recorded: bad news is news after a restart too) and follows changes. */
  start(): void {
    this.unsubscribe = this.view.subscribe((c) => this.onChange(c));
    this.onChange({ storage: true, volumes: this.view.volumes().map((v) => v.ref.volumeId) });
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  onChange(change: HealthChange): void {
    if (change.storage) this.storageChanged();
    if (change.volumes.length > 0) this.volumesChanged(change.volumes);
  }

  private storageChanged(): void {
    const next = index(this.view.storage());
    const prev = this.storage ?? new Map();
    const about: EventObject = { kind: "Node", name: this.nodeName };
    this.diff(prev, next, about, "CheckStorage", (e) => `storage on node ${this.nodeName}${e.fs ? `, file system ${e.fs}` : ""}`);
    this.storage = next;
  }

  private volumesChanged(ids: readonly string[]): void {
    const known = new Map<string, VolumeRef>();
    for (const v of this.view.volumes()) known.set(v.ref.volumeId, v.ref);
    // Volumes the registry forgot (unpublished, unstaged) go without an Event: their health is no longer anyone's concern.
    for (const id of this.volumes.keys()) if (!known.has(id)) this.volumes.delete(id);
    for (const id of ids) {
      const ref = known.get(id);
      const entries = ref ? this.view.volume(id) : undefined;
      const state = this.volumes.get(id);
      // Not evaluated yet says nothing, unless an entry was recorded before
      // (a stuck operation on a volume no check has looked at): that one ended.
      if (!ref || (entries === undefined && !state)) continue;
      const next = index(entries);
      const pv = pvNameFromTargetPath(ref.targetPath) ?? state?.pv;
      if (pv) {
        const about: EventObject = { kind: "PersistentVolume", name: pv };
        this.diff(state?.seen ?? new Map(), next, about, "CheckVolume", (e) => `volume ${id} on node ${this.nodeName}${e.fs ? `, file system ${e.fs}` : ""}`);
      }
      this.volumes.set(id, { seen: next, pv });
    }
  }

  private diff(prev: Seen, next: Seen, about: EventObject, action: string, where: (e: HealthEntry<string>) => string): void {
    for (const [k, e] of next) {
      if (prev.has(k)) continue;
      this.record("Warning", e.reason, boundMessage(`probegate: ${e.status} ${e.reason} (${where(e)}): ${e.message}`), {
        about,
        key: `${k}\u0000${e.fs ?? ""}`,
        action,
      });
    }
    for (const [k, e] of prev) {
      if (next.has(k)) continue;
      this.record("Normal", action === "CheckStorage" ? "StorageHealthRecovered" : "VolumeHealthRecovered", boundMessage(`probegate: ${e.status} ${e.reason} cleared (${where(e)})`), {
        about,
        key: `${k}\u0000${e.fs ?? ""}`,
        action,
      });
    }
  }
}
