#!/usr/bin/env node
// Thin launcher: the CLI is compiled TypeScript under dist/ (built by `npm ci` via the prepare script).
import { main } from "../dist/gateway/src/cli/main.js";

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === "number") process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`probegate: ${err && err.message ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
