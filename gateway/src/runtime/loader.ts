import { createHash } from "node:crypto";
import type { Sandbox } from "./sandbox.js";
import { parseManifest } from "./schema.js";
import { DEFAULTS, MiB, type LoadedPlugin, type PluginRefusal, type RefusalReason } from "./types.js";
import { wasm, type WasmExternKind, type WasmModule } from "./wasm-api.js";
import { MemoryTooLargeError, WASM_PAGE, WasmFormatError, capMemory } from "./wasm-binary.js";
import { hookMemoryGrow } from "./wasm-grow-hook.js";

export interface LoadOptions {
  sandbox: Sandbox;
  /** The source catalog decides which source names exist. */
  isKnownSource: (name: string) => boolean;
  maxFileBytes?: number;
  memoryMiB?: number;
  timeoutMs?: number;
}

export type LoadResult = { ok: true; plugin: LoadedPlugin } | { ok: false; refusal: PluginRefusal };

const ALLOWED_IMPORTS = new Set(["env.abort", "env.trace", "env.seed"]);
const REQUIRED_EXPORTS: ReadonlyArray<[string, WasmExternKind]> = [
  ["manifest", "function"],
  ["check", "function"],
  ["memory", "memory"],
  ["__new", "function"],
  ["__pin", "function"],
  ["__unpin", "function"],
];

let keySeq = 0;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function refusal(file: string, reason: RefusalReason, message: string, sha256?: string): PluginRefusal {
  return { file, reason, message, sha256, at: new Date().toISOString() };
}

/** Checks that need no execution: size, format, imports, exports, memory cap. */
export async function compileChecked(
  bytes: Uint8Array,
  file: string,
  opts: { maxFileBytes?: number; memoryMiB?: number },
): Promise<{ ok: true; module: WasmModule; sha256: string } | { ok: false; refusal: PluginRefusal }> {
  const sha = sha256Hex(bytes);
  const maxFileBytes = opts.maxFileBytes ?? DEFAULTS.maxFileBytes;
  if (bytes.length > maxFileBytes) {
    return { ok: false, refusal: refusal(file, "TooLarge", `file is ${bytes.length} bytes; the cap is ${maxFileBytes} bytes`, sha) };
  }
  const capPages = Math.floor(((opts.memoryMiB ?? DEFAULTS.memoryMiB) * MiB) / WASM_PAGE);
  let capped: Uint8Array;
  try {
    capped = hookMemoryGrow(capMemory(bytes, capPages).bytes).bytes;
  } catch (e) {
    if (e instanceof MemoryTooLargeError) return { ok: false, refusal: refusal(file, "MemoryTooLarge", e.message, sha) };
    if (e instanceof WasmFormatError) return { ok: false, refusal: refusal(file, "CompileError", e.message, sha) };
    throw e;
  }
  let module: WasmModule;
  try {
    module = await wasm.compile(capped);
  } catch (e) {
    return { ok: false, refusal: refusal(file, "CompileError", (e as Error).message, sha) };
  }
  for (const imp of wasm.Module.imports(module)) {
    const id = `${imp.module}.${imp.name}`;
    if (!ALLOWED_IMPORTS.has(id) || imp.kind !== "function") {
      return {
        ok: false,
        refusal: refusal(file, "ForbiddenImport", `import ${id} (${imp.kind}) is not allowed; only env.abort, env.trace and env.seed functions are`, sha),
      };
    }
  }
  const exports = new Map(wasm.Module.exports(module).map((e) => [e.name, e.kind]));
  for (const [name, kind] of REQUIRED_EXPORTS) {
    if (exports.get(name) !== kind) {
      const hint = name.startsWith("__") ? " (compile with --exportRuntime)" : "";
      return { ok: false, refusal: refusal(file, "MissingExport", `required ${kind} export ${name} is missing${hint}`, sha) };
    }
  }
  return { ok: true, module, sha256: sha };
}

/**
 * Full validation: static checks, then manifest() run in the sandbox under
 * the deadline. On success the module stays registered in the sandbox under
 * the returned plugin's key; on refusal nothing is left behind.
 */
export async function loadPlugin(bytes: Uint8Array, file: string, opts: LoadOptions): Promise<LoadResult> {
  const compiled = await compileChecked(bytes, file, opts);
  if (!compiled.ok) return compiled;
  const { module, sha256 } = compiled;
  const key = `${file}#${sha256.slice(0, 12)}#${++keySeq}`;
  opts.sandbox.register(key, module, file);
  const r = await opts.sandbox.call(key, "manifest", undefined, opts.timeoutMs);
  const refuse = (reason: RefusalReason, message: string): LoadResult => {
    opts.sandbox.unregister(key);
    return { ok: false, refusal: refusal(file, reason, message, sha256) };
  };
  if (!r.ok) {
    switch (r.reason) {
      case "PluginTimeout":
      case "PluginTrap":
      case "PluginMemoryLimit":
        return refuse(r.reason, `manifest(): ${r.message}`);
      default:
        return refuse("BadManifest", `manifest(): ${r.message}`);
    }
  }
  const m = parseManifest(r.output);
  if (!m.ok) return refuse(m.reason, m.message);
  const unknown = m.manifest.sources.filter((s) => !opts.isKnownSource(s));
  if (unknown.length > 0) {
    return refuse("UnknownSource", `unknown source${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);
  }
  return { ok: true, plugin: { key, file, sha256, size: bytes.length, manifest: m.manifest, module } };
}
