// How probegate is started wherever it is measured: as the bin/probegate.js
// shebang, npm start and the image's ENTRYPOINT and ENV start it
// (deploy/test/image.test.ts holds them all to the same).

/** The node flags. */
export const PROBEGATE_NODE_FLAGS = ["--no-node-snapshot", "--no-maglev", "--max-semi-space-size=1", "--max-old-space-size=48"];

/** The environment: glibc's mmap threshold fixed at its default (docs/performance.md, "Memory"). */
export const PROBEGATE_NODE_ENV: Record<string, string> = { MALLOC_MMAP_THRESHOLD_: "131072" };
