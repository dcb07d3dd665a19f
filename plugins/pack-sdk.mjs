#!/usr/bin/env node
// Packs the plugin SDK (plugins/sdk) into dist/sdk/<name>-<version>.tgz, the
// `npm pack` output that `probegate plugin new` copies into new projects so
// they install without a registry. The gateway's `plugin test` is bundled in
// as runner/plugin-test.mjs (one file, no dependencies), so a project's
// `npm test` runs fixtures through the gateway's own sandbox and input builder.
//
// Run after `npm run ts:build` (the bundle is made from dist/).

import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const PLUGINS_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(PLUGINS_DIR);
const SDK = join(PLUGINS_DIR, "sdk");
const OUT = join(ROOT, "dist", "sdk");
const STAGE = join(OUT, "package");

export function packedSdkName() {
  const pkg = JSON.parse(readFileSync(join(SDK, "package.json"), "utf8"));
  return `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`;
}

async function main() {
  const entry = join(ROOT, "dist", "gateway", "src", "cli", "plugin-commands.js");
  if (!existsSync(entry)) throw new Error(`${relative(ROOT, entry)} is missing: run npm run ts:build first`);
  rmSync(STAGE, { recursive: true, force: true });
  mkdirSync(STAGE, { recursive: true });
  cpSync(SDK, STAGE, { recursive: true, filter: (src) => !src.includes("node_modules") });
  const { build } = await import("esbuild");
  await build({
    entryPoints: [entry],
    outfile: join(STAGE, "runner", "plugin-test.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Bundled CommonJS dependencies (yaml, pino) call require() for Node builtins.
    banner: { js: "import { createRequire as __pgCreateRequire } from 'node:module'; const require = __pgCreateRequire(import.meta.url);" },
    legalComments: "inline",
    logLevel: "error",
  });
  for (const f of readdirSync(OUT)) if (f.endsWith(".tgz")) rmSync(join(OUT, f));
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", OUT], { cwd: STAGE, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const [info] = JSON.parse(out);
  process.stderr.write(`sdk: packed ${relative(process.cwd(), join(OUT, info.filename))} (${info.entryCount} files, ${info.size} bytes)\n`);
}

main().catch((err) => {
  process.stderr.write(`sdk: pack failed: ${err && err.stack ? err.stack : err}\n`);
  process.exitCode = 1;
});
