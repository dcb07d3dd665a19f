// What a plugin ABI is, as data: the loader checks a module against it, the
// sandbox worker calls the entry points it names, the manifest schema, `plugin
// inspect` and the build info describe it. One descriptor per ABI (v1.ts,
// v2.ts); the wire format of each is plugins/ABI.md.
import type { PluginAbi } from "../types.js";
import type { FuncSig } from "../wasm-signatures.js";

/** An export the module must have, and what `MissingExport` adds to say how to get it. */
export interface AbiExport {
  name: string;
  kind: "function" | "memory";
  /** The only signature it may have; absent: not checked (ABI v1 reads no signatures). */
  sig?: FuncSig;
  /** Appended to the MissingExport message, e.g. " (compile with --exportRuntime)". */
  missingHint: string;
}

export interface AbiDescriptor {
  version: PluginAbi;
  /** How values cross the boundary, in `plugin inspect` ("AssemblyScript strings"). */
  convention: string;
  /** The host functions a module may import, `module.name`, with the only signature each may have (null: not checked). */
  imports: ReadonlyMap<string, FuncSig | null>;
  /** The imports in a ForbiddenImport message: "only <this> are". */
  importsText: string;
  /** Every export the module must have; its functions also mark a module as speaking this ABI. */
  exports: readonly AbiExport[];
  /** What the sandbox worker calls for the gateway's two calls. */
  entryPoints: { manifest: string; check: string };
  /** The exports named when a manifest claims another ABI (schema.ts) and in `plugin inspect`. */
  names: { mismatch: string; inspect: string };
  /** The AbiMismatch message for a module that imports `id`, a host function of `other`, while exporting `own` of this ABI. */
  foreignImport(id: string, other: AbiDescriptor, own: readonly string[]): string;
}

/** The export functions whose presence says a module speaks this ABI. */
export function markers(d: AbiDescriptor): string[] {
  return d.exports.filter((e) => e.kind === "function").map((e) => e.name);
}

/** What the sandbox worker needs of the loader's answer: which calling convention, and what to call. */
export interface WorkerAbi {
  abi: PluginAbi;
  entryPoints: AbiDescriptor["entryPoints"];
}

export function workerAbi(d: AbiDescriptor): WorkerAbi {
  return { abi: d.version, entryPoints: { ...d.entryPoints } };
}
