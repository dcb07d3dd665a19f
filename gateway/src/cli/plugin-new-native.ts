// The Rust and C project templates of `probegate plugin new --lang rust|c`
// (ABI v2). A project is self-contained: the SDK's sources in vendor/, the
// build script (plugins/native-build.mjs) and the gateway's fixture runner
// (the bundle the packed AssemblyScript SDK carries) in tools/, so `npm test`
// needs node and the compiler, nothing from a registry.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { ProjectFile } from "./plugin-new.js";

type Lang = "rust" | "c";

/** Every file of a new Rust or C project, from the probegate tree at `root`. */
export function nativeProjectFiles(lang: Lang, name: string, source: string, root: string, fixtures: [pass: string, fail: string]): ProjectFile[] {
  const sdkDir = join(root, "plugins", lang === "rust" ? "sdk-rust" : "sdk-c");
  const buildScript = join(root, "plugins", "native-build.mjs");
  const runner = join(root, "dist", "sdk", "package", "runner", "plugin-test.mjs");
  for (const [path, hint] of [
    [sdkDir, "this installation does not ship the SDK sources"],
    [buildScript, "this installation does not ship plugins/native-build.mjs"],
    [runner, "run `npm run build` (or `npm run sdk:pack`) in " + root],
  ] as const) {
    if (!existsSync(path)) throw new Error(`${path} is missing: ${hint}`);
  }
  const vendor = lang === "rust" ? "vendor/probegate-sdk" : "vendor/probegate-sdk-c";
  const sdkFiles: ProjectFile[] = walk(sdkDir).map((rel) => ({ rel: `${vendor}/${rel}`, from: join(sdkDir, rel) }));
  const common: ProjectFile[] = [
    { rel: "package.json", text: packageJson(lang, name, vendor) },
    { rel: "tools/build.mjs", from: buildScript },
    { rel: "tools/plugin-test.mjs", from: runner },
    { rel: "fixtures/two-lines.yaml", text: fixtures[0] },
    { rel: "fixtures/one-line.yaml", text: fixtures[1] },
    { rel: ".gitignore", text: lang === "rust" ? "build/\ntarget/\n" : "build/\n" },
    { rel: "README.md", text: readme(lang, name, source, vendor) },
  ];
  const code: ProjectFile[] =
    lang === "rust"
      ? [
          { rel: "Cargo.toml", text: cargoToml(name) },
          { rel: "src/lib.rs", text: rustTemplate(name, source) },
        ]
      : [{ rel: "src/check.c", text: cTemplate(name, source) }];
  return [...common, ...code, ...sdkFiles];
}

/** Relative paths of the files under `dir` (the SDKs are two flat-ish trees of sources). */
function walk(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) {
      if (e.name !== "target") out.push(...walk(dir, rel));
    } else if (e.isFile()) out.push(rel);
  }
  return out.sort();
}

function packageJson(lang: Lang, name: string, vendor: string): string {
  const probegate = lang === "rust" ? { lang, name, sdk: vendor } : { lang, name, sdk: vendor, sources: ["src/check.c"] };
  return `${JSON.stringify(
    {
      name,
      version: "0.1.0",
      private: true,
      description: `probegate check plugin ${name} (${lang === "rust" ? "Rust" : "C"}, plugin ABI v2)`,
      type: "module",
      scripts: { build: "node tools/build.mjs", test: "node tools/build.mjs test" },
      probegate,
    },
    null,
    2,
  )}\n`;
}

function cargoToml(name: string): string {
  return `# For cargo and editors; \`npm test\` (tools/build.mjs) calls rustc directly with the
# same settings, so a rustup toolchain without the wasm32 target is never used by accident.
[package]
name = "${name}"
version = "0.1.0"
edition = "2021"
rust-version = "1.63"
publish = false

[lib]
crate-type = ["cdylib"]
path = "src/lib.rs"

[dependencies]
probegate-sdk = { path = "vendor/probegate-sdk" }

# Small modules: plugins ship in a ConfigMap.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
panic = "abort"
strip = true
`;
}

function rustTemplate(name: string, source: string): string {
  return `// ${name}: TODO say what this check proves and why it matters.
use probegate_sdk::text::{int, lines};
use probegate_sdk::{log, open_source, parse_error, Input, Manifest, Verdict};

const SOURCE: &str = "${source}";
// TODO replace this rule: the source must print at least MIN_LINES non-empty lines.
const MIN_LINES: i64 = 2;

fn manifest() -> Manifest {
    Manifest::new("${name}", "0.1.0", "TODO one-line description").source(SOURCE)
}

// open_source() answers a missing or failed source and empty or binary output
// itself (SourceMissing, SourceFailed, ParseError).
fn check(input: &Input) -> Verdict {
    let o = match open_source(input, SOURCE) {
        Ok(o) => o,
        Err(v) => return v,
    };
    let count = lines(o.text).filter(|l| !l.trim().is_empty()).count() as i64;
    // Shown by \`npm test\` when a case fails, and in the gateway log at --log-level debug.
    log(&(String::from(SOURCE) + ": " + &int(count) + " non-empty line(s)"));
    if count == 0 {
        return parse_error(o.source, "no content");
    }
    if count < MIN_LINES {
        return Verdict::fail("TooFewLines", String::from(SOURCE) + " printed " + &int(count) + " line(s); need " + &int(MIN_LINES));
    }
    Verdict::pass("Ok", String::from(SOURCE) + " printed " + &int(count) + " line(s)")
}

probegate_sdk::export_plugin!(manifest, check);
`;
}

function cTemplate(name: string, source: string): string {
  return `/* ${name}: TODO say what this check proves and why it matters. */
#include "probegate.h"

#define SOURCE "${source}"
/* TODO replace this rule: the source must print at least MIN_LINES non-empty lines. */
#define MIN_LINES 2

pg_manifest_builder *probegate_manifest(void) {
  return pg_manifest_source(pg_manifest_new("${name}", "0.1.0", "TODO one-line description"), SOURCE);
}

/* pg_open_source() answers a missing or failed source and empty or binary
 * output itself (SourceMissing, SourceFailed, ParseError). Memory comes from
 * the SDK's arena, which the host resets after every call: nothing to free. */
pg_verdict *probegate_check(const pg_input *in) {
  pg_opened o = pg_open_source(in, SOURCE);
  if (o.failure) return o.failure;
  long long count = 0;
  size_t pos = 0;
  pg_str line, field;
  while (pg_next_line(o.text, &pos, &line))
    if (pg_fields(line, &field, 1) > 0) count++;
  pg_buf msg = {0};
  pg_buf_add(&msg, SOURCE ": ");
  pg_buf_add_int(&msg, count);
  pg_buf_add(&msg, " non-empty line(s)");
  /* Shown by \`npm test\` when a case fails, and in the gateway log at --log-level debug. */
  pg_log(pg_buf_str(&msg));
  if (count == 0) return pg_parse_error(o.source, pg_cstr("no content"));
  pg_buf out = {0};
  pg_buf_add(&out, SOURCE " printed ");
  pg_buf_add_int(&out, count);
  pg_buf_add(&out, " line(s)");
  if (count < MIN_LINES) {
    pg_buf_add(&out, "; need ");
    pg_buf_add_int(&out, MIN_LINES);
    return pg_fail("TooFewLines", pg_buf_str(&out));
  }
  return pg_pass("Ok", pg_buf_str(&out));
}
`;
}

function readme(lang: Lang, name: string, source: string, vendor: string): string {
  const rust = lang === "rust";
  const code = rust ? "src/lib.rs" : "src/check.c";
  const install = rust ? "apt-get install rustc libstd-rust-dev-wasm32" : "apt-get install clang lld";
  return `# ${name}

A probegate check plugin in ${rust ? "Rust" : "C"} (plugin ABI v2). TODO: what it
verifies, its reasons (\`Ok\`, \`TooFewLines\`, and the SDK's \`BadInput\`,
\`SourceMissing\`, \`SourceFailed\`, \`ParseError\`) and any facts it emits.

## The loop

    npm test           # = node tools/build.mjs test: build/${name}.wasm, then every fixtures/*.yaml
    npm run build      # build only

No \`npm install\`: the SDK is in \`${vendor}/\`, the build script and the
gateway's own fixture runner in \`tools/\`. The compiler comes from the system
(Debian/Ubuntu: \`${install}\`)${
    rust
      ? `; the build picks the first \`rustc\` that has the \`wasm32-unknown-unknown\`
target (\`PROBEGATE_RUSTC\` overrides), so a rustup toolchain earlier on PATH
without it is skipped. \`cargo build --release --target wasm32-unknown-unknown\`
works too (Cargo.toml has the same size-optimised profile) with a cargo whose
rustc has the target.`
      : ` with \`wasm-ld\`; no libc is linked (\`PROBEGATE_CLANG\` overrides).`
  }

Edit \`${code}\`, add a fixture for every case that matters (a saved output
from a real node is best), and repeat. A failing case prints expected and
actual side by side, with the plugin's \`log\` lines. One case by hand, with
its traces (the options of \`probegate plugin test\`):

    node tools/build.mjs run --source ${source}=saved-output.txt
    node tools/build.mjs run --source-fault ${source}=not-found

## Fixtures

One case per file in \`fixtures/\`, the same format as every probegate plugin
(probegate's plugins/README.md, "Fixture files"): \`sources\` (stdout, stderr,
exitCode, fault), optional \`facts\`, \`config\`, \`mode\`, and \`expect\`
(status, reason, a message substring, facts).

## Deploy

Copy \`build/${name}.wasm\` into the gateway's \`--plugins-dir\` (on Kubernetes:
add it to the plugins ConfigMap); it is loaded within seconds beside the
AssemblyScript plugins, without a restart, and listed by
\`curl -s 'localhost:29763/readyz?verbose'\`. \`probegate plugin inspect
build/${name}.wasm\` says whether the gateway accepts it.

## The SDK

\`${vendor}/\` (ABI v2: \`plugins/ABI.md\` in probegate) is a copy made by the
probegate installation that created this project${
    rust
      ? `: \`#![no_std]\` with \`alloc\`, no
dependencies. \`Manifest\` and \`Verdict\` are builders, \`Input\` is the typed
input (\`source\`, \`fact\`, \`config_strings\`/\`config_int\`/…), \`open_source\`
answers the common failures, \`log\` traces, \`text\` holds line and field
helpers, \`json\` a small reader/writer. Memory is a bump arena the host resets
after every call: keep nothing in statics across calls.`
      : `: \`probegate.h\` documents the API —
\`pg_manifest_new\`/\`pg_manifest_*\` build the manifest, \`pg_pass\`/\`pg_warn\`/
\`pg_fail\`/\`pg_fact\` the verdict, \`pg_input_source\`/\`pg_config_*\` read the
input, \`pg_open_source\` answers the common failures, \`pg_log\` traces. Memory
comes from an arena the host resets after every call: nothing to free, nothing
to keep across calls.`
  }
`;
}
