// The one place a process is started: through the resident spawner when it
// takes the request (spawner.ts), else by a direct spawn of this process that
// does what spawner.c does, reporting the same raw facts (SpawnedRun). Callers
// compose their results from those facts only, so the two ways cannot drift.
//
// Every child leads its own process group (detached) so a deadline, an output
// overrun or a kill can SIGKILL the command *and* anything it forked;
// otherwise a hung `lnetctl ping` helper could outlive the gateway's interest
// in it. argv only (no shell), the environment given, cwd "/", stdin closed.

import { spawn, type ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";
import type { CommandSpawner, SpawnedRun, SpawnHandle, SpawnRequest } from "./spawner.js";
import { SPAWNER_LIMITS } from "./spawner-protocol.js";

/** A started process: the raw facts when it ends, a way to kill its group, and which way it was started. */
export interface StartedProcess extends SpawnHandle {
  /** The spawner started it: a kept output (`SpawnRequest.keep`) applies to its stdout. */
  viaSpawner: boolean;
}

/**
 * Starts `req`; never throws. Without a timeout (`timeoutMs` undefined) the
 * process is never killed by time: its `result` comes when it ends, however
 * long that takes (the caller bounds its own wait, as the statfs probes do).
 */
export function startProcess(req: SpawnRequest, spawner: CommandSpawner | undefined): StartedProcess {
  const handle = spawner?.submit(req);
  if (handle) return { ...handle, viaSpawner: true };
  return { ...startDirect(req), viaSpawner: false };
}

// After SIGKILL the pipes normally close at once; if something outside the
// group (e.g. a grandchild that called setsid) still holds them, give up on
// them after this long instead of waiting forever (spawner.c does the same).
const PIPE_DRAIN_GRACE_MS = SPAWNER_LIMITS.GRACE_MS;

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
}

export function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone.
  }
}

function notStarted(err: unknown): SpawnedRun {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? "EIO";
  const message = err instanceof Error ? err.message : String(err);
  return { ...NOTHING, spawnError: code, spawnMessage: message };
}

const NOTHING: SpawnedRun = {
  pid: undefined,
  spawnError: undefined,
  exited: false,
  timedOut: false,
  stdoutCut: false,
  stderrCut: false,
  exitCode: null,
  signal: null,
  stdout: Buffer.alloc(0),
  stderr: Buffer.alloc(0),
  stdoutSame: false,
  token: 0,
};

function startDirect(req: SpawnRequest): SpawnHandle {
  const [argv0, ...args] = req.argv;
  let child: ChildProcess;
  try {
    child = spawn(req.path, args, {
      ...(argv0 !== undefined ? { argv0 } : {}),
      shell: false,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: req.env,
      // Commands must not depend on wherever the gateway was started from.
      cwd: "/",
    });
  } catch (err) {
    return { result: Promise.resolve(notStarted(err)), kill: () => undefined };
  }

  const result = new Promise<SpawnedRun>((resolve) => {
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
      killGroup(child.pid);
      abandonPipesLater();
    };
    const out = new CappedCollector(req.maxOutputBytes, overflow);
    const err = new CappedCollector(req.maxOutputBytes, overflow);
    // When the spawn itself fails for want of descriptors (EMFILE, ENFILE) Node
    // sets up no pipes and reports the failure on 'error' in the next tick.
    (child.stdout as Readable | null)?.on("data", (c: Buffer) => out.push(c));
    (child.stderr as Readable | null)?.on("data", (c: Buffer) => err.push(c));

    const timer =
      req.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            if (!exited) timedOut = true;
            killGroup(child.pid);
            abandonPipesLater();
          }, req.timeoutMs);

    const finish = (failed?: unknown): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      if (failed !== undefined) {
        resolve(notStarted(failed));
        return;
      }
      resolve({
        pid: child.pid,
        spawnError: undefined,
        exited,
        timedOut,
        stdoutCut: out.truncated,
        stderrCut: err.truncated,
        exitCode,
        signal: exitSignal,
        stdout: out.joined(),
        stderr: err.joined(),
        stdoutSame: false,
        token: 0,
      });
    };

    child.on("error", (e) => {
      killGroup(child.pid);
      finish(e);
    });
    child.on("exit", (code, signal) => {
      exited = true;
      exitCode = code;
      exitSignal = signal;
      // Reap anything the command left running in its group; its output
      // already sits in the pipes and is still read to the end.
      killGroup(child.pid);
    });
    // 'close', not 'exit': the output is complete. A process stuck in the
    // kernel gets here only when its call returns.
    child.on("close", () => finish());
  });
  return { result, kill: () => killGroup(child.pid) };
}
