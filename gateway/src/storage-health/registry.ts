// The volumes probegate evaluates: remembered from the stage and publish
// calls it forwarded, rediscovered from the mount table after a restart, or
// asked about by a health request. Bounded (--max-volumes): a request that
// would grow it past the cap is refused, never an old volume evicted; paths
// are checked as text only (nothing on a call path touches a file system).

import { volumePathProblem } from "../engine/sources/validate.js";
import type { VolumeRef, VolumeRegistry } from "./view.js";

export const DEFAULT_MAX_VOLUMES = 1024;
export const VOLUME_ID_MAX_BYTES = 1024;
/** Publish paths kept per volume (one per pod using it); more are dropped, the oldest first. */
export const MAX_TARGETS_PER_VOLUME = 16;

/** A refused volume: the message is the INVALID_ARGUMENT (or RESOURCE_EXHAUSTED, `limit`) text. */
export class VolumeRefError extends Error {
  constructor(
    message: string,
    readonly kind: "invalid" | "limit",
  ) {
    super(message);
    this.name = "VolumeRefError";
  }
}

/** What the registry holds for one volume. */
export interface KnownVolume {
  volumeId: string;
  /** Publish paths, oldest first, each with its readonly flag when known. */
  targets: Map<string, boolean | undefined>;
  stagingPath?: string;
  origin: VolumeRef["origin"];
}

/** The INVALID_ARGUMENT text for a hostile ref, or "" when it is fine. */
export function volumeRefProblem(ref: { volumeId: string; targetPath?: string; stagingPath?: string }): string {
  if (typeof ref.volumeId !== "string" || ref.volumeId.length === 0) return "volume_id is empty";
  if (Buffer.byteLength(ref.volumeId, "utf8") > VOLUME_ID_MAX_BYTES) return `volume_id is longer than ${VOLUME_ID_MAX_BYTES} bytes`;
  if (ref.volumeId.includes("\0")) return "volume_id contains a NUL byte";
  for (const [field, path] of [
    ["volume path", ref.targetPath],
    ["staging path", ref.stagingPath],
  ] as const) {
    if (path === undefined || path === "") continue;
    const problem = volumePathProblem(path);
    if (problem) return `${field} ${problem}`;
  }
  return "";
}

export interface RegistryEvents {
  /** A volume was added, or got a new path (evaluate it soon). */
  added(volumeId: string): void;
  /** A volume's last path went. */
  removed(volumeId: string): void;
  refused(kind: "invalid" | "limit"): void;
}

export class VolumeBook implements VolumeRegistry {
  private readonly vols = new Map<string, KnownVolume>();

  constructor(
    private readonly maxVolumes: number,
    private readonly events: RegistryEvents,
  ) {}

  size(): number {
    return this.vols.size;
  }

  get(volumeId: string): KnownVolume | undefined {
    return this.vols.get(volumeId);
  }

  all(): KnownVolume[] {
    return [...this.vols.values()];
  }

  remember(ref: VolumeRef): void {
    this.add(ref, true);
  }

  request(ref: VolumeRef): void {
    this.add({ ...ref, origin: "request" }, false);
  }

  forget(volumeId: string, path: { targetPath?: string; stagingPath?: string }): void {
    const v = this.vols.get(volumeId);
    if (!v) return;
    if (path.targetPath) v.targets.delete(path.targetPath);
    if (path.stagingPath && v.stagingPath === path.stagingPath) v.stagingPath = undefined;
    if (v.targets.size === 0 && !v.stagingPath) {
      this.vols.delete(volumeId);
      this.events.removed(volumeId);
    }
  }

  /** Volumes the mount table no longer shows, that only the mount table had shown: gone while probegate was away. */
  dropVanished(present: ReadonlySet<string>): void {
    for (const v of [...this.vols.values()]) {
      if (v.origin !== "mounts") continue;
      const paths = [...v.targets.keys(), ...(v.stagingPath ? [v.stagingPath] : [])];
      if (paths.some((p) => present.has(p))) continue;
      this.vols.delete(v.volumeId);
      this.events.removed(v.volumeId);
    }
  }

  private add(ref: VolumeRef, overwrite: boolean): void {
    const problem = volumeRefProblem(ref);
    if (problem) {
      this.events.refused("invalid");
      throw new VolumeRefError(problem, "invalid");
    }
    let v = this.vols.get(ref.volumeId);
    let grew = false;
    if (!v) {
      if (this.vols.size >= this.maxVolumes) {
        this.events.refused("limit");
        throw new VolumeRefError(
          `probegate already tracks ${this.vols.size} volumes (--max-volumes ${this.maxVolumes}); volume ${JSON.stringify(ref.volumeId.slice(0, 128))} is not evaluated`,
          "limit",
        );
      }
      v = { volumeId: ref.volumeId, targets: new Map(), origin: ref.origin };
      this.vols.set(ref.volumeId, v);
      grew = true;
    } else if (overwrite && ref.origin !== "mounts") {
      // A forwarded call outranks the mount table and a bare request.
      v.origin = ref.origin;
    }
    if (ref.stagingPath && (overwrite || !v.stagingPath) && v.stagingPath !== ref.stagingPath) {
      v.stagingPath = ref.stagingPath;
      grew = true;
    }
    if (ref.targetPath) {
      const had = v.targets.has(ref.targetPath);
      if (!had || (overwrite && ref.readOnly !== undefined && v.targets.get(ref.targetPath) !== ref.readOnly)) {
        if (!had && v.targets.size >= MAX_TARGETS_PER_VOLUME) v.targets.delete(v.targets.keys().next().value!);
        // A request never overrides what a publish said about readonly.
        v.targets.set(ref.targetPath, overwrite ? ref.readOnly : had ? v.targets.get(ref.targetPath) : ref.readOnly);
        grew = true;
      }
    }
    if (grew) this.events.added(ref.volumeId);
  }
}
