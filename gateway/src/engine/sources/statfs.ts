// The statfs prober behind the volume.statfs source. A process blocked in a
// Lustre syscall sits in uninterruptible sleep and cannot be killed until the
// call returns (up to at_max, 600 s, on 2.12/2.13 clients with an MDT down).
// So the statfs never runs in the gateway (fs.statfs would hold a libuv pool
// thread for as long, and four such hangs stop every file read): it runs as a
// child process, `stat -f` by argv through the same prefix or namespace as
// lnetctl (the mount lives in that mount namespace), and:
// - at most one probe per path is ever outstanding: a probe still running
//   after the bound is reported `hung MS` and kept, and later reads of that
//   path report it again (MS growing) instead of starting another;
// - a hung child is tracked until it exits, however long that takes, and
//   counts against a cap on all outstanding probes; past the cap a path is
//   reported `error EAGAIN` instead of spawning (memory and processes stay bounded).
// Through the command spawner when there is one (no fork of the gateway per
// probe); there a hung probe is one idle slot of its poll loop, with no
// timeout, so it is neither killed early nor able to stall the other commands.

import { spawn, type ChildProcess } from "node:child_process";
import { performance } from "node:perf_hooks";
import { resolveProgram } from "../../exec/path-lookup.js";
import type { CommandSpawner } from "../../exec/spawner.js";
import type { Produced, SourceDef } from "./definitions.js";
import { escapeMountField, mountHolding, parseMountTable, type MountEntry } from "./mount-table.js";
import { volumePathProblem } from "./validate.js";

export type StatfsResult =
  | { kind: "ok"; fsType: string; access: "ro" | "rw" }
  | { kind: "hung"; ms: number }
  | { kind: "error"; code: string };

export interface StatfsProberOptions {
  /** After this long a probe is reported hung (and kept). */
  boundMs: number;
  /**
   * A path that answered is probed again only after this long (its answer is
   * reused until then). A process start costs the gateway a millisecond or
   * two of CPU: per volume every round, that would be most of a round's cost.
   * Failures are not reused, and a hang is reported from the probe itself.
   */
  intervalMs: number;
  /** Probes outstanding at once, hung ones included. */
  maxOutstanding: number;
  /** The argv prefix to run under (command prefix, or nsenter into the namespace found now). */
  prefix: () => Promise<{ ok: true; argv: readonly string[] } | { ok: false; error: string }>;
  env: NodeJS.ProcessEnv;
  /** The mount table of the namespace the probes run in (for ro/rw); undefined when unreadable. */
  mountTable: () => Promise<string | undefined>;
  /** Told each time a probe starts and ends (metrics). */
  onChange?: (outstanding: number) => void;
  /** Starts the probes without forking the gateway, when it can (spawner.ts). */
  spawner?: CommandSpawner;
}

/** strerror texts (LC_ALL=C) of the errors a statfs on a Lustre mount gives, to their names. */
const ERRNO_TEXT: ReadonlyArray<[string, string]> = [
  ["No such file or directory", "ENOENT"],
  ["Transport endpoint is not connected", "ENOTCONN"],
  ["Cannot send after transport endpoint shutdown", "ESHUTDOWN"],
  ["Input/output error", "EIO"],
  ["Permission denied", "EACCES"],
  ["Stale file handle", "ESTALE"],
  ["Resource temporarily unavailable", "EAGAIN"],
  ["Connection timed out", "ETIMEDOUT"],
  ["Interrupted system call", "EINTR"],
  ["Not a directory", "ENOTDIR"],
  ["Operation not permitted", "EPERM"],
  ["No route to host", "EHOSTUNREACH"],
  ["Connection refused", "ECONNREFUSED"],
  ["Too many levels of symbolic links", "ELOOP"],
  ["File name too long", "ENAMETOOLONG"],
];

/** The errno name in a failed `stat -f`'s message, or EIO when it names none we know. */
export function errnoFromStderr(stderr: string): string {
  for (const [text, code] of ERRNO_TEXT) if (stderr.includes(text)) return code;
  const named = /\b(E[A-Z]{2,15})\b/.exec(stderr);
  return named ? named[1]! : "EIO";
}

/** One line of the volume.statfs source (plugins/ABI.md): `PATH ok TYPE ro|rw`, `PATH hung MS`, `PATH error CODE`. */
export function formatStatfsLine(path: string, r: StatfsResult): string {
  const p = escapeMountField(path);
  if (r.kind === "ok") return `${p} ok ${r.fsType} ${r.access}`;
  if (r.kind === "hung") return `${p} hung ${Math.round(r.ms)}`;
  return `${p} error ${r.code}`;
}

const OUTPUT_CAP = 4096;

/** Remembered answers beyond this many paths are pruned (the stale first). */
const MAX_REMEMBERED = 4096;

interface Probe {
  /** SIGKILLs the probe's process group, once it has one. */
  kill: (() => void) | undefined;
  startedAt: number;
  done: Promise<StatfsResult>;
}

export class StatfsProber {
  private readonly outstanding = new Map<string, Probe>();
  private stopped = false;
  private parsed: { text: string; entries: MountEntry[] } = { text: "", entries: [] };
  /** The last successful answer per path and when it came (performance.now()). */
  private readonly answers = new Map<string, { result: StatfsResult & { kind: "ok" }; at: number }>();

  constructor(private readonly opts: StatfsProberOptions) {}

  /** Probes now running (hung ones included). */
  count(): number {
    return this.outstanding.size;
  }

  /** Never rejects, and resolves within the bound (plus a process start). */
  async probe(path: string): Promise<StatfsResult> {
    let p = this.outstanding.get(path);
    if (!p) {
      const last = this.answers.get(path);
      if (last && performance.now() - last.at < this.opts.intervalMs) return { ...last.result, access: await this.access(path) };
      if (this.stopped) return { kind: "error", code: "ECANCELED" };
      if (this.outstanding.size >= this.opts.maxOutstanding) return { kind: "error", code: "EAGAIN" };
      p = this.start(path);
    }
    const elapsed = performance.now() - p.startedAt;
    const left = this.opts.boundMs - elapsed;
    if (left <= 0) return { kind: "hung", ms: elapsed };
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<StatfsResult>((resolve) => {
      timer = setTimeout(() => resolve({ kind: "hung", ms: performance.now() - p.startedAt }), left);
    });
    const r = await Promise.race([p.done, hung]);
    clearTimeout(timer);
    if (r.kind !== "ok") return r;
    // ro/rw from the mount table of the same namespace: stat -f has no field for it.
    return { ...r, access: await this.access(path) };
  }

  /** Kills every probe's process group; waits a moment for them (a process in a Lustre call may not die yet). */
  async stop(graceMs = 1000): Promise<void> {
    this.stopped = true;
    const pending = [...this.outstanding.values()];
    for (const p of pending) p.kill?.();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending.map((p) => p.done)), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
  }

  private remember(path: string, result: StatfsResult & { kind: "ok" }): void {
    const now = performance.now();
    if (!this.answers.has(path) && this.answers.size >= MAX_REMEMBERED) {
      for (const [k, v] of this.answers) if (now - v.at >= this.opts.intervalMs) this.answers.delete(k);
      if (this.answers.size >= MAX_REMEMBERED) this.answers.delete(this.answers.keys().next().value!);
    }
    this.answers.set(path, { result, at: now });
  }

  private async access(path: string): Promise<"ro" | "rw"> {
    const text = await this.opts.mountTable().catch(() => undefined);
    if (text === undefined) return "rw";
    // Every probe of a round sees the same (cached) table: parse it once.
    if (text !== this.parsed.text) this.parsed = { text, entries: parseMountTable(text) };
    const m = mountHolding(this.parsed.entries, path);
    return m?.options.includes("ro") ? "ro" : "rw";
  }

  private start(path: string): Probe {
    const probe: Probe = { kill: undefined, startedAt: performance.now(), done: Promise.resolve({ kind: "error", code: "EIO" }) };
    probe.done = this.run(path, probe).then((r) => {
      if (this.outstanding.get(path) === probe) this.outstanding.delete(path);
      if (r.kind === "ok") this.remember(path, r);
      else this.answers.delete(path);
      this.opts.onChange?.(this.outstanding.size);
      return r;
    });
    this.outstanding.set(path, probe);
    this.opts.onChange?.(this.outstanding.size);
    return probe;
  }

  private async run(path: string, probe: Probe): Promise<StatfsResult> {
    const prefix = await this.opts.prefix();
    if (!prefix.ok) return { kind: "error", code: /^(E[A-Z]+):/.exec(prefix.error)?.[1] ?? "EIO" };
    const argv = [...prefix.argv, "stat", "-f", "-c", "%t", "--", path];
    const [program, ...args] = argv;
    const resolved = await resolveProgram(program!, this.opts.env.PATH);
    if (!resolved.ok) return { kind: "error", code: "ENOEXEC" };
    if (this.stopped) return { kind: "error", code: "ECANCELED" };
    // English error texts, whatever the node's locale.
    const env = { ...this.opts.env, LC_ALL: "C" };
    const handle = this.opts.spawner?.submit({ path: resolved.path, argv: [program!, ...args], env, timeoutMs: undefined, maxOutputBytes: OUTPUT_CAP });
    if (handle) {
      probe.kill = handle.kill;
      return handle.result.then(
        (run) => {
          if (run.spawnError !== undefined) return { kind: "error", code: run.spawnError };
          const out = run.stdout.toString("utf8");
          return interpret(run.exitCode, out, run.stderr.toString("utf8"));
        },
        // The spawner died with the probe in flight: not an answer.
        () => ({ kind: "error", code: "EIO" }),
      );
    }
    let child: ChildProcess;
    try {
      child = spawn(resolved.path, args, {
        argv0: program,
        shell: false,
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
        // English error texts, whatever the node's locale.
        env,
        cwd: "/",
      });
    } catch (err) {
      return { kind: "error", code: (err as NodeJS.ErrnoException).code ?? "EIO" };
    }
    probe.kill = () => killGroup(child);
    return new Promise<StatfsResult>((resolve) => {
      let out = "";
      let err = "";
      const take = (cur: string, chunk: Buffer): string => {
        if (cur.length + chunk.length > OUTPUT_CAP) {
          killGroup(child);
          return cur;
        }
        return cur + chunk.toString("utf8");
      };
      child.stdout?.on("data", (c: Buffer) => (out = take(out, c)));
      child.stderr?.on("data", (c: Buffer) => (err = take(err, c)));
      child.on("error", (e) => {
        killGroup(child);
        resolve({ kind: "error", code: (e as NodeJS.ErrnoException).code ?? "EIO" });
      });
      // 'close', not 'exit': the output is complete. A process stuck in the
      // kernel gets here only when its call returns; until then it stays outstanding.
      child.on("close", (code) => {
        killGroup(child);
        resolve(interpret(code, out, err));
      });
    });
  }
}

/** A finished `stat -f -c %t`: its type in hex, or the errno its message names. */
function interpret(code: number | null, out: string, err: string): StatfsResult {
  const type = out.trim().toLowerCase();
  if (code === 0 && /^[0-9a-f]{1,16}$/.test(type)) return { kind: "ok", fsType: type, access: "rw" };
  if (code === 0) return { kind: "error", code: "EBADMSG" };
  return { kind: "error", code: errnoFromStderr(err) };
}

function killGroup(child: ChildProcess | undefined): void {
  if (child?.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // ESRCH: gone already.
  }
}

/**
 * The volume.statfs source: one line per path among the facts
 * volume.stagingPath and volume.path (whichever are set), in that order.
 * Paths are checked as text before anything runs.
 */
export function statfsSource(name: string, prober: StatfsProber, ttlMs: number, maxOutputBytes: number): SourceDef {
  const facts = ["volume.stagingPath", "volume.path"];
  return {
    name,
    kind: "file",
    ttlMs,
    params: [],
    path: "statfs({volume.stagingPath}), statfs({volume.path})",
    replay: { kind: "generated", maxOutputBytes },
    prepare(given) {
      const paths: string[] = [];
      for (const f of facts) {
        const v = Object.hasOwn(given, f) ? given[f] : undefined;
        if (typeof v !== "string" || v === "") continue;
        const problem = volumePathProblem(v);
        if (problem) return { error: `fact ${f} ${problem}` };
        if (!paths.includes(v)) paths.push(v);
      }
      if (paths.length === 0) return { error: "fact volume.path is not available (nor volume.stagingPath)" };
      return {
        key: paths.join("\0"),
        run: async (): Promise<Produced> => {
          const results = await Promise.all(paths.map((p) => prober.probe(p)));
          const text = results.map((r, i) => `${formatStatfsLine(paths[i]!, r)}\n`).join("");
          return { ok: true, exitCode: null, stdout: text, stderr: "", error: null, truncated: false, outcome: "ok" };
        },
      };
    },
  };
}
