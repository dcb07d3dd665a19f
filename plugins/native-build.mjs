#!/usr/bin/env node
// Builds ABI v2 check plugins written in Rust or C, with nothing but the
// compilers (no cargo registry, no wasi-sdk, no libc). Self-contained on
// purpose: `probegate plugin new --lang rust|c` copies this file into the new
// project as tools/build.mjs, and the repository's examples build with it.
//
//   node native-build.mjs                  in a project: build
//   node native-build.mjs test [OPTIONS]   build, then run every fixture
//   node native-build.mjs run OPTIONS      build, then one case by hand
//                                          (probegate plugin test's options: --source NAME=FILE, …)
//
// A project says what to build in package.json:
//   "probegate": {"lang": "rust"|"c", "name": "NAME", "sdk": "vendor/…",
//                 "entry": "src/lib.rs" (Rust), "sources": ["src/check.c"] (C),
//                 "out": "build/NAME.wasm", "fixtures": "fixtures"}  (the last four: defaults)
//
// Toolchains (Debian/Ubuntu: apt-get install rustc libstd-rust-dev-wasm32 | clang lld):
// - Rust: the first rustc whose sysroot has the wasm32-unknown-unknown target
//   (every rustc on PATH, then /usr/bin/rustc; $PROBEGATE_RUSTC instead when
//   set): a rustup rustc earlier on PATH often lacks the target, Debian's has it.
// - C: clang ($PROBEGATE_CLANG instead when set) with wasm-ld (lld) beside it or on PATH.

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const WASM_TARGET = "wasm32-unknown-unknown";

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], ...opts });
}

function onPath(name) {
  const out = [];
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, name);
    try {
      if (statSync(p).isFile()) out.push(p);
    } catch {
      // not there
    }
  }
  return out;
}

// Each lookup runs the compilers (twice per rustc candidate); the answer holds
// while the variables that steer it do, so it is worked out once per process.
const found = new Map();
function remembered(what, steering, look) {
  const key = `${what}\0${steering.map((v) => process.env[v] ?? "").join("\0")}`;
  if (!found.has(key)) found.set(key, look());
  return found.get(key);
}

/** The first rustc that can target wasm32-unknown-unknown, or why none can. */
export function findRustc() {
  return remembered("rustc", ["PROBEGATE_RUSTC", "PATH"], lookForRustc);
}

function lookForRustc() {
  const tried = [];
  // PROBEGATE_RUSTC, when set, is the only candidate (so it can also say "none here").
  const candidates = process.env.PROBEGATE_RUSTC ? [process.env.PROBEGATE_RUSTC] : [...onPath("rustc"), "/usr/bin/rustc"];
  for (const rustc of [...new Set(candidates)]) {
    try {
      const sysroot = run(rustc, ["--print", "sysroot"]).trim();
      const version = run(rustc, ["--version"]).trim();
      if (existsSync(join(sysroot, "lib", "rustlib", WASM_TARGET, "lib"))) return { ok: true, path: rustc, version };
      tried.push(`${rustc} (${version}) has no ${WASM_TARGET} target`);
    } catch {
      tried.push(`${rustc} does not run`);
    }
  }
  return {
    ok: false,
    why: `no rustc with the ${WASM_TARGET} target${tried.length ? ` (${tried.join("; ")})` : " on PATH"}; ` +
      "install one (Debian/Ubuntu: apt-get install rustc libstd-rust-dev-wasm32) or set PROBEGATE_RUSTC",
  };
}

/** clang plus wasm-ld, or why not. */
export function findClang() {
  return remembered("clang", ["PROBEGATE_CLANG", "PATH"], lookForClang);
}

function lookForClang() {
  const clang = process.env.PROBEGATE_CLANG || onPath("clang")[0];
  if (!existsSync(clang ?? "")) {
    return { ok: false, why: `no clang${clang ? ` at ${clang}` : " on PATH"}; install clang and lld (Debian/Ubuntu: apt-get install clang lld) or set PROBEGATE_CLANG` };
  }
  const lld = onPath("wasm-ld")[0] ?? (existsSync(join(dirname(clang), "wasm-ld")) ? join(dirname(clang), "wasm-ld") : null);
  if (!lld) return { ok: false, why: `${clang} is there but wasm-ld is not; install lld (Debian/Ubuntu: apt-get install lld)` };
  try {
    const version = run(clang, ["--version"]).split("\n")[0].trim();
    return { ok: true, path: clang, lld, version };
  } catch {
    return { ok: false, why: `${clang} does not run` };
  }
}

function writeAtomic(file, bytes) {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, file);
}

function compileError(what, err) {
  const text = `${err.stderr ?? ""}${err.stdout ?? ""}`.trim() || String(err.message ?? err);
  return new Error(`${what} failed:\n${text}`);
}

/**
 * Rust: the SDK as an rlib, then the plugin as a size-optimised cdylib
 * (opt-level s, LTO, one codegen unit, panic=abort, stripped). Paths are
 * remapped so the module's bytes do not depend on where the tree lives.
 */
function buildRust({ rustc, entry, crateName, sdk, outFile, workDir, root }) {
  const common = [
    "--edition", "2021", "--target", WASM_TARGET, "-C", "opt-level=s", "-C", "panic=abort", "-C", "codegen-units=1",
    "--remap-path-prefix", `${resolve(sdk)}=probegate-sdk`, "--remap-path-prefix", `${root}=.`,
  ];
  mkdirSync(workDir, { recursive: true });
  const rlib = join(workDir, "libprobegate_sdk.rlib");
  try {
    run(rustc, [...common, "--crate-type", "rlib", "--crate-name", "probegate_sdk", join(sdk, "src", "lib.rs"), "-o", rlib]);
  } catch (e) {
    throw compileError("compiling the Rust SDK", e);
  }
  const tmp = join(workDir, `${crateName}.wasm`);
  try {
    run(rustc, [...common, "-C", "lto", "-C", "strip=symbols", "--crate-type", "cdylib", "--crate-name", crateName, "-L", workDir, "--extern", `probegate_sdk=${rlib}`, entry, "-o", tmp]);
  } catch (e) {
    throw compileError(`compiling ${entry}`, e);
  }
  const bytes = readFileSync(tmp);
  writeAtomic(outFile, bytes);
  return bytes.length;
}

/** C: the plugin's sources plus the SDK's probegate.c, no libc, size-optimised. */
function buildC({ clang, lld, sources, sdk, outFile, root, health = false }) {
  const args = [
    // Health checks (probe storage/volume) compile the SDK's health section in; others get the same bytes as before it existed.
    ...(health ? ["-DPG_HEALTH"] : []),
    "--target=wasm32", "-nostdlib", "-ffreestanding", "-fno-builtin", "-mbulk-memory", "-Os", "-std=c11", "-Wall", "-Wextra",
    `-ffile-prefix-map=${resolve(sdk)}=probegate-sdk`, `-ffile-prefix-map=${root}=.`, "-I", sdk,
    "-Wl,--no-entry", "-Wl,--strip-all", "-Wl,-z,stack-size=65536",
    "-o", outFile, ...sources, join(sdk, "probegate.c"),
  ];
  mkdirSync(dirname(outFile), { recursive: true });
  try {
    // clang runs any wasm-opt it finds on PATH after linking (npm puts
    // binaryen's there): a PATH of just clang and wasm-ld keeps the output
    // the same wherever it is built.
    run(clang, args, { env: { ...process.env, PATH: [...new Set([dirname(clang), dirname(lld)])].join(delimiter) } });
  } catch (e) {
    throw compileError(`compiling ${sources.join(", ")}`, e);
  }
  return statSync(outFile).size;
}

/** Builds the project in `dir` as its package.json's "probegate" section says; returns the module's path. */
export function buildProject(dir) {
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const p = pkg.probegate ?? {};
  if (!p.name || !p.lang) throw new Error(`${join(dir, "package.json")} has no "probegate": {"lang", "name"} section`);
  const at = (f) => (isAbsolute(f) ? f : join(dir, f));
  const outFile = at(p.out ?? join("build", `${p.name}.wasm`));
  const started = Date.now();
  let size;
  if (p.lang === "rust") {
    const t = findRustc();
    if (!t.ok) throw new Error(t.why);
    size = buildRust({ rustc: t.path, entry: at(p.entry ?? "src/lib.rs"), crateName: p.name.replace(/-/g, "_"), sdk: at(p.sdk), outFile, workDir: at(join("build", "rust")), root: resolve(dir) });
  } else if (p.lang === "c") {
    const t = findClang();
    if (!t.ok) throw new Error(t.why);
    size = buildC({ clang: t.path, lld: t.lld, sources: (p.sources ?? ["src/check.c"]).map(at), sdk: at(p.sdk), outFile, root: resolve(dir), health: p.health === true });
  } else {
    throw new Error(`unknown "lang" ${JSON.stringify(p.lang)} (rust or c)`);
  }
  process.stderr.write(`built ${outFile} (${size} bytes, ${Date.now() - started} ms)\n`);
  return { wasm: outFile, fixtures: at(p.fixtures ?? "fixtures") };
}

/** The gateway's fixture runner: copied beside this file in a project, the compiled gateway in the repository. */
function runnerPath() {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, "plugin-test.mjs"), join(here, "..", "dist", "gateway", "src", "cli", "plugin-commands.js")];
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`no fixture runner (${candidates.join(" or ")}); run \`npm run build\` in probegate`);
  return found;
}

async function main(argv) {
  const dir = process.cwd();
  const [command, ...rest] = argv;
  if (command !== undefined && command !== "test" && command !== "run") throw new Error(`unknown command ${JSON.stringify(command)} (test, run)`);
  const { wasm, fixtures } = buildProject(dir);
  if (command === undefined) return 0;
  // The gateway's own fixture runner: same loader, sandbox and input builder as a node.
  const { runPluginCommand } = await import(pathToFileURL(runnerPath()).href);
  const args = command === "test" ? ["test", wasm, "--fixtures", fixtures, ...rest] : ["test", wasm, ...rest];
  return runPluginCommand(args, { stdout: process.stdout, stderr: process.stderr, cwd: dir });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (err) => {
      process.stderr.write(`build: ${err && err.message ? err.message : err}\n`);
      process.exitCode = 1;
    },
  );
}
