// The statfs prober behind the volume.statfs source. A process blocked in a
// Lustre syscall sits in uninterruptible sleep and cannot be killed until the
// call returns (up to at_max, 600 s, on 2.12/2.13 clients with an MDT down).
// So the statfs never runs in the gateway (fs.statfs would hold a libuv pool
// thread for as long, and four such hangs stop every file read): it runs as a
// child process, `stat -f` by argv through the same prefix or namespace as
// lnetctl (the mount lives in that mount namespace), and:
// - the paths due in one turn of the event loop (a volume round asks for all
//   its volumes at once) go to one `stat -f` together, since a process start
//   is most of what a probe costs the node and a node may mount dozens of
//   volumes. stat answers each path in order, a line on stdout or an error
//   on stderr; a batch whose output cannot be matched to its paths that way,
//   or that is still running after the bound, says nothing about which path
//   is at fault: each of its paths is then probed on its own, so a hung path
//   never hides the others; the hung batch is kept like a hung probe;
// - a path probed on its own (after a failure, or while hung) is probed on
//   its own until it answers: at most one such probe per path is ever
//   outstanding, a probe still running after the bound is reported `hung MS`
//   and kept, and later reads of that path report it again (MS growing)
//   instead of starting another. A path that hung is in at most two processes:
//   the batch it stopped and its own probe;
// - a hung child is tracked until it exits, however long that takes, and
//   counts against a cap on all outstanding probes; past the cap a path is
//   reported `error EAGAIN` instead of spawning (memory and processes stay bounded).
// The probes are the process room's long-lived children (exec/room.ts
// start()), one per key at most (exec/one-per-key.ts): through the command
// spawner when there is one (no fork of the gateway per probe), where a hung
// probe is one idle slot of its poll loop, with no timeout, so it is neither
// killed early nor able to stall the other commands.

import { performance } from "node:perf_hooks";
import { OnePerKey, type KeyedRun } from "../../exec/one-per-key.js";
import type { ProcessRoom } from "../../exec/room.js";
import type { CommandResult } from "../../exec/run-command.js";
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
  /** Where and how the probes run: the same prefix or namespace as the source commands. */
  room: Pick<ProcessRoom, "start" | "env">;
  /** Environment of the probes (LC_ALL=C is added). Default: the room's. */
  env?: NodeJS.ProcessEnv;
  /** The mount table of the namespace the probes run in (for ro/rw); undefined when unreadable. */
  mountTable: () => Promise<string | undefined>;
  /** Told each time a probe starts and ends (metrics). */
  onChange?: (outstanding: number) => void;
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

/**
 * Paths in one batch at most: its argv (4 KiB a path at most) stays far
 * below ARG_MAX.
 */
const BATCH_MAX = 32;

/** One path's answer is a line; a batch's holds every path's name (4 KiB each at most). */
const outputCap = (paths: number) => 4096 * (paths + 1);

/** Remembered answers (and failed paths) beyond this many paths are pruned (the stale first). */
const MAX_REMEMBERED = 4096;

/** A probe's answers, one per path of its argv, in order; a batch that told nothing usable: none. */
type Answers = readonly StatfsResult[];

export class StatfsProber {
  /** Outstanding probes: a path's own under the path, a batch under `\0batch N` (a path has no NUL). */
  private readonly probes: OnePerKey<Answers>;
  private parsed: { text: string; entries: MountEntry[] } = { text: "", entries: [] };
  /** The last successful answer per path and when it came (performance.now()). */
  private readonly answers = new Map<string, { result: StatfsResult & { kind: "ok" }; at: number }>();
  /** Paths whose last probe failed: probed on their own, for their own error, until one answers. */
  private readonly alone = new Set<string>();
  /** Paths waiting for the next batch or in one now running, and their answer: a second ask joins it. */
  private readonly pending = new Map<string, Promise<StatfsResult>>();
  /** Paths waiting for the next batch, and how to answer each. */
  private queued = new Map<string, (r: StatfsResult) => void>();
  private batches = 0;
  /** English error texts, whatever the node's locale; one object, so the spawner encodes it once (spawner.ts). */
  private readonly env: NodeJS.ProcessEnv;

  constructor(private readonly opts: StatfsProberOptions) {
    this.probes = new OnePerKey<Answers>({ maxOutstanding: opts.maxOutstanding, ...(opts.onChange ? { onChange: opts.onChange } : {}) });
    this.env = Object.freeze({ ...(opts.env ?? opts.room.env), LC_ALL: "C" });
  }

  /** Probes now running (hung ones included; a batch counts once). */
  count(): number {
    return this.probes.count();
  }

  /** Never rejects, and resolves within twice the bound (plus two process starts). */
  async probe(path: string): Promise<StatfsResult> {
    let r: StatfsResult;
    // A newline in a path would let one path's line pass for another's (interpretBatch).
    if (this.probes.has(path) || this.alone.has(path) || path.includes("\n")) r = await this.single(path);
    else {
      const last = this.answers.get(path);
      if (last && performance.now() - last.at < this.opts.intervalMs) r = last.result;
      else r = await (this.pending.get(path) ?? this.enqueue(path));
    }
    if (r.kind !== "ok") return r;
    // ro/rw from the mount table of the same namespace: stat -f has no field for it.
    return { ...r, access: await this.access(path) };
  }

  /** Kills every probe's process group; waits a moment for them (a process in a Lustre call may not die yet). */
  stop(graceMs = 1000): Promise<void> {
    return this.probes.stop(graceMs);
  }

  private enqueue(path: string): Promise<StatfsResult> {
    if (this.queued.size === 0) setImmediate(() => this.flush());
    const answer = new Promise<StatfsResult>((resolve) => this.queued.set(path, resolve));
    this.pending.set(path, answer);
    void answer.then(() => {
      if (this.pending.get(path) === answer) this.pending.delete(path);
    });
    return answer;
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = new Map();
    const paths = [...queued.keys()];
    for (let i = 0; i < paths.length; i += BATCH_MAX) {
      const chunk = paths.slice(i, i + BATCH_MAX);
      void this.batch(chunk).then((rs) => chunk.forEach((p, j) => queued.get(p)!(rs[j]!)));
    }
  }

  /** One answer per path, in order. Never rejects. */
  private async batch(paths: readonly string[]): Promise<Answers> {
    if (paths.length === 1) return [await this.single(paths[0]!)];
    const key = `\0batch ${++this.batches}`;
    const a = await this.probes.run(key, this.opts.boundMs, () => this.start(paths));
    if (a.kind === "done" && a.value.length === paths.length) return a.value;
    return Promise.all(paths.map((p) => this.single(p)));
  }

  /** The path's own probe: started unless one is outstanding, waited for at most the bound. */
  private async single(path: string): Promise<StatfsResult> {
    const a = await this.probes.run(path, this.opts.boundMs, () => this.start([path]));
    if (a.kind === "refused") return { kind: "error", code: a.code };
    if (a.kind === "hung") return a;
    return a.value[0] ?? { kind: "error", code: "EIO" };
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

  private start(paths: readonly string[]): KeyedRun<Answers> {
    const probe: KeyedRun<Answers> = { kill: undefined, done: Promise.resolve([]) };
    const started = performance.now();
    probe.done = this.run(paths, probe).then((rs) => {
      // A batch past the bound was given up for its paths' own probes, and
      // its early paths' answers are as old as its start: they tell nothing.
      // (A path's own probe that returns late answers for now.)
      if (rs.length !== paths.length || (paths.length > 1 && performance.now() - started >= this.opts.boundMs)) return rs;
      paths.forEach((p, i) => {
        const r = rs[i]!;
        if (r.kind === "ok") {
          this.remember(p, r);
          this.alone.delete(p);
        } else {
          this.answers.delete(p);
          this.alone.delete(p);
          this.alone.add(p);
          // Paths of volumes long gone would stay for ever: the least recently failed go (they join a batch again, and fail alone again).
          if (this.alone.size > MAX_REMEMBERED) this.alone.delete(this.alone.values().next().value!);
        }
      });
      return rs;
    });
    return probe;
  }

  private async run(paths: readonly string[], probe: KeyedRun<Answers>): Promise<Answers> {
    // One path's argv is the same as it always was; several need their names back to be told apart.
    const format = paths.length > 1 ? "%t %n" : "%t";
    const child = await this.opts.room.start({ argv: ["stat", "-f", "-c", format, "--", ...paths], label: "stat -f", maxOutputBytes: outputCap(paths.length), env: this.env });
    if (!child.ok) {
      if (paths.length > 1) return [];
      if (child.stage === "place") return [{ kind: "error", code: /^(E[A-Z]+):/.exec(child.error)?.[1] ?? "EIO" }];
      if (child.stage === "program") return [{ kind: "error", code: "ENOEXEC" }];
      return [{ kind: "error", code: "ECANCELED" }];
    }
    if (this.probes.isStopped) {
      child.kill();
      return paths.length > 1 ? [] : [{ kind: "error", code: "ECANCELED" }];
    }
    probe.kill = child.kill;
    const r = await child.result;
    return paths.length > 1 ? interpretBatch(r, paths) : [interpret(r)];
  }
}

/**
 * A finished `stat -f -c '%t %n'` of several paths: for each path in order,
 * the line `TYPE PATH` if it answered; stat prints nothing on stdout for a
 * path that failed and one line on stderr, in the same order. Output that
 * cannot be matched to the paths that way (killed, truncated, a line too
 * many or too few): none. No path holds a newline (see probe()), so a line
 * cannot be taken for another path's.
 */
function interpretBatch(r: CommandResult, paths: readonly string[]): Answers {
  if (r.exitCode === null || r.truncated) return [];
  const out: (StatfsResult | undefined)[] = [];
  let at = 0;
  for (const p of paths) {
    const m = /^([0-9a-fA-F]{1,16}) /.exec(r.stdout.slice(at, at + 18));
    if (m && r.stdout.startsWith(`${p}\n`, at + m[0].length)) {
      out.push({ kind: "ok", fsType: m[1]!.toLowerCase(), access: "rw" });
      at += m[0].length + p.length + 1;
    } else out.push(undefined);
  }
  if (at !== r.stdout.length) return [];
  const failed = out.filter((x) => x === undefined).length;
  const errors = r.stderr.split("\n").filter((l) => l !== "");
  if (failed !== errors.length || (failed > 0) !== (r.exitCode !== 0)) return [];
  let e = 0;
  return out.map((x) => x ?? { kind: "error", code: errnoFromStderr(errors[e++]!) });
}

/** A finished `stat -f -c %t`: its type in hex, or the errno its message (or its failed start) names. */
function interpret(r: CommandResult): StatfsResult {
  const type = r.stdout.trim().toLowerCase();
  if (r.exitCode === 0 && /^[0-9a-f]{1,16}$/.test(type)) return { kind: "ok", fsType: type, access: "rw" };
  if (r.exitCode === 0) return { kind: "error", code: "EBADMSG" };
  // Not started (or the spawner died under it): the code its error begins with.
  const notRun = r.error === null ? null : /^(E[A-Z0-9]+): cannot run /.exec(r.error);
  if (r.exitCode === null && notRun) return { kind: "error", code: notRun[1]! };
  return { kind: "error", code: errnoFromStderr(r.stderr) };
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
