// The plugin ABIs this gateway speaks, by version. A Record over PluginAbi:
// adding a version to PLUGIN_ABIS (types.ts) does not compile without its descriptor.
import type { PluginAbi } from "../types.js";
import type { AbiDescriptor } from "./descriptor.js";
import { ABI_V1 } from "./v1.js";
import { ABI_V2 } from "./v2.js";

export { markers, workerAbi, type AbiDescriptor, type AbiExport, type WorkerAbi } from "./descriptor.js";

export const ABI_DESCRIPTORS: Readonly<Record<PluginAbi, AbiDescriptor>> = { 1: ABI_V1, 2: ABI_V2 };

/** Every descriptor, oldest first. */
export const ABIS: readonly AbiDescriptor[] = Object.values(ABI_DESCRIPTORS).sort((a, b) => a.version - b.version);

/** The ABI a module is taken to mean when nothing it exports or imports says otherwise. */
export const DEFAULT_ABI: AbiDescriptor = ABI_V1;

export function abiDescriptor(version: PluginAbi): AbiDescriptor {
  return ABI_DESCRIPTORS[version];
}

/** The versions spoken, "1,2": GetPluginInfo's probegate.plugin-abi and build_info's abi label. */
export function spokenAbis(): string {
  return ABIS.map((d) => d.version).join(",");
}
