#!/usr/bin/env -S MALLOC_MMAP_THRESHOLD_=131072 node --no-node-snapshot --no-maglev --max-semi-space-size=1 --max-old-space-size=48
// The node flags keep a long-running gateway small and flat (measured in bench/):
// the heap caps stop RSS climbing under steady Probe load until V8 gets round to
// a full collection; booting without Node's built-in startup snapshot costs
// ~30 ms once and saves 2-8 MiB for good; --no-maglev keeps Node 24 (V8 13) from
// running its mid-tier compiler, as Node 20 does not: 6-15 MiB less on Node 24 at the
// same CPU per Probe (docs/performance.md, bench/README.md "What was tried").
// MALLOC_MMAP_THRESHOLD_ fixes glibc's threshold at its default: once it is raised
// by a large free (its default behaviour), blocks that size stay resident for good.
// Use the same flags and environment when starting it as `node bin/probegate.js`.
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
