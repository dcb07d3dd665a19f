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
  /** user+sys of the process itself, seconds (tick resolution, usually 10 ms). */
  self: number;
  /** user+sys of waited-for children, seconds. */
  children: number;
  /** Sum of on-CPU time of the live threads from /proc/<pid>/task/<tid>/schedstat, seconds (ns resolution). */
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

export function cpuSample(pid: number | "self"): CpuSample {
  const f = statFields(pid);
  const hz = clockTicks();
  // stat(5): utime=14 stime=15 cutime=16 cstime=17 (1-based); f[0] is field 3.
  return {
    self: (Number(f[11]) + Number(f[12])) / hz,
    children: (Number(f[13]) + Number(f[14])) / hz,
    sched: schedSeconds(pid),
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
