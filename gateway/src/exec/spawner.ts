// The gateway side of the resident command spawner (gateway/native/spawner.c).
//
// Node starts a child with fork(), which copies the gateway's page tables and
// then faults its pages back copy-on-write: 1 to 2.6 ms of gateway CPU per
// command at its working RSS (bench/fork-cost.ts). The spawner is one small
// process, started while the gateway is still small, that starts each command
// with posix_spawn; a command then costs the gateway a pipe write and a read.
//
// This module only carries requests and raw results; run-command.ts turns a
// result into the same CommandResult (and texts) as its direct spawn. Whatever
// goes wrong with the spawner itself costs the commands in flight an error
// (their checks fail closed for that round), never a passing result: a wedged
// spawner is killed, a dead one restarted with backoff, and one that keeps
// failing, or is not built, leaves the gateway on its direct spawn.

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { constants as osConstants } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "../observability/logger.js";
import { encodeWords, fixedBytes, SPAWNER_DONE_FLAGS, SPAWNER_LIMITS, SPAWNER_OPS, wordOffset } from "./spawner-protocol.js";

export const SPAWNER_BINARY = "probegate-spawner";

/** What the spawner saw; run-command.ts composes the result from it. */
export interface SpawnedRun {
  pid: number | undefined;
  /** errno name of a failed start (e.g. "EACCES"), or undefined when it started. */
  spawnError: string | undefined;
  /** Node's own words for a failed direct start (start.ts); the spawner reports the errno only. */
  spawnMessage?: string;
  exited: boolean;
  timedOut: boolean;
  stdoutCut: boolean;
  stderrCut: boolean;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  /** The spawner kept stdout (`SpawnRequest.keep`) and found it equal to the output held: `stdout` is empty, the text is the held one. */
  stdoutSame: boolean;
  /** The request's id: a kept stdout that was sent is kept under it (the token to hold). */
  token: number;
}

/** Which slot keeps a source's last stdout in the spawner, and the token of the output the gateway holds for it (0: none). */
export interface KeepOutput {
  slot: number;
  held: number;
}

export interface SpawnRequest {
  /** Resolved absolute path to execute. */
  path: string;
  /** argv[0] is what the command sees as its name. */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** Killed (group) after this long; undefined: never (a statfs probe, whose hang the caller bounds and reports itself). */
  timeoutMs: number | undefined;
  maxOutputBytes: number;
  keep?: KeepOutput;
}

/** A request in flight: its result (rejects only with a spawner failure) and a way to end it. */
export interface SpawnHandle {
  result: Promise<SpawnedRun>;
  kill(): void;
}

export interface CommandSpawnerOptions {
  /** The binary; default: dist/native/probegate-spawner found from this module. */
  path?: string;
  logger?: Logger;
  /** Beyond a request's timeout and the 1 s pipe grace, how long the spawner may take to answer. */
  watchdogMarginMs?: number;
  /** Failed starts or deaths in a row (no command answered between) before falling back for good. */
  maxFailures?: number;
}

const { REQ_RUN, REQ_KILL, REQ_RUN_KEEP, REP_STARTED, REP_DONE } = SPAWNER_OPS;
const { KEEP_SLOTS, GRACE_MS: PIPE_DRAIN_GRACE_MS, NO_TIMEOUT, MAX_FRAME: MAX_REQUEST_BYTES } = SPAWNER_LIMITS;
const F = SPAWNER_DONE_FLAGS;
// Where the words of a reply are (offsets within a frame, after its length).
const STARTED_BYTES = fixedBytes("STARTED");
const STARTED_PID = wordOffset("STARTED", "pid");
const DONE_BYTES = fixedBytes("DONE");
// Every reply names its request in the same word, so the id is read before the type is known.
const REPLY_ID = wordOffset("DONE", "id");
if (wordOffset("STARTED", "id") !== REPLY_ID) throw new Error("spawner protocol: replies disagree on where the id is");
const DONE_ERRNO = wordOffset("DONE", "spawn_errno");
const DONE_FLAGS = wordOffset("DONE", "flags");
const DONE_CODE = wordOffset("DONE", "exit_code");
const DONE_SIGNAL = wordOffset("DONE", "signal");
const DONE_OUT_LEN = wordOffset("DONE", "stdout_len");
// setTimeout's longest delay; a longer one would fire at once.
const MAX_TIMER_MS = 2 ** 31 - 1;
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 30_000;

const ERRNO_NAMES = new Map<number, string>(Object.entries(osConstants.errno).map(([name, n]) => [n, name]));
const SIGNAL_NAMES = new Map<number, NodeJS.Signals>(
  Object.entries(osConstants.signals).map(([name, n]) => [n, name as NodeJS.Signals]),
);

/** dist/native/probegate-spawner beside whichever dist/ this module runs from (tsc output or bundle). */
export function defaultSpawnerPath(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidates = basename(dir) === "dist" ? [join(dir, "native", SPAWNER_BINARY)] : [join(dir, "dist", "native", SPAWNER_BINARY)];
    for (const c of candidates) if (existsSync(c)) return c;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

interface Pending {
  resolve(run: SpawnedRun): void;
  reject(err: Error): void;
  pid: number | undefined;
  watchdog: NodeJS.Timeout | undefined;
  /** Asked to keep stdout: only then may a reply say "the same". */
  kept: boolean;
}

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

function str(s: string): Buffer[] {
  const b = Buffer.from(s, "utf8");
  return [u32(b.length), b];
}

export class CommandSpawner {
  private readonly path: string | undefined;
  private readonly logger: Logger | undefined;
  private readonly marginMs: number;
  private readonly maxFailures: number;
  private child: ChildProcess | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private inbuf: Buffer = Buffer.alloc(0);
  private parts: Buffer[] = [];
  private buffered = 0;
  /** Bytes needed before the next frame can be complete. */
  private awaiting = 0;
  private failures = 0;
  private notBefore = 0;
  private fallback: string | undefined;
  private stopped = false;
  /** Spawner processes started so far (restarts included); tests read it. */
  starts = 0;
  private readonly slots = new Map<string, number>();

  constructor(opts: CommandSpawnerOptions = {}) {
    this.path = opts.path ?? defaultSpawnerPath();
    this.logger = opts.logger;
    this.marginMs = opts.watchdogMarginMs ?? 2000;
    this.maxFailures = opts.maxFailures ?? 5;
    if (this.path === undefined || !existsSync(this.path)) {
      this.giveUp(
        `${this.path ?? `dist/native/${SPAWNER_BINARY}`} not found (built by npm run build when a C compiler is present)`,
        "info",
      );
    }
  }

  /**
   * Spawner processes started to replace one that died or was killed as
   * wedged (every start after the first); the metrics read it.
   */
  get restarts(): number {
    return Math.max(0, this.starts - 1);
  }

  /** Why commands go the direct way for good, or undefined while the spawner serves them. */
  get fallbackReason(): string | undefined {
    return this.fallback;
  }

  /** The running spawner's pid, if one runs. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * The slot where the spawner keeps `source`'s last stdout (spawner.c, "Kept
   * output"), or undefined once every slot is taken: that source's output is
   * then sent in full every time.
   */
  slotFor(source: string): number | undefined {
    let slot = this.slots.get(source);
    if (slot === undefined && this.slots.size < KEEP_SLOTS) this.slots.set(source, (slot = this.slots.size));
    return slot;
  }

  /** Starts the process now (early, while the gateway is small); later requests reuse it. */
  warm(): void {
    this.ensure();
  }

  /**
   * Sends one command to the spawner, or returns undefined when it cannot take
   * it now (not built, given up on, backing off after a death): the caller
   * then spawns it directly, which works, only at the cost of a fork.
   */
  submit(req: SpawnRequest): SpawnHandle | undefined {
    const env = encodedEnv(req.env);
    // C strings end at a NUL: such an argument would reach the command cut
    // short. Node's spawn refuses it with its own error, so it goes there.
    if (env === undefined || hasNul(req.path) || req.argv.some(hasNul)) return undefined;
    const child = this.ensure();
    if (!child?.stdin) return undefined;
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffff_fff0 ? 1 : this.nextId + 1;
    const parts: Buffer[] = [
      encodeWords(req.keep ? "RUN_KEEP" : "RUN", {
        type: req.keep ? REQ_RUN_KEEP : REQ_RUN,
        id,
        timeout_ms: req.timeoutMs === undefined ? NO_TIMEOUT : Math.min(Math.max(0, Math.ceil(req.timeoutMs)), NO_TIMEOUT - 1),
        cap: Math.min(Math.max(0, req.maxOutputBytes), 0xffff_ffff),
        slot: req.keep?.slot ?? 0,
        held: req.keep?.held ?? 0,
        argc: req.argv.length,
        envc: env.count,
      }),
      ...str(req.path),
    ];
    for (const a of req.argv) parts.push(...str(a));
    parts.push(env.block);
    const body = Buffer.concat(parts);
    // Past what the spawner reads in one frame (spawner.c MAX_FRAME): far past
    // what execve takes too, and the direct spawn reports that (E2BIG).
    if (body.length > MAX_REQUEST_BYTES) return undefined;
    const result = new Promise<SpawnedRun>((resolve, reject) => {
      // The spawner enforces the timeout itself; this only catches a spawner
      // that stopped answering (wedged, stopped, starved), which is then
      // replaced, and the request fails instead of waiting for ever.
      // Without a timeout there is nothing to hold the spawner to; its death
      // still fails the request, and other requests' watchdogs catch a wedge.
      const watchdog =
        req.timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              this.logger?.warn({ spawnerPid: child.pid, timeoutMs: req.timeoutMs }, "command spawner did not answer in time: killing and restarting it");
              this.kill(child, "did not answer in time");
            }, Math.min(MAX_TIMER_MS, req.timeoutMs + PIPE_DRAIN_GRACE_MS + this.marginMs));
      this.pending.set(id, { resolve, reject, pid: undefined, watchdog, kept: req.keep !== undefined });
    });
    child.stdin.write(Buffer.concat([u32(body.length), body]));
    return {
      result,
      kill: () => {
        if (this.child === child && this.pending.has(id)) child.stdin?.write(Buffer.concat([u32(fixedBytes("KILL")), encodeWords("KILL", { type: REQ_KILL, id })]));
      },
    };
  }

  /** Ends the spawner (it kills its commands' groups when its request pipe closes); nothing is started after. */
  stop(): void {
    this.stopped = true;
    const child = this.child;
    if (child) child.stdin?.end();
  }

  private ensure(): ChildProcess | undefined {
    if (this.child) return this.child;
    if (this.fallback !== undefined || this.stopped || this.path === undefined) return undefined;
    if (Date.now() < this.notBefore) return undefined;
    let child: ChildProcess;
    try {
      // Its own session: a Ctrl-C or a `timeout` aimed at the gateway's process
      // group must not kill it under the commands in flight. It lives exactly as
      // long as its request pipe (the gateway gone: it ends its commands and exits).
      child = spawn(this.path, [], { stdio: ["pipe", "pipe", "ignore"], cwd: "/", env: {}, shell: false, detached: true });
    } catch (err) {
      this.failed(`cannot start: ${(err as Error).message}`);
      return undefined;
    }
    this.starts++;
    this.child = child;
    this.inbuf = Buffer.alloc(0);
    this.parts = [];
    this.buffered = 0;
    this.awaiting = 0;
    // Never what keeps the gateway's process alive: a pending request's watchdog does that.
    child.unref();
    (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
    (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    child.stdin?.on("error", () => this.kill(child, "request pipe failed"));
    child.stdout?.on("data", (c: Buffer) => this.onData(child, c));
    child.on("error", (err) => this.gone(child, `failed: ${err.message}`));
    child.on("exit", (code, signal) => this.gone(child, signal ? `killed by ${signal}` : `exited with status ${code}`));
    this.logger?.debug({ pid: child.pid, path: this.path }, "command spawner started");
    return child;
  }

  private kill(child: ChildProcess, why: string): void {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    this.gone(child, why);
  }

  /** The spawner is gone: every request it held fails, and their commands' groups are killed here. */
  private gone(child: ChildProcess, why: string): void {
    if (this.child !== child) return;
    this.child = undefined;
    child.stdout?.removeAllListeners("data");
    const err = new Error(`command spawner ${why}`);
    for (const [id, p] of this.pending) {
      clearTimeout(p.watchdog);
      if (p.pid !== undefined) killGroup(p.pid);
      p.reject(err);
      this.pending.delete(id);
    }
    if (this.stopped) return;
    this.failed(why);
  }

  private failed(why: string): void {
    this.failures++;
    if (this.failures >= this.maxFailures) {
      this.giveUp(`failed ${this.failures} times in a row (last: ${why})`, "warn");
      return;
    }
    this.notBefore = Date.now() + Math.min(BACKOFF_MAX_MS, this.failures <= 1 ? 0 : BACKOFF_BASE_MS * 2 ** (this.failures - 2));
    this.logger?.warn({ reason: why, failures: this.failures }, "command spawner stopped; restarting it (commands run directly meanwhile)");
  }

  private giveUp(reason: string, level: "info" | "warn"): void {
    if (this.fallback !== undefined) return;
    this.fallback = reason;
    this.logger?.[level](
      { reason },
      "command spawner not used: source commands are started by the gateway itself, each costing a fork of the gateway (1-3 ms of CPU at its usual size)",
    );
  }

  private onData(child: ChildProcess, chunk: Buffer): void {
    // A reply of megabytes arrives in 64 KiB reads: gather them and join once
    // the frame is complete, not on every read (quadratic copying).
    this.parts.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.awaiting) return;
    this.inbuf = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.buffered);
    this.parts = [];
    this.buffered = 0;
    this.awaiting = 0;
    let off = 0;
    while (this.inbuf.length - off >= 4) {
      const len = this.inbuf.readUInt32LE(off);
      if (this.inbuf.length - off - 4 < len) break;
      const frame = this.inbuf.subarray(off + 4, off + 4 + len);
      off += 4 + len;
      if (!this.onFrame(frame)) {
        this.kill(child, "sent a malformed reply");
        return;
      }
    }
    if (off < this.inbuf.length) {
      const rest = this.inbuf.subarray(off);
      this.parts = [rest];
      this.buffered = rest.length;
      this.awaiting = rest.length >= 4 ? 4 + rest.readUInt32LE(0) : 4;
    }
    this.inbuf = Buffer.alloc(0);
  }

  private onFrame(f: Buffer): boolean {
    if (f.length < 8) return false;
    const type = f.readUInt32LE(0);
    const id = f.readUInt32LE(REPLY_ID);
    const p = this.pending.get(id);
    if (type === REP_STARTED) {
      if (f.length !== STARTED_BYTES) return false;
      if (p) p.pid = f.readInt32LE(STARTED_PID);
      return true;
    }
    if (type !== REP_DONE || f.length < DONE_BYTES + 4) return false;
    const errno = f.readInt32LE(DONE_ERRNO);
    const flags = f.readUInt32LE(DONE_FLAGS);
    const code = f.readInt32LE(DONE_CODE);
    const sig = f.readInt32LE(DONE_SIGNAL);
    const outLen = f.readUInt32LE(DONE_OUT_LEN);
    // The tail: stdout, then stderr's length and stderr.
    const errAt = DONE_BYTES + outLen;
    if (f.length < errAt + 4) return false;
    const errLen = f.readUInt32LE(errAt);
    if (f.length !== errAt + 4 + errLen) return false;
    const same = (flags & F.SAME_OUT) !== 0;
    if (same && (outLen !== 0 || (p && !p.kept))) return false;
    if (!p) return true;
    this.pending.delete(id);
    clearTimeout(p.watchdog);
    this.failures = 0;
    const exited = (flags & F.EXITED) !== 0;
    // Copies: the frame is a view of a buffer reused for the next reads.
    p.resolve({
      pid: p.pid,
      spawnError: errno === 0 ? undefined : (ERRNO_NAMES.get(errno) ?? "EIO"),
      exited,
      timedOut: (flags & F.TIMED_OUT) !== 0,
      stdoutCut: (flags & F.STDOUT_CUT) !== 0,
      stderrCut: (flags & F.STDERR_CUT) !== 0,
      exitCode: exited && code >= 0 ? code : null,
      signal: exited && sig > 0 ? (SIGNAL_NAMES.get(sig) ?? null) : null,
      stdout: Buffer.from(f.subarray(DONE_BYTES, errAt)),
      stderr: Buffer.from(f.subarray(errAt + 4, errAt + 4 + errLen)),
      stdoutSame: same,
      token: id,
    });
    return true;
  }
}

const hasNul = (s: string): boolean => s.includes("\0");

/** An environment as the request carries it: its count and its `KEY=VALUE` strings, each length-prefixed. */
interface EnvBlock {
  count: number;
  block: Buffer;
}

// Encoded once per environment object: a room passes the same one to every
// command, and re-encoding it (a pod's environment holds a variable per
// Service) was the largest part of a round's spawner requests in a CPU profile
// (docs/performance.md). Environments are not changed once made (room.ts), so
// the object is the key. null: it holds a NUL and goes the direct way.
const envBlocks = new WeakMap<NodeJS.ProcessEnv, EnvBlock | null>();

function encodedEnv(env: NodeJS.ProcessEnv): EnvBlock | undefined {
  let e = envBlocks.get(env);
  if (e === undefined) {
    const pairs = Object.entries(env).filter((p): p is [string, string] => p[1] !== undefined);
    e = pairs.some(([k, v]) => hasNul(k) || hasNul(v))
      ? null
      : { count: pairs.length, block: Buffer.concat(pairs.flatMap(([k, v]) => str(`${k}=${v}`))) };
    envBlocks.set(env, e);
  }
  return e ?? undefined;
}

function killGroup(pid: number): void {
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // ESRCH: the group is already gone.
  }
}
