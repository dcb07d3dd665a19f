/** The volume a NodeGetVolumeStats call asks about, as volume plugins see it (facts volume.id, volume.path, volume.stagingPath). */
export interface VolumeRef {
  id: string;
  path: string;
  stagingPath?: string;
}

export interface VolumeVerdict {
  abnormal: boolean;
  message: string;
}

/**
 * Runs the `probe:"volume"` plugins against one volume. The check engine
 * implements it; gateway mode only needs these two calls.
 */
export interface VolumeChecker {
  /** Resolves with the combined verdict of every volume plugin; a required plugin's fail makes it abnormal. */
  check(volume: VolumeRef, signal?: AbortSignal): Promise<VolumeVerdict>;
  /** When false, probegate neither advertises VOLUME_CONDITION nor touches NodeGetVolumeStats replies. */
  hasVolumePlugins(): boolean;
}
