#!/usr/bin/env -S node --max-semi-space-size=1 --max-old-space-size=48
// The heap flags keep a long-running gateway small and flat (measured in bench/:
// without them RSS keeps climbing under steady Probe load until V8 gets round to
// a full collection). Use the same flags when starting it as `node bin/probegate.js`.
// Thin launcher: the CLI is compiled TypeScript under dist/ (built by `npm ci` via the prepare script),
// bundled into one tree-shaken file plus lazily loaded chunks (gateway/bundle.mjs: less resident memory).
import { main } from "../dist/gateway/bundle/main.js";

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
