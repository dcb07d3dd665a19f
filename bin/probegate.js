#!/usr/bin/env node
// Thin launcher: the CLI is compiled TypeScript under dist/ (built by `npm ci` via the prepare script).
import { main } from "../dist/gateway/src/cli/main.js";

main(process.argv.slice(2)).then(
  (code) => {
    // Exit explicitly: watchers and worker threads must not keep a stopped gateway alive.
    process.exitCode = code;
    setImmediate(() => process.exit(code));
  },
  (err) => {
    process.stderr.write(`probegate: ${err && err.stack ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
