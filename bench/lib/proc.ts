// Process accounting from /proc: CPU (user+sys) and RSS of a running process.
import { execFileSync } from "node:child_process";
import fs from "node:fs";

let clkTck = 0;
/** Clock ticks per second for /proc/<pid>/stat times (almost always 100). */
export function clockTicks(): number {
  if (clkTck) return clkTck;
  try {
    clkTck = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    clkTck = 100;
  }
  return clkTck;
}

export interface CpuSample {
  /** user+sys of the process itself and of its command spawner, seconds (tick resolution, usually 10 ms). */
  self: number;
  /** user+sys of waited-for children and of the commands the spawner has reaped, seconds. */
  children: number;
  /** On-CPU time of the live threads (/proc/<pid>/task/<tid>/schedstat) and of the spawner, seconds (ns resolution). */
  sched: number;
  /** Wall clock, seconds (performance.now). */
  wall: number;
}

/** Fields after the `(comm)` of /proc/<pid>/stat, 0-based from field 3 ("state"). */
function statFields(pid: number | "self"): string[] {
  const raw = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  return raw.slice(raw.lastIndexOf(")") + 2).split(" ");
}

function schedSeconds(pid: number | "self"): number {
  let ns = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      } catch {
        /* thread exited */
      }
    }
  } catch {
    return NaN;
  }
  return ns / 1e9;
}

/**
 * probegate's command spawner (a child named probegate-spawner of the gateway
 * `pid`), while it runs. Its own CPU is the gateway's: it is the part of the
 * gateway that starts commands, and leaving it out would make a command look
 * cheaper than it is. The commands it has reaped are its children, not the
 * gateway's (the gateway's cutime/cstime hold them only once the spawner itself
 * has exited and been waited for), so they are reported apart, to be added to
 * the gateway's children and stay comparable with the direct spawn.
 */
export interface SpawnerCpu {
  /** Its own on-CPU time from schedstat, seconds (ns resolution). */
  schedSec: number;
  /** Its own user+sys from stat, seconds (tick resolution). */
  selfSec: number;
  /** user+sys of the commands it has reaped, seconds. */
  reapedSec: number;
  /** Its voluntary and involuntary context switches (its wake-ups). */
  switches: number;
}

/** The gateway `pid`'s command spawner processes (one, or none) and their stat fields from field 3 on. */
function spawners(pid: number | "self"): Array<{ pid: string; f: string[] }> {
  const parent = pid === "self" ? process.pid : pid;
  const out: Array<{ pid: string; f: string[] }> = [];
  for (const e of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const raw = fs.readFileSync(`/proc/${e}/stat`, "utf8");
      const comm = raw.slice(raw.indexOf("(") + 1, raw.lastIndexOf(")"));
      const f = raw.slice(raw.lastIndexOf(")") + 2).split(" ");
      if (Number(f[1]) === parent && comm.startsWith("probegate-spaw")) out.push({ pid: e, f });
    } catch {
      // gone between readdir and read
    }
  }
  return out;
}

/** The RSS of the gateway's command spawner (0 without one): memory the gateway costs the node, like its own. */
export function spawnerRssBytes(pid: number | "self"): number {
  let sum = 0;
  for (const s of spawners(pid)) {
    try {
      sum += rssBytes(Number(s.pid));
    } catch {
      // exited since
    }
  }
  return sum;
}

export function spawnerCpu(pid: number | "self"): SpawnerCpu {
  const hz = clockTicks();
  const out: SpawnerCpu = { schedSec: 0, selfSec: 0, reapedSec: 0, switches: 0 };
  for (const { pid: e, f } of spawners(pid)) {
    try {
      out.selfSec += (Number(f[11]) + Number(f[12])) / hz;
      out.reapedSec += (Number(f[13]) + Number(f[14])) / hz;
      out.schedSec += Number(fs.readFileSync(`/proc/${e}/schedstat`, "utf8").split(" ")[0]) / 1e9;
      const st = fs.readFileSync(`/proc/${e}/status`, "utf8");
      for (const m of st.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)) out.switches += Number(m[1]);
    } catch {
      // gone between readdir and read
    }
  }
  return out;
}

export function cpuSample(pid: number | "self"): CpuSample {
  const f = statFields(pid);
  const hz = clockTicks();
  const sp = spawnerCpu(pid);
  // stat(5): utime=14 stime=15 cutime=16 cstime=17 (1-based); f[0] is field 3.
  return {
    self: (Number(f[11]) + Number(f[12])) / hz + sp.selfSec,
    children: (Number(f[13]) + Number(f[14])) / hz + sp.reapedSec,
    sched: schedSeconds(pid) + sp.schedSec,
    wall: performance.now() / 1000,
  };
}

export interface CpuDelta {
  /** user+sys seconds, from /proc/<pid>/stat. */
  cpuSec: number;
  /** on-CPU seconds from schedstat (higher resolution; threads that exited are missing). */
  schedSec: number;
  childrenSec: number;
  wallSec: number;
}

export function cpuDelta(a: CpuSample, b: CpuSample): CpuDelta {
  return {
    cpuSec: b.self - a.self,
    schedSec: b.sched - a.sched,
    childrenSec: b.children - a.children,
    wallSec: b.wall - a.wall,
  };
}

/** Resident set size in bytes (VmRSS from /proc/<pid>/status). */
export function rssBytes(pid: number | "self"): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) * 1024 : NaN;
}
