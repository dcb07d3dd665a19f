// Which process is unmounting a stuck path, and in what state: the report of a
// stuck unmount says "umount (pid 4242) in D state (uninterruptible: waiting
// in the kernel) for 12m" when procfs shows it, which tells an operator at once
// that the driver is blocked in the kernel (a hung Lustre client), not busy
// or dead. Read only while an operation is stuck, from the operations' own
// timer (never on a forwarded call's path), at most one scan at a time, with a
// cap on the processes read; entries that vanish mid-scan or do not parse are
// skipped. A process in another PID namespace than --path.procfs shows is not
// seen, and the report then says so.

import { readdir } from "node:fs/promises";
import { basename, join } from "node:path";
import { parseStat } from "../exec/process-namespace.js";
import { readCapped } from "../engine/sources/read-file.js";
import { humanDuration } from "./operations.js";

/** /proc/PID entries read per scan at most (a node with more processes is scanned in part). */
export const MAX_PROCESSES_READ = 4096;
/** Entries read at once: bounded file descriptors while scanning. */
const BATCH = 32;
/** A cmdline longer than this is not an umount of a kubelet path. */
const CMDLINE_MAX = 8192;
/**
 * Clock ticks per second in /proc/PID/stat's start time: USER_HZ, which the
 * kernel's ABI fixes at 100 on every architecture Kubernetes nodes run.
 */
const USER_HZ = 100;

export interface UnmountingProcess {
  pid: number;
  /** argv[0]'s base name ("umount"), or comm when argv[0] is empty. */
  name: string;
  /** stat's state letter: D, S, R, ... */
  state: string;
  /** Epoch ms it started, when procfs tells (uptime and start time readable). */
  startedAt?: number;
}

export interface ScanResult {
  /** Path -> the process unmounting it (an umount first, then the oldest naming it). */
  found: Map<string, UnmountingProcess>;
  /** Process entries read; equal to the cap when the scan stopped early. */
  read: number;
}

const STATES: Record<string, string> = {
  D: "uninterruptible: waiting in the kernel",
  S: "sleeping",
  R: "running",
  T: "stopped",
  t: "stopped by a tracer",
  Z: "exited, not reaped",
  I: "idle",
};

/** "umount (pid 4242) in D state (uninterruptible: waiting in the kernel) for 12m0s". */
export function describeProcess(p: UnmountingProcess, now: number): string {
  const meaning = STATES[p.state];
  const age = p.startedAt !== undefined ? ` for ${humanDuration(now - p.startedAt)}` : "";
  return `${p.name} (pid ${p.pid}) in ${p.state} state${meaning ? ` (${meaning})` : ""}${age}`;
}

interface Candidate {
  path: string;
  pid: string;
  name: string;
  umount: boolean;
}

/** The processes whose argv names one of `paths` (a trailing slash ignored). */
export async function findUnmounting(procfs: string, paths: readonly string[], opts: { maxProcesses?: number; now?: () => number } = {}): Promise<ScanResult> {
  const found = new Map<string, UnmountingProcess>();
  const wanted = new Set(paths.filter(Boolean));
  if (wanted.size === 0) return { found, read: 0 };
  let pids: string[];
  try {
    pids = (await readdir(procfs)).filter((e) => /^\d+$/.test(e));
  } catch {
    return { found, read: 0 };
  }
  pids = pids.slice(0, opts.maxProcesses ?? MAX_PROCESSES_READ);
  const candidates: Candidate[] = [];
  for (let i = 0; i < pids.length; i += BATCH) {
    const batch = await Promise.all(pids.slice(i, i + BATCH).map((pid) => candidateOf(procfs, pid, wanted)));
    for (const c of batch) if (c) candidates.push(c);
  }
  if (candidates.length === 0) return { found, read: pids.length };
  const now = (opts.now ?? Date.now)();
  const uptime = await readUptime(procfs);
  const best = new Map<string, { c: Candidate; start: bigint; p: UnmountingProcess }>();
  for (const c of candidates) {
    const stat = await readCapped(join(procfs, c.pid, "stat"), 4096);
    const s = stat.ok ? parseStat(stat.text) : undefined;
    // Gone since its cmdline was read, or not a process entry we understand.
    if (!s || s.state === "X") continue;
    const prev = best.get(c.path);
    // The driver's own umount is the one that tells; among equals the oldest (the first attempt's).
    if (prev && ((prev.c.umount && !c.umount) || (prev.c.umount === c.umount && prev.start <= s.startTime))) continue;
    const age = uptime === undefined ? undefined : uptime - Number(s.startTime) / USER_HZ;
    const p: UnmountingProcess = { pid: Number(c.pid), name: c.name || s.comm, state: s.state };
    if (age !== undefined && Number.isFinite(age) && age >= 0) p.startedAt = now - Math.round(age * 1000);
    best.set(c.path, { c, start: s.startTime, p });
  }
  for (const [path, b] of best) found.set(path, b.p);
  return { found, read: pids.length };
}

async function candidateOf(procfs: string, pid: string, wanted: ReadonlySet<string>): Promise<Candidate | undefined> {
  const r = await readCapped(join(procfs, pid, "cmdline"), CMDLINE_MAX);
  // Kernel threads have an empty cmdline; a vanished or unreadable entry is skipped.
  if (!r.ok || r.truncated || r.text === "") return undefined;
  const argv = r.text.split("\0");
  if (argv[argv.length - 1] === "") argv.pop();
  for (const arg of argv.slice(1)) {
    const path = arg.length > 1 && arg.endsWith("/") ? arg.slice(0, -1) : arg;
    if (!wanted.has(path)) continue;
    const name = basename(argv[0] ?? "");
    return { path, pid, name, umount: name === "umount" || name.startsWith("umount.") };
  }
  return undefined;
}

async function readUptime(procfs: string): Promise<number | undefined> {
  const r = await readCapped(join(procfs, "uptime"), 256);
  const secs = r.ok ? Number.parseFloat(r.text.split(" ")[0] ?? "") : Number.NaN;
  return Number.isFinite(secs) && secs >= 0 ? secs : undefined;
}

/**
 * What the last scan showed about the stuck paths, for their reports. At most
 * one scan in flight; none while nothing is stuck (what was found is dropped
 * then, so a later episode starts from a fresh scan).
 */
export class UnmountingWatch {
  private last: { found: Map<string, UnmountingProcess>; capped: boolean } | undefined;
  private scanning = false;

  constructor(
    private readonly procfs: string | undefined,
    private readonly now: () => number,
  ) {}

  /** The message's words about the process unmounting `path`: "" without procfs or before the first scan. */
  part(path: string, at: number): string {
    if (!this.procfs || !this.last) return "";
    const p = this.last.found.get(path);
    if (p) return `; the unmounting process: ${describeProcess(p, at)}`;
    return `; no process naming the path seen ${this.last.capped ? `among the first ${MAX_PROCESSES_READ} ` : ""}under ${this.procfs}`;
  }

  /** Looks for the processes unmounting `paths`; `landed` is told once a scan is in and something is still stuck. */
  scan(paths: readonly string[], stillStuck: () => boolean, landed: () => void): void {
    if (paths.length === 0) {
      this.last = undefined;
      return;
    }
    if (!this.procfs || this.scanning) return;
    this.scanning = true;
    void findUnmounting(this.procfs, [...new Set(paths)], { now: this.now })
      .then((r) => {
        if (!stillStuck()) return;
        this.last = { found: r.found, capped: r.read >= MAX_PROCESSES_READ };
        landed();
      })
      .catch(() => undefined)
      .finally(() => (this.scanning = false));
  }
}
