import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "gateway/test/**/*.test.ts",
      "plugins/test/**/*.test.ts",
      "deploy/test/**/*.test.ts",
      "bench/test/**/*.test.ts",
    ],
    // Integration tests start real gateway processes; this machine has 2 shared cores.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ["default", "json"],
    outputFile: { json: "dist/test-results.json" },
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
