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
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
