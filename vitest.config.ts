import { defineConfig } from "vitest/config";

const INCLUDE = [
  "gateway/test/**/*.test.ts",
  "plugins/test/**/*.test.ts",
  "deploy/test/**/*.test.ts",
  "bench/test/**/*.test.ts",
];

// Files that judge the gateway by how soon it answers while they load it
// (connection floods, the short soak): they run last and one at a time, so
// that what they measure is the gateway under their own attack, not the
// gateway starved by another test file compiling Rust or flooding its own
// gateway on the other core. Side by side with the rest they failed now and
// then on this 2-core machine (a Probe queued for over 2 s behind a starved
// accept queue), which says nothing about the gateway.
const ALONE = ["gateway/test/probe-port-lockout.test.ts", "gateway/test/soak-short.test.ts"];

export default defineConfig({
  test: {
    // Integration tests start real gateway processes; this machine has 2 shared cores.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ["default", "json"],
    outputFile: { json: "dist/test-results.json" },
    pool: "forks",
    // Root-level only: a project may not set its own maxForks (vitest 3).
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          include: INCLUDE,
          exclude: ALONE,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "alone",
          include: ALONE,
          // One child runs the files one after another; the group runs after "shared" has ended.
          poolOptions: { forks: { singleFork: true } },
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
