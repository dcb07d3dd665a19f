import type { DescMessage, DescService } from "@bufbuild/protobuf";
import { Controller, GroupController, Identity, Node } from "../../gen/csi/v1/csi_pb.js";

/** Which CSI calls gateway mode forwards: everything but Probe, which it answers itself. */
const FORWARDED_PREFIXES = ["/csi.v1.Controller/", "/csi.v1.Node/", "/csi.v1.GroupController/"];
const FORWARDED_IDENTITY = new Set(["/csi.v1.Identity/GetPluginInfo", "/csi.v1.Identity/GetPluginCapabilities"]);

export const PROBE_PATH = "/csi.v1.Identity/Probe";
export const GET_PLUGIN_INFO_PATH = "/csi.v1.Identity/GetPluginInfo";
export const NODE_STAGE_PATH = "/csi.v1.Node/NodeStageVolume";
export const NODE_PUBLISH_PATH = "/csi.v1.Node/NodePublishVolume";
export const NODE_UNSTAGE_PATH = "/csi.v1.Node/NodeUnstageVolume";
export const NODE_UNPUBLISH_PATH = "/csi.v1.Node/NodeUnpublishVolume";
export const NODE_GET_VOLUME_STATS_PATH = "/csi.v1.Node/NodeGetVolumeStats";
export const NODE_GET_CAPABILITIES_PATH = "/csi.v1.Node/NodeGetCapabilities";

export type GateName = "node-stage" | "node-publish";
export const GATE_NAMES: readonly GateName[] = ["node-stage", "node-publish"];

export const GATED_PATHS: Record<GateName, string> = {
  "node-stage": NODE_STAGE_PATH,
  "node-publish": NODE_PUBLISH_PATH,
};

export interface MethodInfo {
  /** Bounded metrics label: `csi.v1.Node/NodeStageVolume`, or `csi.v1.Node/unknown`. */
  label: string;
  input?: DescMessage;
  output?: DescMessage;
}

function index(services: DescService[]): Map<string, MethodInfo> {
  const m = new Map<string, MethodInfo>();
  for (const s of services) {
    for (const method of s.methods) {
      m.set(`/${s.typeName}/${method.name}`, { label: `${s.typeName}/${method.name}`, input: method.input, output: method.output });
    }
  }
  return m;
}

const KNOWN = index([Controller, Node, GroupController, Identity]);

export function isForwardedPath(path: string): boolean {
  if (FORWARDED_IDENTITY.has(path)) return true;
  for (const p of FORWARDED_PREFIXES) {
    // A bare prefix with no method name is not a call.
    if (path.startsWith(p) && path.length > p.length && !path.includes("?")) return true;
  }
  return false;
}

export function methodInfo(path: string): MethodInfo {
  const known = KNOWN.get(path);
  if (known) return known;
  // Methods newer than our proto still go through; only the label is generic.
  const service = path.slice(1, path.indexOf("/", 1));
  return { label: `${service}/unknown` };
}
