// The two replies gateway mode rewrites, as pure functions over message bytes.
// Everything else is relayed without being decoded.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  NodeGetCapabilitiesResponseSchema,
  NodeGetVolumeStatsRequestSchema,
  NodeGetVolumeStatsResponseSchema,
  NodeServiceCapability_RPC_Type as NodeRpcType,
  NodeServiceCapabilitySchema,
  VolumeConditionSchema,
} from "../../gen/csi/v1/csi_pb.js";
import type { VolumeRef, VolumeVerdict } from "./volume-checker.js";

/** Adds the VOLUME_CONDITION node capability unless the driver already has it. */
export function withVolumeConditionCapability(reply: Uint8Array): Uint8Array {
  const msg = fromBinary(NodeGetCapabilitiesResponseSchema, reply);
  const has = msg.capabilities.some((c) => c.type.case === "rpc" && c.type.value.type === NodeRpcType.VOLUME_CONDITION);
  if (has) return reply;
  msg.capabilities.push(
    create(NodeServiceCapabilitySchema, {
      type: { case: "rpc", value: { type: NodeRpcType.VOLUME_CONDITION } },
    }),
  );
  return toBinary(NodeGetCapabilitiesResponseSchema, msg);
}

export function volumeRefFromRequest(request: Uint8Array): VolumeRef | undefined {
  // A caller's request: unknown fields are skipped, not kept (each would be an object).
  const req = fromBinary(NodeGetVolumeStatsRequestSchema, request, { readUnknownFields: false });
  if (req.volumeId === "") return undefined;
  return { id: req.volumeId, path: req.volumePath, ...(req.stagingTargetPath ? { stagingPath: req.stagingTargetPath } : {}) };
}

export type ConditionOutcome = "normal" | "abnormal" | "upstream_abnormal";

/**
 * Sets volume_condition from the volume plugins' verdict. The driver knows its
 * volumes better than a generic check, so its own abnormal condition is kept.
 */
export function withVolumeCondition(reply: Uint8Array, verdict: VolumeVerdict): { bytes: Uint8Array; outcome: ConditionOutcome } {
  const msg = fromBinary(NodeGetVolumeStatsResponseSchema, reply);
  if (msg.volumeCondition?.abnormal) return { bytes: reply, outcome: "upstream_abnormal" };
  msg.volumeCondition = create(VolumeConditionSchema, { abnormal: verdict.abnormal, message: verdict.message });
  return { bytes: toBinary(NodeGetVolumeStatsResponseSchema, msg), outcome: verdict.abnormal ? "abnormal" : "normal" };
}
