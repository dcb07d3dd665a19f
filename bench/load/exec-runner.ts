// Runs the exec-style readiness script N times, sequentially, as kubelet would
// (one exec per period), and reports wall time per invocation and CPU per
// invocation including every child (bash, lnetctl, grep, awk, timeout...).
// Runs as its own process: its cutime/cstime then hold only the scripts' CPU.
import { spawnSync } from "node:child_process";
import { cpuSample } from "../lib/proc.js";
import { type LatencySummary, newHistogram, summarize } from "../lib/hist.js";
import { runAsChild } from "../lib/main.js";

export interface ExecParams {
  script: string;
  /** Directory holding lnetctl/lctl, put first on PATH. */
  fakeBin: string;
  scenario: string;
  iterations: number;
}

export interface ExecResult {
  params: ExecParams;
  wall: LatencySummary;
  /** user+sys of the script and all its descendants, per invocation (mean), µs. */
  cpuPerRunUs: number;
  failures: number;
  firstOutput: string;
}

export function runExec(p: ExecParams): ExecResult {
  const env = { ...process.env, PATH: `${p.fakeBin}:${process.env.PATH}`, PROBEGATE_FAKE_LNET: p.scenario };
  const h = newHistogram();
  let failures = 0;
  let firstOutput = "";
  // one unmeasured run warms the page cache
  spawnSync("bash", [p.script], { env, encoding: "utf8" });
  const c0 = cpuSample("self");
  for (let i = 0; i < p.iterations; i++) {
    const t = performance.now();
    const r = spawnSync("bash", [p.script], { env, encoding: "utf8" });
    h.recordValue(Math.max(1, Math.round((performance.now() - t) * 1000)));
    if (r.status !== 0) failures++;
    if (i === 0) firstOutput = (r.stdout + r.stderr).trim();
  }
  const c1 = cpuSample("self");
  return {
    params: p,
    wall: summarize(h),
    cpuPerRunUs: ((c1.children - c0.children) / p.iterations) * 1e6,
    failures,
    firstOutput,
  };
}

runAsChild(import.meta.url, (params: ExecParams) => runExec(params));
