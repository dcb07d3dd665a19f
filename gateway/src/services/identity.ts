import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  Identity,
  PluginCapability_Service_Type as ServiceType,
  PluginCapability_VolumeExpansion_Type as ExpansionType,
  type PluginCapability,
} from "../../gen/csi/v1/csi_pb.js";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PluginCapabilitySchema } from "../../gen/csi/v1/csi_pb.js";
import type { ProbeAnswer, ProbeSource } from "./probe-source.js";

export interface IdentityConfig {
  driverName: string;
  vendorVersion: string;
  manifest: Record<string, string>;
  capabilities: MessageInitShape<typeof PluginCapabilitySchema>[];
}

/** Names accepted by --capabilities, mapped to the CSI PluginCapability they advertise. */
export const CAPABILITY_NAMES: Record<string, MessageInitShape<typeof PluginCapabilitySchema>> = {
  "controller-service": { type: { case: "service", value: { type: ServiceType.CONTROLLER_SERVICE } } },
  "volume-accessibility-constraints": {
    type: { case: "service", value: { type: ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS } },
  },
  "group-controller-service": { type: { case: "service", value: { type: ServiceType.GROUP_CONTROLLER_SERVICE } } },
  "online-expansion": { type: { case: "volumeExpansion", value: { type: ExpansionType.ONLINE } } },
  "offline-expansion": { type: { case: "volumeExpansion", value: { type: ExpansionType.OFFLINE } } },
};

/**
 * CSI requires domain-name notation: at most 63 characters, starting and ending
 * with an alphanumeric, with dashes, dots and alphanumerics between.
 * Returns why the name is invalid, or undefined when it is valid.
 */
export function driverNameProblem(name: string): string | undefined {
  if (name.length === 0) return "must not be empty";
  if (name.length > 63) return `must be at most 63 characters (got ${name.length})`;
  if (!/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(name)) {
    return "must begin and end with an alphanumeric character and contain only alphanumerics, '-' and '.'";
  }
  return undefined;
}

/** Converts a Probe answer into what a Connect handler returns or throws. */
export function probeResult(answer: ProbeAnswer): { ready: boolean } {
  if (answer.kind === "error") throw new ConnectError(answer.message, answer.code);
  return { ready: answer.ready };
}

export function identityService(
  cfg: IdentityConfig,
  probe: ProbeSource,
  /** Told every answer given (for metrics: see probe-metrics.ts). */
  onProbe?: (answer: ProbeAnswer, ctx: HandlerContext) => void,
): ServiceImpl<typeof Identity> {
  return {
    getPluginInfo() {
      return { name: cfg.driverName, vendorVersion: cfg.vendorVersion, manifest: cfg.manifest };
    },
    getPluginCapabilities() {
      return { capabilities: cfg.capabilities as PluginCapability[] };
    },
    async probe(_req, ctx) {
      let answer: ProbeAnswer;
      try {
        answer = await probe.answer();
      } catch (err) {
        answer = { kind: "error", code: Code.Internal, message: `probe failed: ${(err as Error).message}` };
      }
      onProbe?.(answer, ctx);
      return probeResult(answer);
    },
  };
}
