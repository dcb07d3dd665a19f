import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
export const BIN = path.join(ROOT, "bin", "probegate.js");

export interface GatewayProcess {
  child: ChildProcess;
  /** unix socket path of the CSI endpoint */
  socket: string;
  /** host:port of the HTTP endpoint */
  http: string;
  /** every JSON log line so far */
  logs(): Array<Record<string, unknown>>;
  stderr(): string;
  /** resolves with the exit code */
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

// Every process a test starts is reaped when the test file ends, even if the
// test failed before stopping it: a leaked gateway would skew later tests and
// benchmarks on a shared 2-core machine.
const live = new Set<ChildProcess>();
afterAll(() => {
  for (const c of live) c.kill("SIGKILL");
});
process.once("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/** The node flags the image starts probegate with (deploy/Dockerfile, bin/probegate.js). */
export const IMAGE_NODE_FLAGS = ["--no-node-snapshot", "--no-maglev", "--max-semi-space-size=1", "--max-old-space-size=48"];

export function tempDir(prefix = "probegate-test-"): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Starts `probegate` as a real process on a fresh socket and an ephemeral port,
 * and waits for its start log line (which names the bound addresses).
 */
export async function startGatewayProcess(
  args: string[] = [],
  opts: {
    env?: NodeJS.ProcessEnv;
    socket?: string;
    timeoutMs?: number;
    waitFor?: "started" | "exit";
    /** Node flags before the script, e.g. the image's (IMAGE_NODE_FLAGS). */
    nodeArgs?: string[];
    /** Another install's bin/probegate.js (a copy laid out otherwise); default: this checkout's. */
    bin?: string;
  } = {},
): Promise<GatewayProcess> {
  if (!fs.existsSync(path.join(ROOT, "dist/gateway/src/cli/main.js"))) {
    throw new Error("dist/ is missing: run `npm run build` (npm test does) before the integration tests");
  }
  const socket = opts.socket ?? path.join(tempDir(), "csi.sock");
  // Tests of the serving stack run with no checks (an empty plugin directory),
  // so readiness is deterministic on any machine; tests of checks pass their own.
  // A node with no readiness check is never ready (NoChecks), so these run in
  // controller mode unless the test chose a mode.
  const noChecks = !args.some((a) => a.startsWith("--plugins-dir") || a.startsWith("--demo"));
  const modeChosen = args.some((a) => a.startsWith("--mode"));
  const fullArgs = [
    ...(opts.nodeArgs ?? []),
    opts.bin ?? BIN,
    `--csi-endpoint=unix://${socket}`,
    "--http-endpoint=127.0.0.1:0",
    "--log-level=debug",
    ...(noChecks ? [`--plugins-dir=${tempDir("probegate-no-plugins-")}`] : []),
    ...(noChecks && !modeChosen ? ["--mode=controller"] : []),
    ...args,
  ];
  const child = spawn(process.execPath, fullArgs, {
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  child.once("exit", () => live.delete(child));
  let err = "";
  const lines: Array<Record<string, unknown>> = [];
  child.stderr!.setEncoding("utf8");
  child.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const started = new Promise<Record<string, unknown>>((resolve, reject) => {
    let partial = "";
    child.stderr!.on("data", (chunk: string) => {
      err += chunk;
      partial += chunk;
      let nl;
      while ((nl = partial.indexOf("\n")) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        try {
          const obj = JSON.parse(line);
          lines.push(obj);
          if (obj.msg === "probegate started") resolve(obj);
        } catch {
          // not a log line (e.g. a usage error): kept in stderr()
        }
      }
    });
    void exited.then((code) => reject(new Error(`probegate exited with ${code} before starting:\n${err}`)));
    setTimeout(() => reject(new Error(`probegate did not start in time:\n${err}`)), opts.timeoutMs ?? 30_000).unref();
  });
  const gp: GatewayProcess = {
    child,
    socket,
    http: "",
    logs: () => lines,
    stderr: () => err,
    exited,
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
  const startLine = await started;
  gp.http = String(startLine.httpEndpoint);
  if (noChecks && gp.http !== "off") await untilReady(gp.http);
  return gp;
}

/** With no checks the first evaluation round completes at once; wait for it. */
async function untilReady(http: string, timeoutMs = 15_000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    const res = await fetch(`http://${http}/readyz`).catch(() => undefined);
    if (res?.status === 200) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`gateway on ${http} did not become ready with no checks`);
}

/** Runs probegate to completion (for flag errors, --help, listen failures). */
export function runProbegate(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    live.add(child);
    child.once("exit", () => live.delete(child));
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`probegate ${args.join(" ")} did not exit: ${stderr}`));
    }, timeoutMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
