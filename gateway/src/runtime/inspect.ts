import { callCheck, type CheckOutcome } from "./check-call.js";
import { compileChecked, loadPlugin, sha256Hex } from "./loader.js";
import { Sandbox } from "./sandbox.js";
import type { PluginManifest, PluginRefusal } from "./types.js";
import { hasWasmMagic } from "./wasm-binary.js";
import { wasm } from "./wasm-api.js";

export interface OfflineOptions {
  file?: string;
  /** Which source names exist: the caller's catalog (the runtime knows no sources of its own). */
  isKnownSource: (name: string) => boolean;
  timeoutMs?: number;
  memoryMiB?: number;
  maxFileBytes?: number;
  maxOutputBytes?: number;
}

export interface InspectResult {
  file: string;
  size: number;
  sha256: string;
  imports: Array<{ module: string; name: string; kind: string }>;
  exports: Array<{ name: string; kind: string }>;
  manifest: PluginManifest | null;
  accepted: boolean;
  refusal: PluginRefusal | null;
}

/** What the gateway would make of this file, through the gateway's own validation and sandbox. */
export async function inspectPlugin(bytes: Uint8Array, opts: OfflineOptions): Promise<InspectResult> {
  const file = opts.file ?? "plugin.wasm";
  const base = { file, size: bytes.length, sha256: sha256Hex(bytes), imports: [] as InspectResult["imports"], exports: [] as InspectResult["exports"] };
  // Imports and exports are listed even for refused files: that is usually why they were refused.
  if (hasWasmMagic(bytes)) {
    try {
      const m = await wasm.compile(bytes);
      base.imports = wasm.Module.imports(m).map((i) => ({ module: i.module, name: i.name, kind: i.kind }));
      base.exports = wasm.Module.exports(m).map((e) => ({ name: e.name, kind: e.kind }));
    } catch {
      // compileChecked reports the error below.
    }
  }
  const sandbox = new Sandbox({ timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, memoryMiB: opts.memoryMiB });
  try {
    const r = await loadPlugin(bytes, file, { ...opts, sandbox });
    return r.ok
      ? { ...base, manifest: r.plugin.manifest, accepted: true, refusal: null }
      : { ...base, manifest: null, accepted: false, refusal: r.refusal };
  } finally {
    await sandbox.close();
  }
}

export type RunOnceResult =
  | { accepted: false; refusal: PluginRefusal }
  | { accepted: true; manifest: PluginManifest; sha256: string; outcome: CheckOutcome };

/** Loads the plugin and runs check(input) once, exactly as the engine would. */
export async function runPluginOnce(bytes: Uint8Array, input: string, opts: OfflineOptions): Promise<RunOnceResult> {
  const sandbox = new Sandbox({ timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, memoryMiB: opts.memoryMiB });
  try {
    const r = await loadPlugin(bytes, opts.file ?? "plugin.wasm", { ...opts, sandbox });
    if (!r.ok) return { accepted: false, refusal: r.refusal };
    const outcome = await callCheck(sandbox, r.plugin, input, opts.timeoutMs);
    return { accepted: true, manifest: r.plugin.manifest, sha256: r.plugin.sha256, outcome };
  } finally {
    await sandbox.close();
  }
}

export { compileChecked };
