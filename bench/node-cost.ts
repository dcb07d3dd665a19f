// Section "nodecost" (issue #32): what one idle node pays per minute, side by
// side in one run: probegate between rounds (no client, no check due), probegate
// at a 10 s check cadence with the commands it runs, the exec readiness script
// run every 10 s with the same compiled fake tools, and the CSI livenessprobe
// sidecar when a binary of it is at hand (PROBEGATE_BENCH_LIVENESSPROBE; no Go
// toolchain here, so by default it is reported as not measured).
//
// Wake-ups are counted from the kernel, not sampled: every time a thread goes
// to sleep and is woken again it is switched out and in once, so the growth of
// voluntary_ctxt_switches + nonvoluntary_ctxt_switches in
// /proc/<pid>/task/<tid>/status over a window is the number of times that
// thread ran. CPU is the sum of the threads' on-CPU nanoseconds
// (/proc/<pid>/task/*/schedstat) plus the waited-for children's user+sys
// (/proc/<pid>/stat, clock ticks).
import { spawn } from "node:child_process";
import fs from "node:fs";
import type { ExecResult } from "./load/exec-runner.js";
import { sleep } from "./lib/net.js";
import { clockTicks, spawnerCpu } from "./lib/proc.js";
import { type RunningServer, startServer } from "./lib/server.js";
import type { ServerCtx, ServerTarget } from "./targets.js";

export interface ThreadCounts {
  /** on-CPU ns of every live thread, summed */
  cpuNs: number;
  /** context switches (voluntary + involuntary) of the main thread */
  mainSwitches: number;
  /** the same, summed over every live thread */
  allSwitches: number;
  threads: number;
  /** user+sys of waited-for children and of the command spawner with its commands, seconds (clock-tick resolution) */
  childrenSec: number;
}

function switchesOf(pid: number, tid: string): number {
  const s = fs.readFileSync(`/proc/${pid}/task/${tid}/status`, "utf8");
  let n = 0;
  for (const m of s.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)) n += Number(m[1]);
  return n;
}

export function threadCounts(pid: number): ThreadCounts {
  let cpuNs = 0;
  let all = 0;
  let threads = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      cpuNs += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      all += switchesOf(pid, tid);
      threads++;
    } catch {
      /* the thread ended between readdir and read */
    }
  }
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // The command spawner is part of the gateway: its CPU and wake-ups count with the gateway's.
  const sp = spawnerCpu(pid);
  return {
    cpuNs: cpuNs + sp.schedSec * 1e9,
    mainSwitches: switchesOf(pid, String(pid)),
    allSwitches: all + sp.switches,
    threads,
    childrenSec: (Number(f[13]) + Number(f[14])) / clockTicks() + sp.reapedSec,
  };
}

export interface WindowCost {
  seconds: number;
  /** main-thread wake-ups per second */
  mainWakeupsPerSec: number;
  allWakeupsPerSec: number;
  threads: number;
  /** CPU of the process's own threads, ms per minute */
  selfMsPerMin: number;
  /** CPU of the commands it ran (waited-for children), ms per minute */
  childrenMsPerMin: number;
}

function windowCost(a: ThreadCounts, b: ThreadCounts, seconds: number): WindowCost {
  const perMin = 60 / seconds;
  return {
    seconds,
    mainWakeupsPerSec: (b.mainSwitches - a.mainSwitches) / seconds,
    allWakeupsPerSec: (b.allSwitches - a.allSwitches) / seconds,
    threads: b.threads,
    selfMsPerMin: ((b.cpuNs - a.cpuNs) / 1e6) * perMin,
    childrenMsPerMin: (b.childrenSec - a.childrenSec) * 1000 * perMin,
  };
}

export interface NodeCostRun {
  runtime: string;
  /** probegate with --check-interval 1h: no client, no check due */
  idle?: WindowCost;
  /** probegate with --check-interval 10s */
  rounds?: WindowCost;
  /** gateway CPU of one round: (rounds − idle) / rounds per minute, ms */
  roundGatewayMs?: number;
  /** CPU of the commands of one round, ms */
  roundCommandsMs?: number;
  rssIdleMiB?: number;
  errors: string[];
}

export interface NodeCostResult {
  cadenceSec: number;
  runs: NodeCostRun[];
  /** the exec script, every cadenceSec, same compiled fake tools */
  exec?: { cpuPerRunMs: number; msPerMin: number; runs: number; failures: number };
  livenessprobe?: { binary: string; idle: WindowCost; probed: WindowCost; rssMiB: number } | { note: string };
}

export interface NodeCostOptions {
  quick: boolean;
  target: ServerTarget;
  runtimes: { bin: string; version: string }[];
  ctx: (name: string, node?: string) => Promise<ServerCtx>;
  log: (s: string) => void;
  /** Runs the exec script N times (exec-runner as a child), same tools as probegate's. */
  runExec: (iterations: number) => Promise<ExecResult>;
}

const CADENCE_SEC = 10;

function withInterval(t: ServerTarget, interval: string): ServerTarget {
  return {
    ...t,
    command: (c) => {
      const base = t.command(c);
      return { ...base, args: [...base.args, "--check-interval", interval] };
    },
  };
}

async function measure(s: RunningServer, settleSec: number, windowSec: number): Promise<WindowCost> {
  // Start-up work (compilation, the first rounds, V8's memory reducer after
  // them) is not what a node pays between rounds: let it pass.
  await sleep(settleSec * 1000);
  const a = threadCounts(s.pid);
  await sleep(windowSec * 1000);
  const why = s.gone();
  if (why) throw new Error(`server ${why}`);
  return windowCost(a, threadCounts(s.pid), windowSec);
}

export async function measureNodeCost(o: NodeCostOptions): Promise<NodeCostResult> {
  // V8's memory reducer runs its full collections ~25 s after start: past them in both modes.
  const settle = 30;
  const idleWindow = o.quick ? 30 : 60;
  const roundsWindow = o.quick ? 60 : 120;
  const out: NodeCostResult = { cadenceSec: CADENCE_SEC, runs: [] };
  for (const rt of o.runtimes) {
    const run: NodeCostRun = { runtime: rt.version, errors: [] };
    out.runs.push(run);
    for (const [kind, interval, windowSec] of [["idle", "1h", idleWindow], ["rounds", `${CADENCE_SEC}s`, roundsWindow]] as const) {
      o.log(`nodecost: probegate on Node ${rt.version}, ${kind} (--check-interval ${interval}), ${settle} s settle + ${windowSec} s`);
      let s: RunningServer | undefined;
      try {
        const ctx = await o.ctx(`nodecost-${kind}`, rt.bin);
        s = await startServer(withInterval(o.target, interval), ctx);
        const w = await measure(s, settle, windowSec);
        run[kind] = w;
        if (kind === "idle") run.rssIdleMiB = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${s.pid}/status`, "utf8"))?.[1]) / 1024;
      } catch (e) {
        run.errors.push(`${kind}: ${(e as Error).message}`);
      } finally {
        await s?.stop();
      }
    }
    if (run.idle && run.rounds) {
      const perMin = 60 / CADENCE_SEC;
      run.roundGatewayMs = (run.rounds.selfMsPerMin - run.idle.selfMsPerMin) / perMin;
      run.roundCommandsMs = run.rounds.childrenMsPerMin / perMin;
    }
  }
  const n = o.quick ? 20 : 60;
  o.log(`nodecost: exec readiness script × ${n}`);
  try {
    const e = await o.runExec(n);
    out.exec = { cpuPerRunMs: e.cpuPerRunUs / 1000, msPerMin: (e.cpuPerRunUs / 1000) * (60 / CADENCE_SEC), runs: e.wall.count, failures: e.failures };
  } catch (e) {
    o.log(`nodecost: exec script: ${(e as Error).message}`);
  }
  out.livenessprobe = await measureLivenessprobe(o, settle, idleWindow);
  return out;
}

/**
 * The CSI livenessprobe sidecar (Go), idle and probed every 10 s, when
 * PROBEGATE_BENCH_LIVENESSPROBE names its binary. It needs a CSI endpoint to
 * watch: probegate's socket is used, so its own probes reach a real server.
 */
async function measureLivenessprobe(o: NodeCostOptions, settle: number, windowSec: number): Promise<NodeCostResult["livenessprobe"]> {
  const bin = process.env.PROBEGATE_BENCH_LIVENESSPROBE;
  if (!bin || !fs.existsSync(bin)) {
    return { note: "not measured: no livenessprobe binary (set PROBEGATE_BENCH_LIVENESSPROBE; building it needs a Go toolchain and its modules, which this machine does not have)" };
  }
  const ctx = await o.ctx("nodecost-lp");
  const gw = await startServer(withInterval(o.target, "1h"), ctx);
  const port = ctx.port + 1;
  const lp = spawn(bin, [`--csi-address=${ctx.socket}`, `--http-endpoint=127.0.0.1:${port}`], { stdio: "ignore" });
  try {
    await sleep(settle * 1000);
    const a = threadCounts(lp.pid!);
    await sleep(windowSec * 1000);
    const idle = windowCost(a, threadCounts(lp.pid!), windowSec);
    const b = threadCounts(lp.pid!);
    const t0 = Date.now();
    while (Date.now() - t0 < windowSec * 1000) {
      await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.text()).catch(() => "");
      await sleep(CADENCE_SEC * 1000);
    }
    const probed = windowCost(b, threadCounts(lp.pid!), (Date.now() - t0) / 1000);
    const rssMiB = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${lp.pid}/status`, "utf8"))?.[1]) / 1024;
    return { binary: bin, idle, probed, rssMiB };
  } finally {
    lp.kill("SIGTERM");
    await gw.stop();
  }
}
