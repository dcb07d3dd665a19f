// Section "nodecost" (issues #32, #43): what one node pays per minute, side by
// side in one run: probegate between rounds (no client, no check due), probegate
// at a 10 s check cadence on three fake nodes (LNet alone; a Lustre client with
// 1 and with 8 mounted volumes; lib/cost-nodes.ts) with the commands it runs,
// the exec readiness script run every 10 s with the same compiled fake tools,
// and the CSI livenessprobe sidecar when a binary of it is at hand
// (PROBEGATE_BENCH_LIVENESSPROBE; no Go toolchain here, so by default it is
// reported as not measured).
//
// Wake-ups are counted from the kernel, not sampled: every time a thread goes
// to sleep and is woken again it is switched out and in once, so the growth of
// voluntary_ctxt_switches + nonvoluntary_ctxt_switches in
// /proc/<pid>/task/<tid>/status over a window is the number of times that
// thread ran. CPU is probegate's whole process tree: the sum of the gateway's
// threads' on-CPU nanoseconds (/proc/<pid>/task/*/schedstat) and its command
// spawner's, plus the commands they started and reaped (cutime+cstime of both,
// clock ticks). Which commands ran: the compiled fakes log every call to the
// scenario's calls.log, counted over the same window.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { ExecResult } from "./load/exec-runner.js";
import { sleep } from "./lib/net.js";
import { clockTicks, rssBytes, spawnerCpu, spawnerRssBytes } from "./lib/proc.js";
import { type RunningServer, startServer } from "./lib/server.js";
import type { FakeNodeDirs, ServerCtx, ServerTarget } from "./targets.js";

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

/** The fake nodes a round is measured on (issue #43): LNet alone, and a Lustre client with mounted volumes. */
export type CostNodeId = "lnet" | "lustre-1" | "lustre-8";
export const COST_NODES: ReadonlyArray<{ id: CostNodeId; label: string; volumes: number }> = [
  { id: "lnet", label: "LNet, nothing mounted", volumes: 0 },
  { id: "lustre-1", label: "Lustre client, 1 volume", volumes: 1 },
  { id: "lustre-8", label: "Lustre client, 8 volumes", volumes: 8 },
];
/** OSTs of the fake file system (issue #30's reference shape, 8 × 64). */
export const COST_NODE_OSTS = 64;

export interface NodeCostRun {
  runtime: string;
  /** Which fake node (COST_NODES); absent in results written before issue #43 (the LNet node). */
  node?: CostNodeId;
  /** probegate with --check-interval 1h: no client, no check due (measured on the LNet node) */
  idle?: WindowCost;
  /** probegate with --check-interval 10s */
  rounds?: WindowCost;
  /** gateway + spawner CPU of one round: (rounds − idle of the same runtime) / rounds per minute, ms */
  roundGatewayMs?: number;
  /** CPU of the commands of one round, ms */
  roundCommandsMs?: number;
  /** The commands probegate started in the rounds window, per minute, by fake-tool key (net_show_health, import_states, stat, …). */
  commandsPerMin?: Record<string, number>;
  rssIdleMiB?: number;
  /** VmRSS of the gateway and its spawner at the end of the rounds window, MiB. */
  rssRoundsMiB?: number;
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
  /** The fake node of each id (compiled fake tools, scenario, kubelet directory); calls.log in the scenario counts the commands. */
  nodes: (id: CostNodeId) => Promise<FakeNodeDirs>;
  /** Only these nodes (default all); the LNet node is always measured (idle and rounds). */
  only?: readonly CostNodeId[];
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

async function measure(s: RunningServer, settleSec: number, windowSec: number, calls?: string): Promise<{ w: WindowCost; commands: Record<string, number> }> {
  // Start-up work (compilation, the first rounds, V8's memory reducer after
  // them) is not what a node pays between rounds: let it pass.
  await sleep(settleSec * 1000);
  const before = calls ? callsByKey(calls) : {};
  const a = threadCounts(s.pid);
  await sleep(windowSec * 1000);
  const b = threadCounts(s.pid);
  const why = s.gone();
  if (why) throw new Error(`server ${why}`);
  const after = calls ? callsByKey(calls) : {};
  const commands: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) commands[k] = ((v - (before[k] ?? 0)) * 60) / windowSec;
  return { w: windowCost(a, b, windowSec), commands };
}

/** Lines of the fake tools' calls.log by key (the first word); statfs probes are not logged (the fake `stat` is silent). */
function callsByKey(file: string): Record<string, number> {
  const out: Record<string, number> = {};
  let text = "";
  try {
    text = fs.readFileSync(file, "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    const k = line.split(" ", 1)[0];
    if (k) out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

function rssMiB(pid: number): number {
  return (rssBytes(pid) + spawnerRssBytes(pid)) / 1048576;
}

export async function measureNodeCost(o: NodeCostOptions): Promise<NodeCostResult> {
  // V8's memory reducer runs its full collections ~25 s after start: past them in both modes.
  const settle = 30;
  const idleWindow = o.quick ? 30 : 60;
  // Commands' CPU comes in clock ticks (10 ms) from the reaped children's
  // totals: a 120 s window keeps that to ±5 ms a minute.
  const roundsWindow = o.quick ? 120 : 180;
  const out: NodeCostResult = { cadenceSec: CADENCE_SEC, runs: [] };
  const nodes = COST_NODES.filter((n) => n.id === "lnet" || !o.only || o.only.includes(n.id));
  for (const rt of o.runtimes) {
    let idle: WindowCost | undefined;
    for (const node of nodes) {
      const run: NodeCostRun = { runtime: rt.version, node: node.id, errors: [] };
      out.runs.push(run);
      const dirs = await o.nodes(node.id);
      const modes = node.id === "lnet" ? ([["idle", "1h", idleWindow], ["rounds", `${CADENCE_SEC}s`, roundsWindow]] as const) : ([["rounds", `${CADENCE_SEC}s`, roundsWindow]] as const);
      for (const [kind, interval, windowSec] of modes) {
        o.log(`nodecost: probegate on Node ${rt.version}, ${node.label}, ${kind} (--check-interval ${interval}), ${settle} s settle + ${windowSec} s`);
        let s: RunningServer | undefined;
        try {
          const ctx = { ...(await o.ctx(`nodecost-${node.id}-${kind}`, rt.bin)), fakeNode: dirs };
          s = await startServer(withInterval(o.target, interval), ctx);
          const m = await measure(s, settle, windowSec, path.join(dirs.scenario, "calls.log"));
          run[kind] = m.w;
          if (kind === "idle") {
            idle = m.w;
            run.rssIdleMiB = rssMiB(s.pid);
          } else {
            run.commandsPerMin = m.commands;
            run.rssRoundsMiB = rssMiB(s.pid);
          }
        } catch (e) {
          run.errors.push(`${kind}: ${(e as Error).message}`);
        } finally {
          await s?.stop();
        }
      }
      if (idle && run.rounds) {
        const perMin = 60 / CADENCE_SEC;
        run.roundGatewayMs = (run.rounds.selfMsPerMin - idle.selfMsPerMin) / perMin;
        run.roundCommandsMs = run.rounds.childrenMsPerMin / perMin;
      }
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
