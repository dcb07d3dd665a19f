// The shape of one benchmark run, as written to bench/results/*.json.
import type { H2loadResult } from "../load/h2load.js";
import type { ExecResult } from "../load/exec-runner.js";
import type { NewConnResult } from "../load/newconn-client.js";
import type { PluginCostResult } from "../load/plugin-cost.js";
import type { FootprintRun } from "../footprint.js";
import type { NodeCostResult } from "../node-cost.js";

export interface NewConnRow {
  rate: number;
  pollers: number;
  result: NewConnResult;
  /** Server user+sys during the measured window, seconds. */
  serverCpuSec: number;
  serverSchedSec: number;
  serverCpuPerProbeUs: number;
}

export interface H2Row {
  name: string;
  h2: H2loadResult;
  serverCpuSec: number;
  /** server CPU / requests, µs */
  cpuPerReqUs: number;
  /** server CPU / wall: 1.0 = one core busy */
  serverCores: number;
}

export interface MemoryRow {
  rssStartMiB: number;
  rss100kMiB: number;
  rss200kMiB: number;
  growthPct: number;
  probesPerPhase: number;
}

export interface ServerResult {
  id: string;
  label: string;
  role: "subject" | "peer";
  available: boolean;
  error?: string;
  notes: string[];
  rssStartMiB?: number;
  newconn: NewConnRow[];
  /** persistent connections, max throughput (h2load -c 8 -m 4) */
  throughput?: H2Row;
  /** persistent, 1 connection 1 stream: CPU per Probe at 1 client */
  singleClient?: H2Row;
  http: H2Row[];
  memory?: MemoryRow;
  /** process.version of the runtime the server ran on */
  node?: string;
}

export interface ExecRow {
  label: string;
  result: ExecResult;
}

export interface ProfileFrame {
  selfPct: number;
  selfMs: number;
  fn: string;
  where: string;
}

export interface ProfileResult {
  target: string;
  totalMs: number;
  reqPerSec: number;
  top: ProfileFrame[];
  byPackage: { pkg: string; selfPct: number }[];
  file: string;
}

export interface TargetCheck {
  id: string;
  what: string;
  measured: string;
  limit: string;
  pass: boolean | null;
}

export interface BenchResult {
  meta: {
    startedAt: string;
    finishedAt: string;
    quick: boolean;
    sections: string[];
    node: string;
    cpus: number;
    cpuModel: string;
    h2load: string;
    clockTicks: number;
    /** --pin: the CPUs of the server and of the load; null when not pinned */
    pinned?: { server: string; load: string } | null;
    /** 1, 5 and 15 min load averages at the start: a loaded machine gives noisy CPU figures */
    loadavg?: number[];
  };
  servers: ServerResult[];
  exec: ExecRow[];
  plugins?: PluginCostResult;
  profile?: ProfileResult;
  footprint?: FootprintRun[];
  /** issue #32: what one idle node pays per minute */
  nodeCost?: NodeCostResult;
  targets: TargetCheck[];
}
