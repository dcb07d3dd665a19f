#!/usr/bin/env node
// probegate-plugin: the SDK's command line, for standalone plugin projects.
//
//   probegate-plugin build [ENTRY] [--out FILE] [--config FILE] [--target NAME]
//   probegate-plugin test PLUGIN.wasm --fixtures PATH... (same as `probegate plugin test`)

import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { buildPlugin, compilerVersion } from "./build.mjs";

const SDK_DIR = dirname(dirname(fileURLToPath(import.meta.url)));

const USAGE = `usage: probegate-plugin <command> [options]

commands:
  build [ENTRY] [--out FILE] [--config FILE] [--target NAME]
        compile ENTRY (default assembly/index.ts) to FILE (default build/plugin.wasm)
        with the SDK's compiler options (or ./asconfig.json, which extends them),
        refuse imports/exports the gateway would refuse, warn about leaks
  test PLUGIN.wasm [--fixtures PATH...] [options]
        the gateway's own \`probegate plugin test\`, bundled with this SDK
        (run "probegate-plugin test --help")
  version   SDK version, plugin ABI and compiler version
`;

async function build(args) {
  const { values, positionals } = parseArgs({
    args,
    options: { out: { type: "string", short: "o" }, config: { type: "string" }, target: { type: "string" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length > 1) throw new Error(`unexpected argument ${JSON.stringify(positionals[1])}`);
  const entry = positionals[0] ?? "assembly/index.ts";
  const outFile = values.out ?? join("build", "plugin.wasm");
  if (!existsSync(entry)) throw new Error(`no ${entry} (run from the plugin project's directory, or name the entry file)`);
  const started = Date.now();
  const r = await buildPlugin({ entry, outFile, config: values.config, target: values.target });
  if (!r.ok) {
    process.stderr.write(`probegate-plugin build: FAILED ${entry}:\n${r.error}\n`);
    return 1;
  }
  for (const w of r.warnings) process.stderr.write(`probegate-plugin build: warning: ${w}\n`);
  process.stderr.write(`probegate-plugin build: built ${outFile} (${r.size} bytes, ${Date.now() - started} ms)\n`);
  return 0;
}

async function test(args) {
  // Packed SDKs carry the gateway's runner as one bundled file; inside the
  // probegate repository the compiled gateway serves instead.
  const bundled = join(SDK_DIR, "runner", "plugin-test.mjs");
  const inRepo = join(SDK_DIR, "..", "..", "dist", "gateway", "src", "cli", "plugin-commands.js");
  const path = existsSync(bundled) ? bundled : inRepo;
  if (!existsSync(path)) throw new Error("this copy of the SDK has no fixture runner (runner/plugin-test.mjs); use a packed SDK or run `npm run build` in probegate");
  const { runPluginCommand } = await import(pathToFileURL(path).href);
  return runPluginCommand(["test", ...args], { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() });
}

async function main(argv) {
  const [command, ...rest] = argv;
  switch (command) {
    case "build":
      return build(rest);
    case "test":
      return test(rest);
    case "version": {
      const pkg = JSON.parse(readFileSync(join(SDK_DIR, "package.json"), "utf8"));
      process.stdout.write(`${pkg.name} ${pkg.version} (plugin ABI ${pkg.probegate.abi}, assemblyscript ${await compilerVersion()})\n`);
      return 0;
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new Error(`unknown command ${JSON.stringify(command)} (build, test, version)`);
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err) => {
    process.stderr.write(`probegate-plugin: ${err && err.message ? err.message : err}\n`);
    process.exitCode = 2;
  },
);
