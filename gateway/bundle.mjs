#!/usr/bin/env node
// Bundles the compiled gateway (dist/gateway/src, from tsc) into
// dist/gateway/bundle/, what bin/probegate.js runs. Measured in bench/README.md
// ("Footprint"): V8 keeps the source text of every loaded script and a record
// per ES module, so one tree-shaken, whitespace-minified bundle instead of ~300
// modules is ~4.5 MiB less RSS on Node 20 (~2.5 MiB on 24) at no CPU cost.
// Identifiers are not minified: function and class names stay as written, in
// stack traces and in error types in logs, and the sandbox worker's source
// (a function sent as text) stays self-contained. Dynamic imports (gateway
// mode, the plugin commands, first-use modules) stay separate chunks that load
// on first use, as before.
//
// Run after tsc (`npm run ts:build` does both).

import { existsSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const ENTRY = join(ROOT, "dist", "gateway", "src", "cli", "main.js");
const OUT = join(ROOT, "dist", "gateway", "bundle");

async function main() {
  if (!existsSync(ENTRY)) throw new Error(`${relative(ROOT, ENTRY)} is missing: run tsc first (npm run ts:build)`);
  rmSync(OUT, { recursive: true, force: true });
  const { build } = await import("esbuild");
  await build({
    entryPoints: { main: ENTRY },
    outdir: OUT,
    bundle: true,
    splitting: true,
    platform: "node",
    format: "esm",
    target: "node20",
    minifyWhitespace: true,
    minifySyntax: true,
    // Loaded as installed: pino finds its transport workers by file path at run time.
    external: ["pino"],
    // Bundled CommonJS dependencies call require() for Node builtins.
    banner: { js: "import { createRequire as __pgCreateRequire } from 'node:module'; const require = __pgCreateRequire(import.meta.url);" },
    legalComments: "inline",
    logLevel: "error",
  });
}

main().catch((err) => {
  process.stderr.write(`bundle: failed: ${err && err.stack ? err.stack : err}\n`);
  process.exitCode = 1;
});
