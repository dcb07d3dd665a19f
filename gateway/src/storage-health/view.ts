// The contract between the storage and volume health checks (the engine runs
// them in the background) and everything that answers or reports health:
// NodeGetStorageHealth, NodeGetVolumeHealth, the legacy volume_condition,
// /readyz lines, metrics and Events. Like engine/readiness.ts for readiness, answering
// never waits on a check: consumers read what the last evaluation left.

import type { StorageHealthStatus, VolumeHealthStatus } from "../runtime/types.js";

export type { StorageHealthStatus, VolumeHealthStatus };

export interface HealthEntry<S extends string> {
  status: S;
  /** UpperCamelCase, machine-readable. (status, reason) is unique per scope. */
  reason: string;
  /** Single-line, at most 1024 characters. */
  message: string;
  /** The Lustre file system the entry is about, when the plugin named one. */
  fs?: string;
  /** The plugin that reported it. */
  check: string;
  /** ISO-8601 time this (status, reason) was first seen without a gap. */
  since: string;
}

export type StorageHealthEntry = HealthEntry<StorageHealthStatus>;
export type VolumeHealthEntry = HealthEntry<VolumeHealthStatus>;

/** A volume as probegate knows it: from a forwarded call, the mount table, or a health request. */
export interface VolumeRef {
  volumeId: string;
  targetPath?: string;
  stagingPath?: string;
  /** Published read-only (NodePublishVolume's readonly); undefined when unknown. */
  readOnly?: boolean;
  origin: "stage" | "publish" | "mounts" | "request";
}

export interface HealthChange {
  storage: boolean;
  volumes: readonly string[];
}

export interface StorageHealthView {
  /** A probe:"storage" plugin is loaded for this mode (advertise GET_STORAGE_HEALTH). */
  hasStorageChecks(): boolean;
  /** A probe:"volume" plugin is loaded for this mode (advertise GET_VOLUME_HEALTH). */
  hasVolumeChecks(): boolean;
  /** The latest storage entries, de-duplicated; [] means nothing adverse is known. */
  storage(): readonly StorageHealthEntry[];
  /** The latest entries for one volume; undefined while it has not been evaluated. */
  volume(volumeId: string): readonly VolumeHealthEntry[] | undefined;
  /** The legacy NodeGetVolumeStats volume_condition, from memory; undefined while not evaluated. */
  volumeCondition(volumeId: string): { abnormal: boolean; message: string } | undefined;
  /** Called after any change of storage() or of a volume's entries. Returns an unsubscribe function. */
  subscribe(listener: (change: HealthChange) => void): () => void;
  /** Every known volume with its latest entries (bounded by the registry's cap). */
  volumes(): ReadonlyArray<{ ref: VolumeRef; entries: readonly VolumeHealthEntry[] | undefined }>;
}

export interface VolumeRegistry {
  /** A forwarded NodeStageVolume/NodePublishVolume (attempted: CSI allows health calls for failed mounts). */
  remember(ref: VolumeRef): void;
  /** A successful NodeUnstageVolume/NodeUnpublishVolume: drop that path; the volume goes with its last path. */
  forget(volumeId: string, path: { targetPath?: string; stagingPath?: string }): void;
  /**
   * A health request for paths never seen: evaluate from now on (the answer stays
   * empty until the first evaluation). Throws an Error whose message is the
   * INVALID_ARGUMENT text for hostile input (not absolute, "..", too long, NUL).
   */
  request(ref: VolumeRef): void;
}
