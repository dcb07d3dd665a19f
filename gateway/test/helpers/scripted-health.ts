// A test implementation of the engine's StorageHealthView and VolumeRegistry
// (storage-health/view.ts): the state a background evaluation would leave,
// set by hand, and a record of what the answering side told the registry.
// It is injected through the same options the real engine's factory feeds
// (startGateway's and createUpstreamGateway's `health`).

import type {
  HealthChange,
  StorageHealthEntry,
  StorageHealthView,
  VolumeHealthEntry,
  VolumeRef,
  VolumeRegistry,
} from "../../src/storage-health/view.js";

const SINCE = "2026-11-26T00:00:00.000Z";

export function storageEntry(status: StorageHealthEntry["status"], reason: string, message: string, fs?: string): StorageHealthEntry {
  return { status, reason, message, check: "lustre-imports", since: SINCE, ...(fs ? { fs } : {}) };
}

export function volumeEntry(status: VolumeHealthEntry["status"], reason: string, message: string): VolumeHealthEntry {
  return { status, reason, message, check: "volume-lustre-health", since: SINCE };
}

export class ScriptedHealth implements StorageHealthView, VolumeRegistry {
  storageChecks = false;
  volumeChecks = false;
  private storageEntries: StorageHealthEntry[] = [];
  private readonly known = new Map<string, { ref: VolumeRef; entries: VolumeHealthEntry[] | undefined }>();
  private readonly listeners = new Set<(c: HealthChange) => void>();
  readonly remembered: VolumeRef[] = [];
  readonly forgotten: Array<{ volumeId: string; path: { targetPath?: string; stagingPath?: string } }> = [];
  readonly requested: VolumeRef[] = [];
  /** Counts every read the answering side makes, to show answers come from the cache. */
  reads = 0;

  get view(): StorageHealthView {
    return this;
  }
  get registry(): VolumeRegistry {
    return this;
  }

  hasStorageChecks(): boolean {
    return this.storageChecks;
  }
  hasVolumeChecks(): boolean {
    return this.volumeChecks;
  }
  storage(): readonly StorageHealthEntry[] {
    this.reads++;
    return this.storageEntries;
  }
  volume(volumeId: string): readonly VolumeHealthEntry[] | undefined {
    this.reads++;
    return this.known.get(volumeId)?.entries;
  }
  volumeCondition(volumeId: string): { abnormal: boolean; message: string } | undefined {
    const entries = this.known.get(volumeId)?.entries;
    if (entries === undefined) return undefined;
    if (entries.length === 0) return { abnormal: false, message: "no adverse condition known" };
    return { abnormal: true, message: entries.map((e) => `${e.reason}: ${e.message}`).join("; ") };
  }
  subscribe(listener: (change: HealthChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  volumes(): ReadonlyArray<{ ref: VolumeRef; entries: readonly VolumeHealthEntry[] | undefined }> {
    return [...this.known.values()];
  }

  remember(ref: VolumeRef): void {
    this.remembered.push(ref);
    if (!this.known.has(ref.volumeId)) this.known.set(ref.volumeId, { ref, entries: undefined });
  }
  forget(volumeId: string, path: { targetPath?: string; stagingPath?: string }): void {
    this.forgotten.push({ volumeId, path });
    this.known.delete(volumeId);
  }
  /** When set, a request for a new volume is refused as the real registry does past --max-volumes. */
  maxVolumes = Infinity;
  /** The contract's refusals: not absolute, "..", over 4096 bytes, NUL. */
  request(ref: VolumeRef): void {
    for (const p of [ref.targetPath, ref.stagingPath]) {
      if (p === undefined) continue;
      if (!p.startsWith("/")) throw new Error(`path ${JSON.stringify(p.slice(0, 64))} is not absolute`);
      if (p.split("/").includes("..")) throw new Error(`path ${JSON.stringify(p.slice(0, 64))} contains ".."`);
      if (Buffer.byteLength(p) > 4096) throw new Error("path is longer than 4096 bytes");
      if (p.includes("\0")) throw new Error("path contains NUL");
    }
    if (!this.known.has(ref.volumeId) && this.known.size >= this.maxVolumes) {
      throw Object.assign(new Error(`probegate already tracks ${this.known.size} volumes`), { kind: "limit" });
    }
    this.requested.push(ref);
    if (!this.known.has(ref.volumeId)) this.known.set(ref.volumeId, { ref, entries: undefined });
  }

  /** What a finished evaluation round does: new entries, then the change notification. */
  setStorage(entries: StorageHealthEntry[]): void {
    this.storageEntries = entries;
    for (const l of this.listeners) l({ storage: true, volumes: [] });
  }
  setVolume(volumeId: string, entries: VolumeHealthEntry[], ref?: Partial<VolumeRef>): void {
    const prev = this.known.get(volumeId);
    this.known.set(volumeId, { ref: { volumeId, origin: "publish", ...prev?.ref, ...ref }, entries });
    for (const l of this.listeners) l({ storage: false, volumes: [volumeId] });
  }
}
