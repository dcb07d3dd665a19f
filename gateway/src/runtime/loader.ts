import { createHash } from "node:crypto";
import { oneLine } from "../support/one-line.js";
import { ABIS, DEFAULT_ABI, abiDescriptor, markers, workerAbi } from "./abi/index.js";
import type { Sandbox } from "./sandbox.js";
import { parseManifest } from "./schema.js";
import { DEFAULTS, MiB, type LoadedPlugin, type PluginAbi, type PluginRefusal, type RefusalReason } from "./types.js";
import { wasm, type WasmModule } from "./wasm-api.js";
import { MemoryTooLargeError, WASM_PAGE, WasmFormatError, capMemory } from "./wasm-binary.js";
import { hookMemoryGrow } from "./wasm-grow-hook.js";
import { formatSig, readSignatures, sameSig } from "./wasm-signatures.js";

export interface LoadOptions {
  sandbox: Sandbox;
  /** The source catalog decides which source names exist. */
  isKnownSource: (name: string) => boolean;
  maxFileBytes?: number;
  memoryMiB?: number;
  timeoutMs?: number;
}

export type LoadResult = { ok: true; plugin: LoadedPlugin } | { ok: false; refusal: PluginRefusal };

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

/** Imports and exports against the ABI the exports speak (abi/): one ABI, never two. */
function checkInterface(module: WasmModule, bytes: Uint8Array): Checked {
  const exportList = wasm.Module.exports(module);
  const exportNames = exportList.map((e) => e.name);
  const spoken = ABIS.map((d) => ({ d, own: markers(d).filter((n) => exportNames.includes(n)) })).filter((m) => m.own.length > 0);
  if (spoken.length > 1) {
    const each = spoken.map((m) => `ABI v${m.d.version} (${m.own.join(", ")})`).join(" and ");
    return { ok: false, reason: "AbiMismatch", message: `the module exports ${spoken.length === 2 ? "both " : ""}${each} entry points; a plugin speaks one ABI` };
  }
  const importList = wasm.Module.imports(module);
  const idOf = (i: { module: string; name: string }) => `${i.module}.${i.name}`;
  // No entry points of any ABI: the imports say which one it meant (the newest
  // whose host functions it imports), so its MissingExport names that ABI's.
  const byImports = ABIS.filter((d) => d !== DEFAULT_ABI && importList.some((i) => d.imports.has(idOf(i)))).pop();
  const abi = spoken[0]?.d ?? byImports ?? DEFAULT_ABI;
  const own = spoken[0]?.own ?? [];
  const sigs = abi.exports.some((e) => e.sig) || [...abi.imports.values()].some(Boolean) ? readSignatures(bytes) : null;
  for (const imp of importList) {
    const id = idOf(imp);
    const other = ABIS.find((d) => d !== abi && d.imports.has(id));
    if (other && imp.kind === "function") return { ok: false, reason: "AbiMismatch", message: abi.foreignImport(id, other, own) };
    if (!abi.imports.has(id) || imp.kind !== "function") {
      return { ok: false, reason: "ForbiddenImport", message: `import ${id} (${imp.kind}) is not allowed; only ${abi.importsText} are` };
    }
    const want = abi.imports.get(id);
    if (want && sigs && !sameSig(sigs.imports.get(id) ?? null, want)) {
      return { ok: false, reason: "ForbiddenImport", message: `import ${id} has signature ${formatSig(sigs.imports.get(id) ?? null)}; ABI v${abi.version} declares it ${formatSig(want)}` };
    }
  }
  const exports = new Map(exportList.map((e) => [e.name, e.kind]));
  for (const want of abi.exports) {
    if (exports.get(want.name) !== want.kind) {
      return { ok: false, reason: "MissingExport", message: `required ${want.kind} export ${want.name} is missing${want.missingHint}` };
    }
    if (!want.sig) continue;
    const got = sigs?.exports.get(want.name) ?? null;
    if (!sameSig(got, want.sig)) {
      return { ok: false, reason: "BadExport", message: `export ${want.name} has signature ${formatSig(got)}; ABI v${abi.version} requires ${formatSig(want.sig)}` };
    }
  }
  return { ok: true, abi: abi.version };
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
  opts.sandbox.register(key, module, workerAbi(abiDescriptor(abi)), file);
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
