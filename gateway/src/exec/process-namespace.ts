// --exec-in-process: run source commands inside another container's mount
// namespace. The Azure Lustre CSI driver installs lnetctl/lctl into its own
// container at start, so they exist nowhere else on the node; probegate finds
// the driver's process under procfs and runs each command through
// `nsenter --mount=<procfs>/<pid>/ns/mnt --`. Naming the namespace by file
// (not `--target PID`) keeps it right when --path.procfs is not nsenter's own
// /proc, e.g. the host's procfs mounted into a pod without hostPID.

import { readdir, readFile, readlink } from "node:fs/promises";
import { basename, join } from "node:path";

/** The kernel keeps 15 bytes of an executable's name in comm (TASK_COMM_LEN 16). */
const COMM_LEN = 15;
/** How many /proc/PID entries are read at once during a scan. */
const SCAN_BATCH = 64;

export interface FoundProcess {
  pid: number;
  /** Start time in clock ticks after boot (stat field 22): larger is newer. */
  startTime: bigint;
}

export type NamespacePrefix = { ok: true; pid: number; argv: string[] } | { ok: false; error: string };

interface Stat {
  comm: string;
  state: string;
  startTime: bigint;
}

/** Parses /proc/PID/stat. comm may contain spaces and ')', so fields are counted from the last ')'. */
export function parseStat(text: string): Stat | undefined {
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 0 || close < open) return undefined;
  const rest = text.slice(close + 2).split(" ");
  // rest[0] is field 3 (state); starttime is field 22.
  const state = rest[0];
  const start = rest[19];
  if (!state || !start || !/^\d+$/.test(start)) return undefined;
  return { comm: text.slice(open + 1, close), state, startTime: BigInt(start) };
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch {
    return undefined;
  }
}

/** The basename of the process's executable (argv[0] when /proc/PID/exe cannot be read). */
async function fullName(procfs: string, pid: string): Promise<string | undefined> {
  try {
    // A binary replaced on disk while running reads as "PATH (deleted)": still the same program.
    return basename((await readlink(join(procfs, pid, "exe"))).replace(/ \(deleted\)$/, ""));
  } catch {
    // exe needs ptrace access; argv[0] is readable by anyone.
    const cmdline = await readText(join(procfs, pid, "cmdline"));
    const argv0 = cmdline?.split("\0")[0];
    return argv0 ? basename(argv0) : undefined;
  }
}

async function matches(procfs: string, pid: string, name: string): Promise<FoundProcess | undefined> {
  const statText = await readText(join(procfs, pid, "stat"));
  const stat = statText === undefined ? undefined : parseStat(statText);
  if (!stat) return undefined;
  // A zombie has no namespaces left to enter; a restarted driver's old process may linger as one.
  if (stat.state === "Z" || stat.state === "X") return undefined;
  const comm = ((await readText(join(procfs, pid, "comm"))) ?? stat.comm).replace(/\n$/, "");
  // comm is a cheap first filter, but it holds only 15 bytes and a process can
  // rename itself (prctl PR_SET_NAME); the executable's own name decides.
  if (comm !== name.slice(0, COMM_LEN)) return undefined;
  if ((await fullName(procfs, pid)) !== name) return undefined;
  return { pid: Number(pid), startTime: stat.startTime };
}

/** The newest live process named `name` under `procfs`, or undefined. */
export async function findNewestProcess(procfs: string, name: string): Promise<FoundProcess | undefined> {
  let entries: string[];
  try {
    entries = (await readdir(procfs)).filter((e) => /^\d+$/.test(e));
  } catch {
    return undefined;
  }
  let best: FoundProcess | undefined;
  for (let i = 0; i < entries.length; i += SCAN_BATCH) {
    const found = await Promise.all(entries.slice(i, i + SCAN_BATCH).map((pid) => matches(procfs, pid, name)));
    for (const f of found) {
      if (!f) continue;
      if (!best || f.startTime > best.startTime || (f.startTime === best.startTime && f.pid > best.pid)) best = f;
    }
  }
  return best;
}

export function nsenterArgv(procfs: string, pid: number | string): string[] {
  return ["nsenter", `--mount=${join(procfs, String(pid), "ns", "mnt")}`, "--"];
}

/**
 * Finds the process anew whenever the one found last has gone (the driver
 * container restarted): the last PID is re-checked on every use, and the
 * whole of procfs is scanned only when that check fails.
 */
export class ProcessNamespace {
  private last: FoundProcess | undefined;

  constructor(
    readonly procfs: string,
    readonly name: string,
  ) {}

  /** For `describe()`: the prefix with a placeholder for the PID. */
  describe(): string[] {
    return nsenterArgv(this.procfs, `{pid of ${this.name}}`);
  }

  async prefix(): Promise<NamespacePrefix> {
    const still = this.last && (await matches(this.procfs, String(this.last.pid), this.name));
    const found = still && still.startTime === this.last!.startTime ? still : await findNewestProcess(this.procfs, this.name);
    this.last = found;
    if (!found) return { ok: false, error: `ESRCH: no process named ${this.name} (looked under ${this.procfs})` };
    return { ok: true, pid: found.pid, argv: nsenterArgv(this.procfs, found.pid) };
  }
}
