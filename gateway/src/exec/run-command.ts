// Runs one command to its end or its deadline: argv array, no shell, bounded
// in time and output (start.ts starts it, through the spawner or directly).
// The result is composed here from the raw facts either way reports, so both
// give the same CommandResult and the same texts.

import { decodeUtf8 } from "../support/decode.js";
import { locateProgram, searchProgram } from "./path-lookup.js";
import type { RepeatedOutput } from "./repeated-output.js";
import type { CommandSpawner, KeepOutput, SpawnedRun } from "./spawner.js";
import { startProcess } from "./start.js";

/** "skipped": not run, answered by the catalog (engine/sources/lustre-gate.ts). */
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

// The error texts plugins match on. Exported so a replayed source
// (`plugin test`, fixture files) reports exactly what a real run would.
export const timeoutError = (label: string, ms: number): string => `ETIMEDOUT: ${label} timed out after ${ms} ms`;
export const overflowError = (label: string, cap: number): string => `EFBIG: ${label} output exceeded ${cap} bytes`;
export const exitError = (code: number): string => `exit status ${code}`;

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

export function failure(error: string): CommandResult {
  return { ok: false, exitCode: null, stdout: "", stderr: "", error, truncated: false, outcome: "error" };
}

/** Never rejects: every failure is described in the result. */
export async function runCommand(spec: CommandSpec): Promise<CommandResult> {
  const [program, ...args] = spec.argv;
  if (program === undefined) return failure("EINVAL: empty argv");
  const stopping = () => failure(`ECANCELED: ${spec.label} not run: the gateway is stopping`);
  if (spec.tracker?.isClosed) return stopping();
  const located = await locateProgram(program, spec.env.PATH);
  if (!located.ok) return failure(located.error);
  const first = await runAt(spec, program, args, located.path);
  if (!located.remembered || !STALE_PATH_ERRORS.has(first.spawnError ?? "")) return first.result;
  // The program was removed or lost its x bit since it was found: the run
  // gets what a search now finds, the next one in PATH or "not found".
  const again = await searchProgram(program, spec.env.PATH);
  if (!again.ok) return failure(again.error);
  if (spec.tracker?.isClosed) return stopping();
  return (await runAt(spec, program, args, again.path)).result;
}

/** How a start from a path that no longer holds an executable file fails. */
const STALE_PATH_ERRORS = new Set(["ENOENT", "EACCES", "ENOTDIR"]);

async function runAt(
  spec: CommandSpec,
  program: string,
  args: readonly string[],
  path: string,
): Promise<{ result: CommandResult; spawnError?: string }> {
  const keep = spec.repeated?.keep();
  const started = startProcess(
    {
      path,
      argv: [program, ...args],
      env: spec.env,
      timeoutMs: spec.timeoutMs,
      maxOutputBytes: spec.maxOutputBytes,
      ...(keep ? { keep } : {}),
    },
    spec.spawner,
  );
  const done = started.result.then(
    (run) => ({
      result: commandResult(run, spec, program, path, started.viaSpawner ? keep : undefined, started.viaSpawner),
      ...(run.spawnError !== undefined ? { spawnError: run.spawnError } : {}),
    }),
    // The spawner died or stopped answering with this command in flight: its
    // group has been killed and what it printed is lost, so the run failed.
    (err: Error) => ({ result: failure(`EIO: cannot run ${program}: ${err.message}`) }),
  );
  spec.tracker?.track(started, done);
  return done;
}

/** A command's result, texts included, from what its run reported (either way it was started). */
export function commandResult(
  run: SpawnedRun,
  spec: Pick<CommandSpec, "label" | "timeoutMs" | "maxOutputBytes" | "repeated">,
  program: string,
  path: string,
  keep: KeepOutput | undefined,
  viaSpawner: boolean,
): CommandResult {
  if (run.spawnError !== undefined) {
    // Node's own words for a failed start: "spawn <file> <CODE>".
    return failure(`${run.spawnError}: cannot run ${program}: ${run.spawnMessage ?? `spawn ${path} ${run.spawnError}`}`);
  }
  const stdout = !spec.repeated
    ? decodeUtf8(run.stdout, run.stdoutCut)
    : viaSpawner
      ? spec.repeated.spawned(run, keep)
      : spec.repeated.text(run.stdout, run.stdoutCut);
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
