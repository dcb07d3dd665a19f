// The one build step for probegate plugins, in this repository and in any
// standalone plugin project: compile with the SDK's compiler options, refuse
// a module the gateway would refuse (imports, exports), warn about code that
// leaks memory under the minimal runtime, and write the .wasm atomically.

import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const SDK_DIR = dirname(dirname(fileURLToPath(import.meta.url)));

/** The plugin ABI this SDK speaks; the package's major version (see package.json). */
export const ABI_VERSION = 1;
/** The SDK's compiler options (asconfig.json); a project's own asconfig.json extends it. */
export const SDK_ASCONFIG = join(SDK_DIR, "asconfig.json");
export const ALLOWED_IMPORTS = Object.freeze(["env.abort", "env.trace", "env.seed"]);
export const REQUIRED_EXPORTS = Object.freeze(["manifest", "check", "__new", "__pin", "__unpin"]);
export const PLUGIN_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Problems with a compiled module's interface; [] when it obeys the ABI. */
export function abiProblems(bytes) {
  const mod = new WebAssembly.Module(bytes);
  const problems = [];
  for (const imp of WebAssembly.Module.imports(mod)) {
    const id = `${imp.module}.${imp.name}`;
    if (!ALLOWED_IMPORTS.includes(id) || imp.kind !== "function") problems.push(`forbidden import ${id} (${imp.kind})`);
  }
  const exported = new Set(WebAssembly.Module.exports(mod).map((e) => e.name));
  for (const name of REQUIRED_EXPORTS) if (!exported.has(name)) problems.push(`missing export ${name}`);
  return problems;
}

/**
 * Warnings about a plugin's entry source. The minimal runtime frees memory
 * only when the SDK's respond() collects at the end of check() (checkSource()
 * ends through it); a plugin that bypasses both grows until its memory cap.
 */
export function sourceWarnings(entryText, label) {
  return /\b(respond|checkSource|checkSourcePhased)\s*\(/.test(entryText)
    ? []
    : [`${label} never calls respond(), checkSource() or checkSourcePhased(); its check() garbage is never freed`];
}

/** The assemblyscript version that will compile (the project's, a peer dependency). */
export async function compilerVersion() {
  try {
    const { createRequire } = await import("node:module");
    const req = createRequire(join(SDK_DIR, "package.json"));
    return JSON.parse(readFileSync(req.resolve("assemblyscript/package.json"), "utf8")).version;
  } catch {
    return "unknown";
  }
}

/**
 * Compiles `entry` to `outFile` (paths relative to `cwd`). Resolves to null or
 * the compiler's error text; never throws for compile errors.
 * `config`: an asconfig.json (default: `cwd`/asconfig.json if present, else the SDK's);
 * `target`: one of its targets.
 */
export async function compile({ entry, outFile, cwd = process.cwd(), config, target, asc }) {
  asc ??= (await import("assemblyscript/asc")).default;
  const cfg = config ?? (existsSync(join(cwd, "asconfig.json")) ? join(cwd, "asconfig.json") : SDK_ASCONFIG);
  const args = [entry, "--config", relative(cwd, cfg) || cfg, "--outFile", outFile];
  if (target) args.push("--target", target);
  let errText = "";
  const sink = { write: (chunk) => { errText += String(chunk); return true; } };
  const prev = process.cwd();
  process.chdir(cwd); // asc resolves entries, outFile and asconfig relative to cwd
  try {
    const { error } = await asc.main(args, { stdout: sink, stderr: sink });
    return error ? `${errText.trim()}\n${error.message}`.trim() : null;
  } finally {
    process.chdir(prev);
  }
}

/**
 * compile() into a temp file, then the ABI checks, then an atomic rename onto
 * outFile (a concurrent builder or a watching gateway never sees half a module).
 * Resolves to { ok, size, warnings } or { ok: false, error }.
 */
export async function buildPlugin({ entry, outFile, cwd = process.cwd(), config, target, asc }) {
  const absOut = resolve(cwd, outFile);
  mkdirSync(dirname(absOut), { recursive: true });
  const tmp = `${absOut}.${process.pid}.tmp.wasm`;
  const error = await compile({ entry, outFile: tmp, cwd, config, target, asc });
  if (error) {
    rmSync(tmp, { force: true });
    return { ok: false, error };
  }
  const bytes = readFileSync(tmp);
  const problems = abiProblems(bytes);
  if (problems.length) {
    rmSync(tmp, { force: true });
    return { ok: false, error: problems.join("; ") };
  }
  renameSync(tmp, absOut);
  const warnings = sourceWarnings(readFileSync(resolve(cwd, entry), "utf8"), entry);
  return { ok: true, size: bytes.length, warnings };
}
