import { createHash } from "node:crypto";
import { oneLine } from "../support/one-line.js";
import type { Sandbox } from "./sandbox.js";
import { parseManifest } from "./schema.js";
import { DEFAULTS, MiB, type LoadedPlugin, type PluginAbi, type PluginRefusal, type RefusalReason } from "./types.js";
import { wasm, type WasmExternKind, type WasmModule } from "./wasm-api.js";
import { MemoryTooLargeError, WASM_PAGE, WasmFormatError, capMemory } from "./wasm-binary.js";
import { hookMemoryGrow } from "./wasm-grow-hook.js";
import { formatSig, readSignatures, sameSig, type FuncSig } from "./wasm-signatures.js";

export interface LoadOptions {
  sandbox: Sandbox;
  /** The source catalog decides which source names exist. */
  isKnownSource: (name: string) => boolean;
  maxFileBytes?: number;
  memoryMiB?: number;
  timeoutMs?: number;
}

export type LoadResult = { ok: true; plugin: LoadedPlugin } | { ok: false; refusal: PluginRefusal };

// ABI v1 (AssemblyScript strings) and v2 (UTF-8 byte buffers): plugins/ABI.md.
const V1_IMPORTS = new Set(["env.abort", "env.trace", "env.seed"]);
const V1_EXPORTS: ReadonlyArray<[string, WasmExternKind]> = [
  ["manifest", "function"],
  ["check", "function"],
  ["memory", "memory"],
  ["__new", "function"],
  ["__pin", "function"],
  ["__unpin", "function"],
];
const I32 = "i32";
/** ABI v2's imports (each optional) and the only signatures they may have. */
const V2_IMPORTS = new Map<string, FuncSig>([
  ["probegate_v2.log", { params: [I32, I32], results: [] }],
  ["probegate_v2.abort", { params: [I32, I32], results: [] }],
]);
/** ABI v2's exports and their signatures; packed results are i64 = ptr | len << 32. */
const V2_EXPORTS = new Map<string, FuncSig | "memory">([
  ["memory", "memory"],
  ["pg_manifest", { params: [], results: ["i64"] }],
  ["pg_check", { params: [I32, I32], results: ["i64"] }],
  ["pg_alloc", { params: [I32], results: [I32] }],
  ["pg_reset", { params: [], results: [] }],
]);
const V2_MARKERS = ["pg_manifest", "pg_check", "pg_alloc", "pg_reset"];
const V1_MARKERS = ["manifest", "check", "__new", "__pin", "__unpin"];

/** Which ABI a module's exports speak; both at once is refused by the caller. */
function exportedAbi(exportNames: readonly string[]): { v1: string[]; v2: string[] } {
  return { v1: V1_MARKERS.filter((n) => exportNames.includes(n)), v2: V2_MARKERS.filter((n) => exportNames.includes(n)) };
}

let keySeq = 0;

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export function refusal(file: string, reason: RefusalReason, message: string, sha256?: string): PluginRefusal {
  // Messages quote manifests and file names: one line, like a check's message.
  return { file, reason, message: oneLine(message, 2048), sha256, at: new Date().toISOString() };
}

/** Checks that need no execution: size, format, imports, exports, memory cap. */
export async function compileChecked(
  bytes: Uint8Array,
  file: string,
  opts: { maxFileBytes?: number; memoryMiB?: number },
): Promise<{ ok: true; module: WasmModule; sha256: string; abi: PluginAbi } | { ok: false; refusal: PluginRefusal }> {
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
  const checked = checkInterface(module, capped);
  if (!checked.ok) return { ok: false, refusal: refusal(file, checked.reason, checked.message, sha) };
  return { ok: true, module, sha256: sha, abi: checked.abi };
}

type Checked = { ok: true; abi: PluginAbi } | { ok: false; reason: RefusalReason; message: string };

/** Imports and exports against the ABI the exports speak: v1, v2, never both. */
function checkInterface(module: WasmModule, bytes: Uint8Array): Checked {
  const exportList = wasm.Module.exports(module);
  const marks = exportedAbi(exportList.map((e) => e.name));
  if (marks.v1.length > 0 && marks.v2.length > 0) {
    return {
      ok: false,
      reason: "AbiMismatch",
      message: `the module exports both ABI v1 (${marks.v1.join(", ")}) and ABI v2 (${marks.v2.join(", ")}) entry points; a plugin speaks one ABI`,
    };
  }
  const importList = wasm.Module.imports(module);
  // No entry points of either ABI: the imports say which one it meant (and its MissingExport names that ABI's).
  const v2Imports = importList.some((i) => V2_IMPORTS.has(`${i.module}.${i.name}`));
  const abi: PluginAbi = marks.v2.length > 0 || (marks.v1.length === 0 && v2Imports) ? 2 : 1;
  const sigs = abi === 2 ? readSignatures(bytes) : null;
  for (const imp of importList) {
    const id = `${imp.module}.${imp.name}`;
    const otherAbi = abi === 2 ? V1_IMPORTS.has(id) : V2_IMPORTS.has(id);
    if (otherAbi && imp.kind === "function") {
      return {
        ok: false,
        reason: "AbiMismatch",
        message:
          abi === 2
            ? `the module exports ABI v2 entry points (${marks.v2.join(", ")}) but imports ABI v1's ${id}; v2 modules import only probegate_v2.log and probegate_v2.abort`
            : `the module imports ABI v2's ${id} but exports ABI v1 entry points (${marks.v1.join(", ")}); a plugin speaks one ABI`,
      };
    }
    const allowed = abi === 2 ? V2_IMPORTS.has(id) : V1_IMPORTS.has(id);
    if (!allowed || imp.kind !== "function") {
      const which = abi === 2 ? "probegate_v2.log and probegate_v2.abort functions (ABI v2)" : "env.abort, env.trace and env.seed functions";
      return { ok: false, reason: "ForbiddenImport", message: `import ${id} (${imp.kind}) is not allowed; only ${which} are` };
    }
    const want = V2_IMPORTS.get(id);
    if (want && sigs && !sameSig(sigs.imports.get(id) ?? null, want)) {
      return { ok: false, reason: "ForbiddenImport", message: `import ${id} has signature ${formatSig(sigs.imports.get(id) ?? null)}; ABI v2 declares it ${formatSig(want)}` };
    }
  }
  const exports = new Map(exportList.map((e) => [e.name, e.kind]));
  if (abi === 1) {
    for (const [name, kind] of V1_EXPORTS) {
      if (exports.get(name) !== kind) {
        const hint = name.startsWith("__") ? " (compile with --exportRuntime)" : name === "check" ? " (or ABI v2's pg_check)" : "";
        return { ok: false, reason: "MissingExport", message: `required ${kind} export ${name} is missing${hint}` };
      }
    }
    return { ok: true, abi: 1 };
  }
  for (const [name, want] of V2_EXPORTS) {
    const kind = want === "memory" ? "memory" : "function";
    if (exports.get(name) !== kind) return { ok: false, reason: "MissingExport", message: `required ${kind} export ${name} is missing (ABI v2)` };
    if (want === "memory") continue;
    const got = sigs!.exports.get(name) ?? null;
    if (!sameSig(got, want)) {
      return { ok: false, reason: "BadExport", message: `export ${name} has signature ${formatSig(got)}; ABI v2 requires ${formatSig(want)}` };
    }
  }
  return { ok: true, abi: 2 };
}

/**
 * Full validation: static checks, then manifest() run in the sandbox under
 * the deadline. On success the module stays registered in the sandbox under
 * the returned plugin's key; on refusal nothing is left behind.
 */
export async function loadPlugin(bytes: Uint8Array, file: string, opts: LoadOptions): Promise<LoadResult> {
  const compiled = await compileChecked(bytes, file, opts);
  if (!compiled.ok) return compiled;
  const { module, sha256, abi } = compiled;
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
  const m = parseManifest(r.output, abi);
  if (!m.ok) return refuse(m.reason, m.message);
  const unknown = m.manifest.sources.filter((s) => !opts.isKnownSource(s));
  if (unknown.length > 0) {
    return refuse("UnknownSource", `unknown source${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);
  }
  return { ok: true, plugin: { key, file, sha256, size: bytes.length, manifest: m.manifest, module } };
}
