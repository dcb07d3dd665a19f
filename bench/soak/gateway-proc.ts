// A probegate process under soak: started with the launcher's heap flags,
// its log lines counted (never stored whole), its exits noticed and, when
// not asked for, counted as crashes and followed by a restart so the run
// goes on. Sampled for RSS, open file descriptors, threads and children.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { PROBEGATE_NODE_ENV } from "../lib/launch.js";
import { rssBytes } from "../lib/proc.js";
import { fetchMetrics, parseV8Metrics } from "./v8-metrics.js";

export interface LogCounts {
  lines: number;
  bytes: number;
  /** pino level ≥ 50 (error, fatal). */
  errors: number;
  /** Lines that are not JSON (a stack trace on a crash, a runtime warning). */
  nonJson: number;
  /** Unhandled rejections or uncaught exceptions reported on stderr. */
  unhandled: number;
  /** Count per message text (bounded to 200 distinct texts). */
  byMsg: Record<string, number>;
  /** The last few error and non-JSON lines, for the report. */
  samples: string[];
}

export interface ProcSample {
  t: number;
  rssMiB: number;
  fds: number;
  threads: number;
  children: number;
  /** V8 heap used and committed, and external memory (MiB), from the gateway's /metrics; absent when it did not answer. */
  heapUsedMiB?: number;
  heapTotalMiB?: number;
  externalMiB?: number;
}

export interface GatewaySpec {
  name: string;
  root: string;
  socket: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** V8 old-space cap, as the deployment sets it: 48 MiB (the image's launcher flags, with or without node reporting). */
  heapMiB: number;
}

const UNHANDLED = /unhandled ?rejection|uncaught ?exception|UnhandledPromiseRejection/i;

export class GatewayProc {
  child: ChildProcess | undefined;
  pid = 0;
  http = "";
  starts = 0;
  crashes: Array<{ at: number; code: number | null; signal: string | null; tail: string }> = [];
  readonly logs: LogCounts = { lines: 0, bytes: 0, errors: 0, nonJson: 0, unhandled: 0, byMsg: {}, samples: [] };
  readonly samples: ProcSample[] = [];
  private stopping = false;
  /** Date.now() of the last crash; requests failing soon after it are the crash's. */
  lastCrashAt = 0;
  private tail: string[] = [];
  private exitWaiters: Array<() => void> = [];
  onCrash?: () => void;

  constructor(readonly spec: GatewaySpec, private readonly t0: number) {}

  get port(): number {
    return Number(this.http.slice(this.http.lastIndexOf(":") + 1));
  }

  async start(timeoutMs = 60_000): Promise<void> {
    const { spec } = this;
    fs.rmSync(spec.socket, { force: true });
    const child = spawn(
      process.execPath,
      ["--no-node-snapshot", "--no-maglev", "--max-semi-space-size=1", `--max-old-space-size=${spec.heapMiB}`, path.join(spec.root, "bin/probegate.js"), ...spec.args],
      { env: { ...spec.env, ...PROBEGATE_NODE_ENV }, stdio: ["ignore", "ignore", "pipe"] },
    );
    this.child = child;
    this.pid = child.pid!;
    this.starts++;
    let partial = "";
    let started: (() => void) | undefined;
    const startedP = new Promise<void>((r) => (started = r));
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      partial += chunk;
      let nl;
      while ((nl = partial.indexOf("\n")) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        this.countLine(line, () => started?.());
      }
    });
    child.once("exit", (code, signal) => {
      // Waiters of this process first: a restart from onCrash registers its own.
      for (const w of this.exitWaiters.splice(0)) w();
      if (!this.stopping) {
        this.crashes.push({ at: Date.now() - this.t0, code, signal, tail: this.tail.join("\n").slice(-2000) });
        this.lastCrashAt = Date.now();
        this.onCrash?.();
      }
    });
    const timer = new Promise<never>((_, rej) => setTimeout(() => rej(new Error(`${spec.name}: no start line in ${timeoutMs} ms: ${this.tail.join("\n")}`)), timeoutMs).unref());
    const exited = new Promise<never>((_, rej) => this.exitWaiters.push(() => rej(new Error(`${spec.name} exited before starting: ${this.tail.join("\n")}`))));
    await Promise.race([startedP, timer, exited]);
  }

  private countLine(line: string, onStarted: () => void): void {
    const L = this.logs;
    L.lines++;
    L.bytes += line.length + 1;
    this.tail.push(line.slice(0, 500));
    if (this.tail.length > 20) this.tail.shift();
    if (UNHANDLED.test(line)) {
      L.unhandled++;
      this.sample(line);
    }
    let obj: { level?: number; msg?: string; httpEndpoint?: string } | undefined;
    try {
      obj = JSON.parse(line);
    } catch {
      L.nonJson++;
      this.sample(line);
      return;
    }
    const msg = String(obj?.msg ?? "");
    if (msg in L.byMsg || Object.keys(L.byMsg).length < 200) L.byMsg[msg] = (L.byMsg[msg] ?? 0) + 1;
    if ((obj?.level ?? 0) >= 50) {
      L.errors++;
      this.sample(line);
    }
    if (msg === "probegate started" && obj?.httpEndpoint) {
      this.http = obj.httpEndpoint;
      onStarted();
    }
  }

  private sample(line: string): void {
    this.logs.samples.push(line.slice(0, 400));
    if (this.logs.samples.length > 10) this.logs.samples.shift();
  }

  alive(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** RSS, descriptors, threads and child processes from /proc; nothing when the process is gone. */
  takeSample(now: number): ProcSample | undefined {
    if (!this.alive()) return undefined;
    try {
      const s: ProcSample = {
        t: now - this.t0,
        rssMiB: rssBytes(this.pid) / 1048576,
        fds: fs.readdirSync(`/proc/${this.pid}/fd`).length,
        threads: fs.readdirSync(`/proc/${this.pid}/task`).length,
        children: countChildren(this.pid),
      };
      this.samples.push(s);
      return s;
    } catch {
      return undefined;
    }
  }

  /** Adds V8's own numbers to a sample (one GET /metrics), so an RSS slope can be told apart into V8 heap and native memory. */
  async addV8(s: ProcSample): Promise<void> {
    if (!this.http) return;
    const body = await fetchMetrics(this.port, 2_000);
    if (!body) return;
    const m = parseV8Metrics(body);
    const mib = (x: number) => (Number.isFinite(x) ? Math.round((x / 1048576) * 100) / 100 : undefined);
    s.heapUsedMiB = mib(m.heapUsed);
    s.heapTotalMiB = mib(m.heapTotal);
    s.externalMiB = mib(m.external);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (!this.alive()) return;
    const gone = new Promise<void>((r) => this.exitWaiters.push(r));
    this.child!.kill("SIGTERM");
    const t = setTimeout(() => this.child?.kill("SIGKILL"), 10_000);
    await gone;
    clearTimeout(t);
  }
}

/** Processes whose parent is `pid` (the fake lnetctl/lctl it runs; a leak would pile them up). */
export function countChildren(pid: number): number {
  let n = 0;
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) n++;
    } catch {
      /* gone */
    }
  }
  return n;
}
