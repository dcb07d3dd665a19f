#!/usr/bin/env node
// Builds every plugin directory (plugins/<name>/index.ts) into
// dist/plugins/<name>.wasm with the SDK's build step (sdk/tools/build.mjs:
// compiler options, ABI checks, warnings), the same one standalone plugin
// projects run as `probegate-plugin build`.
//
//   node plugins/build.mjs [--force] [name ...]
//
// Builds run on every `npm test`, and one optimised compile takes seconds, so
// each plugin is rebuilt only when a hash of its inputs (its own .ts files,
// the SDK, asconfig.json, this script and the compiler version) changes.
// Outputs are written to a temp file and renamed, so concurrent builders
// (parallel test workers) cannot leave a half-written module behind.

import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { abiProblems, compile as sdkCompile, sourceWarnings } from "./sdk/tools/build.mjs";

export { abiProblems };

const PLUGINS_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(PLUGINS_DIR);
const OUT_DIR = join(ROOT, "dist", "plugins");
const CACHE_FILE = join(OUT_DIR, ".build-cache.json");
const CONFIG = join(ROOT, "asconfig.json");
const NOT_PLUGINS = new Set(["sdk", "test", "fixtures", "node_modules"]);
const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// Besides the .ts sources: what else decides a build's output.
const BUILD_INPUTS = [CONFIG, join(PLUGINS_DIR, "sdk", "asconfig.json"), join(PLUGINS_DIR, "sdk", "tools", "build.mjs"), fileURLToPath(import.meta.url)];

/** Plugin names: every directory under plugins/ holding an index.ts. */
export function discoverPlugins(dir = PLUGINS_DIR) {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !d.name.startsWith(".") && !NOT_PLUGINS.has(d.name))
    .filter((d) => existsSync(join(dir, d.name, "index.ts")))
    .map((d) => d.name)
    .sort();
}

function tsFiles(dir) {
  const out = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) {
      if (d.name !== "fixtures" && d.name !== "node_modules") out.push(...tsFiles(p));
    } else if (d.name.endsWith(".ts") && !d.name.endsWith(".test.ts")) out.push(p);
  }
  return out.sort();
}

function compilerVersion() {
  const pkg = join(ROOT, "node_modules", "assemblyscript", "package.json");
  return existsSync(pkg) ? JSON.parse(readFileSync(pkg, "utf8")).version : "unknown";
}

function inputHash(name) {
  const h = createHash("sha256");
  h.update(compilerVersion());
  const files = [...BUILD_INPUTS, ...tsFiles(join(PLUGINS_DIR, "sdk")), ...tsFiles(join(PLUGINS_DIR, name))];
  for (const f of files) {
    h.update(relative(ROOT, f));
    h.update(readFileSync(f));
  }
  return h.digest("hex");
}

function readCache() {
  try {
    return JSON.parse(readFileSync(CACHE_FILE, "utf8"));
  } catch {
    return {};
  }
}

function writeAtomic(path, data) {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, path);
}

async function compile(asc, name, outFile, entry = join("plugins", name, "index.ts")) {
  const config = JSON.parse(readFileSync(CONFIG, "utf8"));
  const target = config.targets && config.targets[name] ? name : undefined;
  return sdkCompile({ entry, outFile: relative(ROOT, outFile), cwd: ROOT, config: CONFIG, target, asc });
}

/**
 * Builds the named plugins (default: all discovered). Resolves to
 * { built, skipped, failed: [{name, error}] }; never throws for compile errors.
 */
export async function buildPlugins({ names, force = false, log = (s) => process.stderr.write(s + "\n") } = {}) {
  const all = discoverPlugins();
  const wanted = names && names.length ? names : all;
  mkdirSync(OUT_DIR, { recursive: true });
  const result = { built: [], skipped: [], failed: [] };
  let asc = null;
  for (const name of wanted) {
    if (!NAME_RE.test(name)) {
      result.failed.push({ name, error: `invalid plugin name (must match ${NAME_RE})` });
      continue;
    }
    if (!all.includes(name)) {
      result.failed.push({ name, error: `no plugins/${name}/index.ts` });
      continue;
    }
    const outFile = join(OUT_DIR, `${name}.wasm`);
    const hash = inputHash(name);
    if (!force && readCache()[name] === hash && existsSync(outFile) && statSync(outFile).size > 0) {
      result.skipped.push(name);
      continue;
    }
    asc ??= (await import("assemblyscript/asc")).default;
    const tmp = join(OUT_DIR, `${name}.${process.pid}.tmp.wasm`);
    const started = Date.now();
    const error = await compile(asc, name, tmp);
    if (error) {
      rmSync(tmp, { force: true });
      result.failed.push({ name, error });
      continue;
    }
    const bytes = readFileSync(tmp);
    const problems = abiProblems(bytes);
    if (problems.length) {
      rmSync(tmp, { force: true });
      result.failed.push({ name, error: problems.join("; ") });
      continue;
    }
    renameSync(tmp, outFile);
    for (const w of sourceWarnings(readFileSync(join(PLUGINS_DIR, name, "index.ts"), "utf8"), `${name}/index.ts`)) log(`plugins: warning: ${w}`);
    const cache = readCache();
    cache[name] = hash;
    writeAtomic(CACHE_FILE, JSON.stringify(cache, null, 2));
    result.built.push(name);
    log(`plugins: built ${name}.wasm (${bytes.length} bytes, ${Date.now() - started} ms)`);
  }
  return result;
}

/**
 * Compiles a non-plugin module (e.g. a test probe of the SDK) with the shared
 * options, or with those of asconfig target `like` (to time SDK code as a
 * given plugin is built), cached like plugins. Throws on compile errors.
 */
export async function buildModule(entryRel, outFile, { like = "" } = {}) {
  const h = createHash("sha256");
  h.update(compilerVersion());
  h.update(like);
  for (const f of [...BUILD_INPUTS, join(ROOT, entryRel), ...tsFiles(join(PLUGINS_DIR, "sdk"))]) h.update(readFileSync(f));
  const hash = h.digest("hex");
  const stamp = `${outFile}.hash`;
  if (existsSync(outFile) && existsSync(stamp) && readFileSync(stamp, "utf8") === hash) return outFile;
  mkdirSync(dirname(outFile), { recursive: true });
  const asc = (await import("assemblyscript/asc")).default;
  const tmp = `${outFile}.${process.pid}.tmp.wasm`;
  const error = await compile(asc, like, tmp, entryRel);
  if (error) {
    rmSync(tmp, { force: true });
    throw new Error(`cannot compile ${entryRel}:\n${error}`);
  }
  renameSync(tmp, outFile);
  writeAtomic(stamp, hash);
  return outFile;
}

async function cli(argv) {
  const force = argv.includes("--force");
  const names = argv.filter((a) => !a.startsWith("--"));
  const { built, skipped, failed } = await buildPlugins({ names, force });
  for (const f of failed) process.stderr.write(`plugins: FAILED ${f.name}:\n${f.error}\n`);
  process.stderr.write(
    `plugins: ${built.length} built, ${skipped.length} up to date, ${failed.length} failed -> ${relative(process.cwd(), OUT_DIR) || "."}\n`,
  );
  return failed.length ? 1 : 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  cli(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err) => {
      process.stderr.write(`plugins: build crashed: ${err && err.stack ? err.stack : err}\n`);
      process.exitCode = 2;
    },
  );
}
