// The process room: the one place the gateway starts processes. It holds where
// commands run (place.ts: --command-prefix or --exec-in-process), their
// environment, the resident spawner (spawner.ts, when there is one) and the
// commands running (so shutdown ends them), and offers two modes:
// - run(): a command to its end or its deadline, killed (its group) at the
//   deadline or past its output cap: a source command (run-command.ts);
// - start(): a long-lived child with no deadline of its own, kept until it
//   ends however long that takes; the caller bounds its wait, and
//   one-per-key.ts keeps at most one per key (statfs probes per path).
// - perKey(): start() with at most one child per key ever, however long one
//   hangs (a ping per NID, an unmount step per path), with an optional kill
//   deadline that ends the group but holds the key until the child is gone.
// A command is one call: room.run({ argv: ["lnetctl", "net", "show"], ... }),
// or pings.run(nid, { argv: ["lnetctl", "ping", "--timeout", "5", nid], waitMs, killAfterMs, ... }).

import { resolveProgram } from "./path-lookup.js";
import { CommandPlace, type CommandPlaceOptions } from "./place.js";
import type { RepeatedOutput } from "./repeated-output.js";
import { commandResult, CommandTracker, failure, runCommand, type CommandResult } from "./run-command.js";
import { CommandSpawner, type CommandSpawnerOptions } from "./spawner.js";
import { startProcess } from "./start.js";
import { OnePerKey, type KeyedAnswer, type KeyedRun, type OnePerKeyOptions } from "./one-per-key.js";

export interface ProcessRoomOptions extends CommandPlaceOptions {
  /** Environment of the commands; PATH lookup uses env.PATH. */
  env: NodeJS.ProcessEnv;
  /**
   * Start the commands through a resident spawner (spawner.ts) instead of a
   * fork of this process each: true finds the built binary, a string names it.
   * It is started at once, so make the room early.
   */
  commandSpawner?: boolean | string;
  /** A spawner already running, instead of commandSpawner (tests, the bench). */
  spawner?: CommandSpawner;
  /** The spawner's logger (its starts, deaths and fallback). */
  spawnerLogger?: CommandSpawnerOptions["logger"];
}

export interface RoomCommand {
  /** Without the place's prefix: argv[0] is a bare name (looked up in PATH) or an absolute path. */
  argv: readonly string[];
  /** Short human name used in error texts, e.g. "lnetctl ping". */
  label: string;
  /** Cap per stream (stdout and stderr separately). */
  maxOutputBytes: number;
  /** Instead of the room's environment. */
  env?: NodeJS.ProcessEnv;
}

/** A long-lived child, or why none was started (`stage` says where it failed). */
export type LongRun =
  | { ok: true; result: Promise<CommandResult>; kill(): void }
  | { ok: false; stage: "place" | "program" | "stopped"; error: string };

export class ProcessRoom {
  readonly place: CommandPlace;
  readonly env: NodeJS.ProcessEnv;
  /** The resident spawner, when the room was given one. */
  readonly spawner: CommandSpawner | undefined;
  private readonly running = new CommandTracker();

  constructor(opts: ProcessRoomOptions) {
    this.place = new CommandPlace(opts);
    // Frozen: the spawner encodes an environment once per object (spawner.ts).
    this.env = Object.freeze({ ...opts.env });
    if (opts.spawner) {
      this.spawner = opts.spawner;
    } else if (opts.commandSpawner) {
      this.spawner = new CommandSpawner({
        ...(typeof opts.commandSpawner === "string" ? { path: opts.commandSpawner } : {}),
        ...(opts.spawnerLogger ? { logger: opts.spawnerLogger } : {}),
      });
      this.spawner.warm();
    }
  }

  /** Runs a command (the place's prefix first) to its end or its deadline. Never rejects. */
  async run(cmd: RoomCommand & { timeoutMs: number; repeated?: RepeatedOutput }): Promise<CommandResult> {
    const at = await this.place.prefix();
    if (!at.ok) return failure(at.error);
    return runCommand({
      argv: at.argv.length === 0 ? cmd.argv : [...at.argv, ...cmd.argv],
      label: cmd.label,
      timeoutMs: cmd.timeoutMs,
      maxOutputBytes: cmd.maxOutputBytes,
      env: cmd.env ?? this.env,
      tracker: this.running,
      ...(this.spawner ? { spawner: this.spawner } : {}),
      ...(cmd.repeated ? { repeated: cmd.repeated } : {}),
    });
  }

  /**
   * Starts a long-lived child (the place's prefix first) that no deadline
   * kills: its result comes when it ends. Never rejects.
   */
  async start(cmd: RoomCommand): Promise<LongRun> {
    const at = await this.place.prefix();
    if (!at.ok) return { ok: false, stage: "place", error: at.error };
    const argv = [...at.argv, ...cmd.argv];
    const program = argv[0];
    if (program === undefined) return { ok: false, stage: "program", error: "EINVAL: empty argv" };
    const env = cmd.env ?? this.env;
    const resolved = await resolveProgram(program, env.PATH);
    if (!resolved.ok) return { ok: false, stage: "program", error: resolved.error };
    if (this.running.isClosed) return { ok: false, stage: "stopped", error: `ECANCELED: ${cmd.label} not run: the gateway is stopping` };
    const spec = { label: cmd.label, timeoutMs: 0, maxOutputBytes: cmd.maxOutputBytes };
    const started = startProcess({ path: resolved.path, argv, env, timeoutMs: undefined, maxOutputBytes: cmd.maxOutputBytes }, this.spawner);
    const result = started.result.then(
      (run) => commandResult(run, spec, program, resolved.path, undefined, started.viaSpawner),
      // The spawner died with the child in flight: not an answer.
      (err: Error) => failure(`EIO: cannot run ${program}: ${err.message}`),
    );
    return { ok: true, result, kill: started.kill };
  }

  /**
   * Ends every command run() started and refuses new ones; the spawner then
   * ends too (and with it any child start() left, whose group it kills).
   * Long-lived children are their owners' to stop first (one-per-key.ts stop()).
   */
  async stop(): Promise<void> {
    await this.running.stop();
    this.spawner?.stop();
  }

  /** Commands kept to one per key (one-per-key.ts), started in this room. */
  perKey(opts: OnePerKeyOptions): KeyedCommands {
    return new KeyedCommands(this, opts);
  }
}

/** At most one child per key, each started by room.start(); see one-per-key.ts. */
export class KeyedCommands {
  private readonly runs: OnePerKey<CommandResult>;

  constructor(
    private readonly room: Pick<ProcessRoom, "start">,
    opts: OnePerKeyOptions,
  ) {
    this.runs = new OnePerKey<CommandResult>(opts);
  }

  /** Children outstanding, hung ones included. */
  count(): number {
    return this.runs.count();
  }

  /**
   * `key`'s command: its result if it ends within `waitMs` of its start, else
   * "hung" (it is kept and not started again until it ends). `killAfterMs`:
   * its group is killed then, and the key stays held until it is gone (a
   * process in the kernel dies only when its call returns). Never rejects.
   */
  run(key: string, cmd: RoomCommand & { waitMs: number; killAfterMs?: number }): Promise<KeyedAnswer<CommandResult>> {
    return this.runs.run(key, cmd.waitMs, () => {
      const run: KeyedRun<CommandResult> = { kill: undefined, done: Promise.resolve(failure("EIO")) };
      run.done = this.room.start(cmd).then(async (child) => {
        if (!child.ok) return failure(child.error);
        run.kill = child.kill;
        const timer = cmd.killAfterMs === undefined ? undefined : setTimeout(child.kill, cmd.killAfterMs);
        const result = await child.result;
        clearTimeout(timer);
        return result;
      });
      return run;
    });
  }

  /** Kills every child; waits up to `graceMs` for them. Nothing starts after. */
  stop(graceMs?: number): Promise<void> {
    return this.runs.stop(graceMs);
  }
}
