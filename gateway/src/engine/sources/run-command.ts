// Runs one source command: argv array, no shell, bounded in time and output.
// Each child leads its own process group (detached) so a timeout or an output
// overrun can SIGKILL the command *and* anything it forked; otherwise a hung
// `lnetctl ping` helper could outlive the gateway's interest in it.
// With a command spawner (spawner.ts) the spawner starts the command and does
// the same; the result is composed here from what it reports, so both paths
// give the same CommandResult and the same texts.

import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import { decodeUtf8 } from "./decode.js";
import { resolveProgram } from "./path-lookup.js";
import type { RepeatedOutput } from "./repeated-output.js";
import type { CommandSpawner, KeepOutput, SpawnedRun } from "./spawner.js";

/** "skipped": not run, answered by the catalog (lustre-gate.ts). */
export type Outcome = "ok" | "error" | "timeout" | "truncated" | "skipped";

export interface CommandSpec {
  /** argv[0] is a bare name (looked up in env.PATH) or an absolute path. */
  argv: readonly string[];
  /** Short human name used in error texts, e.g. "lnetctl ping". */
  label: string;
  timeoutMs: number;
  /** Cap per stream (stdout and stderr separately). */
  maxOutputBytes: number;
  env: NodeJS.ProcessEnv;
  /** Lets the owner end every command still running (at shutdown) and refuse new ones. */
  tracker?: CommandTracker;
  /** Starts the command without forking the gateway (spawner.ts); absent, given up on or backing off: a direct spawn. */
  spawner?: CommandSpawner;
  /** The source's last stdout: an equal output gives its string again (repeated-output.ts). */
  repeated?: RepeatedOutput;
}

export interface CommandResult {
  ok: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  error: string | null;
  truncated: boolean;
  outcome: Outcome;
}

// After SIGKILL the pipes normally close at once; if something outside the
// group (e.g. a grandchild that called setsid) still holds them, give up on
// them after this long instead of waiting forever.
const PIPE_DRAIN_GRACE_MS = 1000;

class CappedCollector {
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  truncated = false;

  constructor(private readonly cap: number, private readonly onOverflow: () => void) {}

  push(chunk: Buffer): void {
    if (this.truncated) return;
    const room = this.cap - this.bytes;
    if (chunk.length > room) {
      if (room > 0) this.chunks.push(chunk.subarray(0, room));
      this.bytes = this.cap;
      this.truncated = true;
      this.onOverflow();
      return;
    }
    this.chunks.push(chunk);
    this.bytes += chunk.length;
  }

  joined(): Buffer {
    return Buffer.concat(this.chunks);
  }

  text(): string {
    return decodeUtf8(this.joined(), this.truncated);
  }
}

// The error texts plugins match on. Exported so a replayed source
// (`plugin test`, fixture files) reports exactly what a real run would.
export const timeoutError = (label: string, ms: number): string => `ETIMEDOUT: ${label} timed out after ${ms} ms`;
export const overflowError = (label: string, cap: number): string => `EFBIG: ${label} output exceeded ${cap} bytes`;
export const exitError = (code: number): string => `exit status ${code}`;

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone.
  }
}

/**
 * The commands one catalog has running. At shutdown they are killed and
 * waited for, so nothing they write (a fake tool's log in the --demo
 * directory, say) outlives the gateway; a round still in progress then gets
 * a refusal instead of starting another command.
 */
export class CommandTracker {
  private readonly running = new Map<{ kill(): void }, Promise<unknown>>();
  private closed = false;

  get isClosed(): boolean {
    return this.closed;
  }

  /** `command.kill()` SIGKILLs the command's group, directly or through the spawner. */
  track(command: { kill(): void }, done: Promise<unknown>): void {
    this.running.set(command, done);
    void done.then(() => this.running.delete(command));
  }

  /** Kills every running command's group; resolves once each has been reaped (bounded by the pipe grace). */
  async stop(): Promise<void> {
    this.closed = true;
    for (const command of this.running.keys()) command.kill();
    await Promise.all(this.running.values());
  }
}

function failure(error: string): CommandResult {
  return { ok: false, exitCode: null, stdout: "", stderr: "", error, truncated: false, outcome: "error" };
}

/** Never rejects: every failure is described in the result. */
export async function runCommand(spec: CommandSpec): Promise<CommandResult> {
  const [program, ...args] = spec.argv;
  if (program === undefined) return failure("EINVAL: empty argv");
  if (spec.tracker?.isClosed) return failure(`ECANCELED: ${spec.label} not run: the gateway is stopping`);
  const resolved = await resolveProgram(program, spec.env.PATH);
  if (!resolved.ok) return failure(resolved.error);

  const keep = spec.repeated?.keep();
  const handle = spec.spawner?.submit({
    path: resolved.path,
    argv: [program, ...args],
    env: spec.env,
    timeoutMs: spec.timeoutMs,
    maxOutputBytes: spec.maxOutputBytes,
    ...(keep ? { keep } : {}),
  });
  if (handle) {
    const done = handle.result.then(
      (run) => spawnedResult(run, spec, program, resolved.path, keep),
      // The spawner died or stopped answering with this command in flight: its
      // group has been killed and what it printed is lost, so the run failed.
      (err: Error) => failure(`EIO: cannot run ${program}: ${err.message}`),
    );
    spec.tracker?.track(handle, done);
    return done;
  }

  let child: ChildProcess;
  try {
    child = spawn(resolved.path, args, {
      argv0: program,
      shell: false,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: spec.env,
      // Commands must not depend on wherever the gateway was started from.
      cwd: "/",
    });
  } catch (err) {
    return failure(describeSpawnError(err, program));
  }

  const result = new Promise<CommandResult>((resolve) => {
    let settled = false;
    let timedOut = false;
    let exited = false;
    let exitCode: number | null = null;
    let exitSignal: NodeJS.Signals | null = null;
    let graceTimer: NodeJS.Timeout | undefined;

    const abandonPipesLater = (): void => {
      graceTimer ??= setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, PIPE_DRAIN_GRACE_MS);
    };
    const overflow = (): void => {
      killGroup(child);
      abandonPipesLater();
    };
    const out = new CappedCollector(spec.maxOutputBytes, overflow);
    const err = new CappedCollector(spec.maxOutputBytes, overflow);
    // When the spawn itself fails for want of descriptors (EMFILE, ENFILE) Node
    // sets up no pipes and reports the failure on 'error' in the next tick.
    (child.stdout as Readable | null)?.on("data", (c: Buffer) => out.push(c));
    (child.stderr as Readable | null)?.on("data", (c: Buffer) => err.push(c));

    const timer = setTimeout(() => {
      if (!exited) timedOut = true;
      killGroup(child);
      abandonPipesLater();
    }, spec.timeoutMs);

    const finish = (spawnError?: string): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      const stdout = spec.repeated ? spec.repeated.text(out.joined(), out.truncated) : out.text();
      const stderr = err.text();
      const truncated = out.truncated || err.truncated;
      const base = { stdout, stderr, truncated };
      if (spawnError !== undefined) {
        resolve({ ...base, ok: false, exitCode: null, error: spawnError, outcome: "error" });
      } else if (timedOut) {
        const error = timeoutError(spec.label, spec.timeoutMs);
        resolve({ ...base, ok: false, exitCode: null, error, outcome: "timeout" });
      } else if (truncated) {
        // The child was killed mid-output, so its exit status says nothing.
        const error = overflowError(spec.label, spec.maxOutputBytes);
        resolve({ ...base, ok: false, exitCode: null, error, outcome: "truncated" });
      } else if (exitCode === 0) {
        resolve({ ...base, ok: true, exitCode: 0, error: null, outcome: "ok" });
      } else if (exitCode !== null) {
        resolve({ ...base, ok: false, exitCode, error: exitError(exitCode), outcome: "error" });
      } else {
        const error = `killed by ${exitSignal ?? "unknown signal"}`;
        resolve({ ...base, ok: false, exitCode: null, error, outcome: "error" });
      }
    };

    child.on("error", (e) => {
      killGroup(child);
      finish(describeSpawnError(e, program));
    });
    child.on("exit", (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      // Reap anything the command left running in its group; its output
      // already sits in the pipes and is still read to the end.
      killGroup(child);
    });
    child.on("close", () => finish());
  });
  spec.tracker?.track({ kill: () => killGroup(child) }, result);
  return result;
}

/** The same result, texts included, as the direct spawn above gives for the same run. */
function spawnedResult(run: SpawnedRun, spec: CommandSpec, program: string, path: string, keep: KeepOutput | undefined): CommandResult {
  if (run.spawnError !== undefined) {
    // Node's own words for a failed start: "spawn <file> <CODE>".
    return failure(`${run.spawnError}: cannot run ${program}: spawn ${path} ${run.spawnError}`);
  }
  const stdout = spec.repeated ? spec.repeated.spawned(run, keep) : decodeUtf8(run.stdout, run.stdoutCut);
  if (stdout === undefined) return failure(`EIO: cannot run ${program}: the command spawner answered with an output this gateway does not hold`);
  const stderr = decodeUtf8(run.stderr, run.stderrCut);
  const truncated = run.stdoutCut || run.stderrCut;
  const base = { stdout, stderr, truncated };
  if (run.timedOut) return { ...base, ok: false, exitCode: null, error: timeoutError(spec.label, spec.timeoutMs), outcome: "timeout" };
  if (truncated) return { ...base, ok: false, exitCode: null, error: overflowError(spec.label, spec.maxOutputBytes), outcome: "truncated" };
  if (run.exitCode === 0) return { ...base, ok: true, exitCode: 0, error: null, outcome: "ok" };
  if (run.exitCode !== null) return { ...base, ok: false, exitCode: run.exitCode, error: exitError(run.exitCode), outcome: "error" };
  return { ...base, ok: false, exitCode: null, error: `killed by ${run.signal ?? "unknown signal"}`, outcome: "error" };
}

function describeSpawnError(err: unknown, program: string): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? "EIO";
  const message = err instanceof Error ? err.message : String(err);
  return `${code}: cannot run ${program}: ${message}`;
}
