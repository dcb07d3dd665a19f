// CSI v1.13's two node health answers, built from what the last evaluation left
// in the StorageHealthView. Nothing here runs a check: the engine evaluates in
// the background, and these functions only encode (and cache the encoding of)
// its latest entries, so an answer costs what a Probe answer costs.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  NodeGetCapabilitiesResponseSchema,
  NodeGetStorageHealthResponseSchema,
  NodeGetVolumeHealthResponseSchema,
  NodeServiceCapability_RPC_Type as NodeRpcType,
  StorageHealthErrorType,
  VolumeCapabilitySchema,
  VolumeHealthErrorType,
  type NodeGetStorageHealthResponse_StorageBackendHealth as BackendHealth,
  type VolumeHealth_VolumeHealthEntry as VolumeHealthEntryMsg,
} from "../../gen/csi/v1/csi_pb.js";
import type { StorageHealthEntry, StorageHealthView, VolumeHealthEntry } from "../storage-health/view.js";
import { encodeFrame } from "../transport/grpc-wire.js";

const READ_OPTIONS = { readUnknownFields: false } as const;

function backendEntries(entries: readonly StorageHealthEntry[]) {
  return entries.map((e) => ({ status: StorageHealthErrorType[e.status], reason: e.reason, message: e.message }));
}

function volumeEntries(entries: readonly VolumeHealthEntry[]) {
  return entries.map((e) => ({ status: VolumeHealthErrorType[e.status], reason: e.reason, message: e.message }));
}

export function storageHealthReply(entries: readonly StorageHealthEntry[]): Uint8Array {
  return toBinary(NodeGetStorageHealthResponseSchema, create(NodeGetStorageHealthResponseSchema, { backendHealth: backendEntries(entries) }));
}

export function volumeHealthReply(volumeId: string, entries: readonly VolumeHealthEntry[]): Uint8Array {
  return toBinary(
    NodeGetVolumeHealthResponseSchema,
    create(NodeGetVolumeHealthResponseSchema, { volumeHealth: { volumeId, healthStatuses: volumeEntries(entries) } }),
  );
}

/** The spec's uniqueness key of a backend entry: (status, reason, volume_capability). */
function backendKey(b: BackendHealth): string {
  const cap = b.volumeCapability ? Buffer.from(toBinary(VolumeCapabilitySchema, b.volumeCapability)).toString("base64") : "";
  return `${b.status}\u0000${b.reason}\u0000${cap}`;
}

/**
 * probegate's entries, then the driver's, one per (status, reason,
 * volume_capability) as the spec requires: on a clash probegate's stays. The
 * driver's reply is decoded here; a reply that does not decode costs only the
 * driver's entries (the caller logs it).
 */
export function mergeStorageReply(ours: readonly StorageHealthEntry[], driverReply: Uint8Array): Uint8Array {
  const driver = fromBinary(NodeGetStorageHealthResponseSchema, driverReply, READ_OPTIONS);
  const merged = create(NodeGetStorageHealthResponseSchema, { backendHealth: backendEntries(ours) });
  const seen = new Set(merged.backendHealth.map(backendKey));
  for (const b of driver.backendHealth) {
    const k = backendKey(b);
    if (seen.has(k)) continue;
    seen.add(k);
    merged.backendHealth.push(b);
  }
  return toBinary(NodeGetStorageHealthResponseSchema, merged);
}

/** As mergeStorageReply, for one volume: one entry per (status, reason). The volume_id is the caller's. */
export function mergeVolumeReply(volumeId: string, ours: readonly VolumeHealthEntry[], driverReply: Uint8Array): Uint8Array {
  const driver = fromBinary(NodeGetVolumeHealthResponseSchema, driverReply, READ_OPTIONS);
  const merged = create(NodeGetVolumeHealthResponseSchema, { volumeHealth: { volumeId, healthStatuses: volumeEntries(ours) } });
  const list: VolumeHealthEntryMsg[] = merged.volumeHealth!.healthStatuses;
  const seen = new Set(list.map((e) => `${e.status}\u0000${e.reason}`));
  for (const e of driver.volumeHealth?.healthStatuses ?? []) {
    const k = `${e.status}\u0000${e.reason}`;
    if (seen.has(k)) continue;
    seen.add(k);
    list.push(e);
  }
  return toBinary(NodeGetVolumeHealthResponseSchema, merged);
}

/** Node mode's NodeGetCapabilities: only the two health RPCs, each while its checks are loaded. */
export function healthCapabilitiesReply(view: StorageHealthView): Uint8Array {
  const types: NodeRpcType[] = [];
  if (view.hasVolumeChecks()) types.push(NodeRpcType.GET_VOLUME_HEALTH);
  if (view.hasStorageChecks()) types.push(NodeRpcType.GET_STORAGE_HEALTH);
  return toBinary(
    NodeGetCapabilitiesResponseSchema,
    create(NodeGetCapabilitiesResponseSchema, { capabilities: types.map((type) => ({ type: { case: "rpc" as const, value: { type } } })) }),
  );
}

/** Volumes whose encoded answers are kept; past it the cache starts over (the registry's cap is 1024 by default). */
const MAX_CACHED_VOLUMES = 2048;

/**
 * The encoded (framed) answers, rebuilt only when the view says its entries
 * changed: a call in between is a map lookup and a write.
 */
export class HealthAnswers {
  private storageFrame: Buffer | undefined;
  private readonly volumeFrames = new Map<string, Buffer>();
  private readonly unsubscribe: () => void;

  constructor(private readonly view: StorageHealthView) {
    this.unsubscribe = view.subscribe((change) => {
      if (change.storage) this.storageFrame = undefined;
      for (const id of change.volumes) this.volumeFrames.delete(id);
    });
  }

  storage(): Buffer {
    return (this.storageFrame ??= encodeFrame(storageHealthReply(this.view.storage())));
  }

  /** undefined entries (not evaluated yet) give an empty answer that is not cached: the first evaluation replaces it. */
  volume(volumeId: string): Buffer {
    const cached = this.volumeFrames.get(volumeId);
    if (cached) return cached;
    const entries = this.view.volume(volumeId);
    const frame = encodeFrame(volumeHealthReply(volumeId, entries ?? []));
    if (entries !== undefined) {
      if (this.volumeFrames.size >= MAX_CACHED_VOLUMES) this.volumeFrames.clear();
      this.volumeFrames.set(volumeId, frame);
    }
    return frame;
  }

  close(): void {
    this.unsubscribe();
  }
}
