// A StorageHealthView whose state a test sets, notifying its listeners after
// each change as the engine's does (the engine's own is tested with it).
import type { HealthChange, StorageHealthEntry, StorageHealthView, VolumeHealthEntry, VolumeRef } from "../../src/storage-health/view.js";

/** A health view whose state the test sets; notifies like the engine's: after a change. */
export class TestHealthView implements StorageHealthView {
  private st: StorageHealthEntry[] = [];
  private vols = new Map<string, { ref: VolumeRef; entries: VolumeHealthEntry[] | undefined }>();
  private listeners = new Set<(c: HealthChange) => void>();
  hasStorageChecks = () => true;
  hasVolumeChecks = () => true;
  storage = () => this.st;
  volume = (id: string) => this.vols.get(id)?.entries;
  volumeCondition = () => undefined;
  volumes = () => [...this.vols.values()];
  subscribe(l: (c: HealthChange) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  notify(c: HealthChange): void {
    for (const l of this.listeners) l(c);
  }
  setStorage(entries: Array<Partial<StorageHealthEntry> & Pick<StorageHealthEntry, "status" | "reason">>): void {
    this.st = entries.map((e) => ({ message: `${e.fs ?? "lustrefs"}: ${e.reason}`, check: "lustre-imports", since: new Date().toISOString(), ...e }));
    this.notify({ storage: true, volumes: [] });
  }
  setVolume(ref: VolumeRef, entries: Array<Pick<VolumeHealthEntry, "status" | "reason"> & Partial<VolumeHealthEntry>> | undefined): void {
    this.vols.set(ref.volumeId, { ref, entries: entries?.map((e) => ({ message: `${e.reason} on ${ref.volumeId}`, check: "volume-lustre-health", since: new Date().toISOString(), ...e })) });
    this.notify({ storage: false, volumes: [ref.volumeId] });
  }
  forget(id: string): void {
    this.vols.delete(id);
    this.notify({ storage: false, volumes: [id] });
  }
}

