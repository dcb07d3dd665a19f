// The replies gateway mode rewrites and the requests it reads, as pure
// functions over message bytes. Everything else is relayed without being decoded.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  NodeGetCapabilitiesResponseSchema,
  NodeGetVolumeStatsRequestSchema,
  NodePublishVolumeRequestSchema,
  NodeServiceCapability_RPC_Type as NodeRpcType,
  NodeServiceCapabilitySchema,
  NodeStageVolumeRequestSchema,
  NodeUnpublishVolumeRequestSchema,
  NodeUnstageVolumeRequestSchema,
  VolumeCapability_AccessMode_Mode as AccessMode,
} from "../../gen/csi/v1/csi_pb.js";
import {
  LegacyNodeRpcType,
  NodeGetVolumeStatsResponseSchema as LegacyStatsResponseSchema,
  VolumeConditionSchema,
} from "../../gen/probegate/legacy/v1/volume_condition_pb.js";
import type { VolumeRef as HealthVolumeRef } from "../storage-health/view.js";
import type { LegacyVolumeCondition } from "../storage-health/volume-condition.js";

/** The volume a NodeGetVolumeStats call asks about. */
export interface StatsVolumeRef {
  id: string;
  path: string;
  stagingPath?: string;
}

/** A caller's request: unknown fields are skipped, not kept (each would be an object). */
const READ_OPTIONS = { readUnknownFields: false } as const;

/** Removed from csi.v1 in v1.13; kubelets 1.21-1.36 still look for it before reading volume_condition. */
const VOLUME_CONDITION = LegacyNodeRpcType.VOLUME_CONDITION as number as NodeRpcType;

export interface HealthCapabilities {
  /** The legacy VOLUME_CONDITION (4), for kubelets 1.21-1.36. */
  volumeCondition: boolean;
  volumeHealth: boolean;
  storageHealth: boolean;
}

/**
 * Adds the node capabilities probegate answers for, each unless the driver
 * already has it, and says which health RPCs the driver itself advertised.
 */
export function withHealthCapabilities(
  reply: Uint8Array,
  add: HealthCapabilities,
): { bytes: Uint8Array; driver: { volume: boolean; storage: boolean } } {
  const msg = fromBinary(NodeGetCapabilitiesResponseSchema, reply);
  const has = new Set(msg.capabilities.map((c) => (c.type.case === "rpc" ? c.type.value.type : -1)));
  const driver = { volume: has.has(NodeRpcType.GET_VOLUME_HEALTH), storage: has.has(NodeRpcType.GET_STORAGE_HEALTH) };
  const wanted: NodeRpcType[] = [];
  if (add.volumeCondition) wanted.push(VOLUME_CONDITION);
  if (add.volumeHealth) wanted.push(NodeRpcType.GET_VOLUME_HEALTH);
  if (add.storageHealth) wanted.push(NodeRpcType.GET_STORAGE_HEALTH);
  const missing = wanted.filter((t) => !has.has(t));
  if (missing.length === 0) return { bytes: reply, driver };
  for (const type of missing) msg.capabilities.push(create(NodeServiceCapabilitySchema, { type: { case: "rpc", value: { type } } }));
  return { bytes: toBinary(NodeGetCapabilitiesResponseSchema, msg), driver };
}

/** Which health RPCs a NodeGetCapabilities reply advertises. */
export function advertisedHealth(reply: Uint8Array): { volume: boolean; storage: boolean } {
  return withHealthCapabilities(reply, { volumeCondition: false, volumeHealth: false, storageHealth: false }).driver;
}

export function volumeRefFromRequest(request: Uint8Array): StatsVolumeRef | undefined {
  const req = fromBinary(NodeGetVolumeStatsRequestSchema, request, READ_OPTIONS);
  if (req.volumeId === "") return undefined;
  return { id: req.volumeId, path: req.volumePath, ...(req.stagingTargetPath ? { stagingPath: req.stagingTargetPath } : {}) };
}

const READ_ONLY_MODES = new Set([AccessMode.SINGLE_NODE_READER_ONLY, AccessMode.MULTI_NODE_READER_ONLY]);

/** The volume a forwarded NodeStageVolume/NodePublishVolume names, for the volume registry; undefined without a volume_id. */
export function mountedVolumeRef(kind: "stage" | "publish", request: Uint8Array): HealthVolumeRef | undefined {
  if (kind === "stage") {
    const req = fromBinary(NodeStageVolumeRequestSchema, request, READ_OPTIONS);
    if (req.volumeId === "") return undefined;
    return { volumeId: req.volumeId, ...(req.stagingTargetPath ? { stagingPath: req.stagingTargetPath } : {}), origin: "stage" };
  }
  const req = fromBinary(NodePublishVolumeRequestSchema, request, READ_OPTIONS);
  if (req.volumeId === "") return undefined;
  const mode = req.volumeCapability?.accessMode?.mode;
  return {
    volumeId: req.volumeId,
    ...(req.targetPath ? { targetPath: req.targetPath } : {}),
    ...(req.stagingTargetPath ? { stagingPath: req.stagingTargetPath } : {}),
    readOnly: req.readonly || (mode !== undefined && READ_ONLY_MODES.has(mode)),
    origin: "publish",
  };
}

/** The path a successful NodeUnstageVolume/NodeUnpublishVolume released. */
export function releasedVolume(
  kind: "unstage" | "unpublish",
  request: Uint8Array,
): { volumeId: string; path: { targetPath?: string; stagingPath?: string } } | undefined {
  if (kind === "unstage") {
    const req = fromBinary(NodeUnstageVolumeRequestSchema, request, READ_OPTIONS);
    return req.volumeId === "" ? undefined : { volumeId: req.volumeId, path: { stagingPath: req.stagingTargetPath } };
  }
  const req = fromBinary(NodeUnpublishVolumeRequestSchema, request, READ_OPTIONS);
  return req.volumeId === "" ? undefined : { volumeId: req.volumeId, path: { targetPath: req.targetPath } };
}

export type ConditionOutcome = "normal" | "abnormal" | "upstream_abnormal";

/**
 * Sets the legacy volume_condition (field 2, removed from csi.v1 in v1.13 but
 * read by kubelets 1.21-1.36). The driver knows its volumes better than a
 * generic check, so its own abnormal condition is kept.
 */
export function withVolumeCondition(reply: Uint8Array, verdict: LegacyVolumeCondition): { bytes: Uint8Array; outcome: ConditionOutcome } {
  const msg = fromBinary(LegacyStatsResponseSchema, reply);
  if (msg.volumeCondition?.abnormal) return { bytes: reply, outcome: "upstream_abnormal" };
  msg.volumeCondition = create(VolumeConditionSchema, { abnormal: verdict.abnormal, message: verdict.message });
  return { bytes: toBinary(LegacyStatsResponseSchema, msg), outcome: verdict.abnormal ? "abnormal" : "normal" };
}
