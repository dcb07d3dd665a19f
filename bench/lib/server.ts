// Starting and stopping a server under test as its own process.
import { type ChildProcess, spawn } from "node:child_process";
import { probeNewConnection } from "../load/probe-client.js";
import type { ServerCtx, ServerTarget } from "../targets.js";
import { sleep } from "./net.js";
import { pinned } from "./pin.js";

export interface RunningServer {
  target: ServerTarget;
  ctx: ServerCtx;
  pid: number;
  proc: ChildProcess;
  notes: string[];
  stderrTail(): string;
  /** The last 4,000 characters the server wrote to stdout. */
  stdoutTail(): string;
  /** Why the server is gone ("exited (1): …stderr"), or undefined while it runs. */
  gone(): string | undefined;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
/** Kills every server still running (on abnormal exit of the orchestrator). */
export function killAll(): void {
  for (const p of live) p.kill("SIGKILL");
}

export async function startServer(
  t: ServerTarget,
  ctx: ServerCtx,
  extraNodeArgs: string[] = [],
  timeoutMs = 30_000,
  extraEnv: Record<string, string> = {},
): Promise<RunningServer> {
  const c = t.command(ctx);
  const isNode = c.cmd === process.execPath || c.cmd === ctx.node;
  const args = isNode ? [...extraNodeArgs, ...c.args] : c.args;
  // --pin: the server on its own core (taskset execs the command, so the pid is the server's).
  const run = pinned("server", c.cmd, args);
  const proc = spawn(run.cmd, run.args, { cwd: ctx.root, env: { ...process.env, ...c.env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
  live.add(proc);
  let err = "";
  let out = "";
  let exited: number | null | undefined;
  proc.stderr!.on("data", (d) => (err = (err + d).slice(-4000)));
  proc.stdout!.on("data", (d) => (out = (out + d).slice(-4000)));
  const exit = new Promise<void>((r) =>
    proc.on("exit", (code, sig) => {
      exited = code ?? (sig ? -1 : null);
      live.delete(proc);
      r();
    }),
  );
  const notes: string[] = [];
  const server: RunningServer = {
    target: t,
    ctx,
    pid: proc.pid!,
    proc,
    notes,
    stderrTail: () => err.trim().split("\n").slice(-8).join("\n"),
    stdoutTail: () => out,
    gone: () => (exited === undefined ? undefined : `exited (${exited === -1 ? "signal" : exited}): ${server.stderrTail() || out.trim().slice(-2000)}`),
    stop: async () => {
      if (exited !== undefined) return;
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exit;
      clearTimeout(t);
    },
  };
  const deadline = Date.now() + timeoutMs;
  let lastProbe = "";
  for (;;) {
    if (exited !== undefined) throw new Error(`exited (${exited}) before ready: ${server.stderrTail() || out.trim()}`);
    if (Date.now() > deadline) {
      await server.stop();
      throw new Error(`not ready after ${timeoutMs} ms (${lastProbe}): ${server.stderrTail()}`);
    }
    if (t.readiness === "stdout") {
      if (out.includes("READY")) break;
    } else {
      const r = await probeNewConnection({ socketPath: ctx.socket }, 1000);
      lastProbe = r.ok ? `ready=${r.ready}` : r.error ?? "error";
      if (r.ok && r.ready) break;
      if (r.ok && Date.now() > deadline - timeoutMs / 2) {
        notes.push(`Probe answered ready=false for ${timeoutMs / 2} ms after start; measured anyway`);
        break;
      }
    }
    await sleep(100);
  }
  return server;
}
