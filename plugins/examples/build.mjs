#!/usr/bin/env node
// Rebuilds the committed example modules (net-interfaces in Rust and C, ABI v2)
// with plugins/native-build.mjs and records the compilers that made them in
// toolchains.json. The modules are committed so that `npm test` on a machine
// without rustc or clang still runs every test on them; plugins/test/examples.test.ts
// rebuilds them when the compilers are here and says whether the bytes match.
//
//   node plugins/examples/build.mjs      (npm run examples:build)

import { readdirSync, existsSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildProject, findClang, findRustc } from "../native-build.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));

export function exampleDirs() {
  return readdirSync(HERE, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(HERE, e.name, "package.json")))
    .map((e) => join(HERE, e.name))
    .sort();
}

function main() {
  const rust = findRustc();
  const clang = findClang();
  let failed = 0;
  for (const dir of exampleDirs()) {
    try {
      buildProject(dir);
    } catch (err) {
      failed++;
      process.stderr.write(`examples: ${dir}: ${err.message}\n`);
    }
  }
  if (failed === 0) {
    writeFileSync(join(HERE, "toolchains.json"), `${JSON.stringify({ rustc: rust.ok ? rust.version : null, clang: clang.ok ? clang.version : null }, null, 2)}\n`);
  }
  return failed === 0 ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main();
