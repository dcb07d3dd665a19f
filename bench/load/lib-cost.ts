// One library's cost at start: a fresh node (probegate's heap flags, --expose-gc)
// imports `module` and reports its RSS and V8 heap after a full GC. The
// orchestrator subtracts the same figures of an empty import ("none").
import fs from "node:fs";
import { pathToFileURL } from "node:url";
import { runAsChild } from "../lib/main.js";

export interface LibCostParams {
  /** a package name, a node: builtin, a file path, or "none" */
  module: string;
}

export interface LibCostResult {
  module: string;
  rssMiB: number;
  anonMiB: number;
  fileMiB: number;
  heapUsedMiB: number;
  externalMiB: number;
}

runAsChild<LibCostParams, LibCostResult>(import.meta.url, async ({ module }) => {
  if (module !== "none") await import(module.startsWith("/") ? pathToFileURL(module).href : module);
  await new Promise((r) => setTimeout(r, 200));
  (globalThis as { gc?: () => void }).gc?.();
  const status = fs.readFileSync("/proc/self/status", "utf8");
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN) / 1024;
  const mu = process.memoryUsage();
  return {
    module,
    rssMiB: kb("VmRSS"),
    anonMiB: kb("RssAnon"),
    fileMiB: kb("RssFile"),
    heapUsedMiB: mu.heapUsed / 1048576,
    externalMiB: mu.external / 1048576,
  };
});
