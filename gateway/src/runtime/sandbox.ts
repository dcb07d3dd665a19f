import { Worker, type ResourceLimits } from "node:worker_threads";
import { performance } from "node:perf_hooks";
import type { Logger } from "../observability/logger.js";
import type { WasmModule } from "./wasm-api.js";
import type { WorkerAbi } from "./abi/index.js";
import { sandboxWorkerSource } from "./sandbox-worker.js";
import { TraceLog } from "./trace-log.js";
import { DEFAULTS, type CallResult, type FaultReason } from "./types.js";

export interface SandboxOptions {
  /** Default per-call deadline. */
  timeoutMs?: number;
  maxOutputBytes?: number;
  /** The plugins' memory cap (--plugin-memory), named when a plugin runs into it. */
  memoryMiB?: number;
  logger?: Logger;
  /**
   * Receives each trace() line with the label the plugin was registered
   * under. Default: the logger at debug, rate-limited per plugin (trace-log.ts).
   */
  onTrace?: (label: string, message: string) => void;
  /** V8 heap limits of the worker; wasm memories are capped separately (see wasm-binary.ts). */
  resourceLimits?: ResourceLimits;
}

interface Job {
  id: number;
  key: string;
  fn: "manifest" | "check";
  input?: string;
  timeoutMs: number;
  resolve: (r: CallResult) => void;
}

/**
 * One worker thread hosts every loaded plugin. Checks are microseconds of
 * wasm each, so one thread is plenty, and each extra V8 isolate would cost
 * several MiB of RSS against the gateway's 64 MiB budget. Calls are sent one
 * at a time so a deadline measures only the plugin's own run (never time spent
 * queued behind another plugin) and so a terminate() — the only way to stop a
 * wasm loop — never takes an innocent call down with it. After a terminate
 * a fresh worker is started and every module is registered again; instances
 * are re-created lazily on their next call.
 */
export class Sandbox {
  private worker: Worker | null = null;
  /** Set once the worker runs: a deadline must not include isolate start-up, which a loaded node can stretch. */
  private workerOnline = false;
  private readonly modules = new Map<string, { module: WasmModule; abi: WorkerAbi }>();
  private readonly labels = new Map<string, string>();
  private readonly onTrace: ((label: string, message: string) => void) | undefined;
  private readonly queue: Job[] = [];
  private current: { job: Job; timer: NodeJS.Timeout; started: number } | null = null;
  private nextId = 1;
  private closed = false;
  private readonly timeoutMs: number;
  private readonly maxOutputBytes: number;
  /** Worker restarts so far (deadline hits and crashes); visible for tests and metrics. */
  restarts = 0;
  /** Instances dropped after a call left their memory past the worker's keep size (sandbox-worker.ts). */
  released = 0;

  constructor(private readonly opts: SandboxOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULTS.timeoutMs;
    this.maxOutputBytes = opts.maxOutputBytes ?? DEFAULTS.maxOutputBytes;
    if (opts.onTrace) this.onTrace = opts.onTrace;
    else if (opts.logger) {
      const log = new TraceLog(opts.logger);
      this.onTrace = (label, message) => log.log(label, message);
    }
  }

  /**
   * `abi` is the loader's answer (the ABI the module was checked against),
   * which the worker calls it by; `label` names the plugin in its trace
   * lines (default: the key).
   */
  register(key: string, module: WasmModule, abi: WorkerAbi, label = key): void {
    this.modules.set(key, { module, abi });
    this.labels.set(key, label);
    this.worker?.postMessage({ op: "register", key, module, abi });
  }

  unregister(key: string): void {
    this.labels.delete(key);
    if (!this.modules.delete(key)) return;
    this.worker?.postMessage({ op: "unregister", key });
  }

  call(key: string, fn: "manifest" | "check", input?: string, timeoutMs?: number): Promise<CallResult> {
    if (this.closed) return Promise.resolve(fault("PluginUnloaded", "sandbox is closed", 0));
    return new Promise((resolve) => {
      this.queue.push({ id: this.nextId++, key, fn, input, timeoutMs: timeoutMs ?? this.timeoutMs, resolve });
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.current) {
      clearTimeout(this.current.timer);
      this.current.job.resolve(fault("PluginUnloaded", "sandbox closed during the call", 0));
      this.current = null;
    }
    for (const job of this.queue.splice(0)) job.resolve(fault("PluginUnloaded", "sandbox closed", 0));
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(sandboxWorkerSource, {
      eval: true,
      env: {},
      argv: [],
      execArgv: [],
      stdout: true,
      stderr: true,
      resourceLimits: this.opts.resourceLimits ?? {
        maxOldGenerationSizeMb: 24,
        maxYoungGenerationSizeMb: 4,
        codeRangeSizeMb: 16,
        stackSizeMb: 2,
      },
    });
    // Unref'd: the sandbox alone must not keep a process alive; an in-flight
    // call's deadline timer does, so no call is ever abandoned.
    w.unref();
    w.on("message", (msg: { type: string; id?: number; key?: string; message?: string; ok?: boolean; output?: string; reason?: FaultReason; released?: boolean }) => {
      if (w !== this.worker) return;
      if (msg.type === "trace") {
        this.onTrace?.(this.labels.get(msg.key!) ?? msg.key!, msg.message ?? "");
        return;
      }
      const cur = this.current;
      if (msg.type !== "reply" || !cur || cur.job.id !== msg.id) return;
      clearTimeout(cur.timer);
      this.current = null;
      if (msg.released) this.released++;
      const durationMs = performance.now() - cur.started;
      cur.job.resolve(
        msg.ok
          ? { ok: true, output: msg.output!, durationMs }
          : fault(msg.reason ?? "PluginTrap", msg.message ?? "unknown fault", durationMs),
      );
      this.pump();
    });
    const onDeath = (why: string) => {
      if (w !== this.worker) return;
      this.worker = null;
      this.restarts++;
      const cur = this.current;
      this.current = null;
      if (cur) {
        clearTimeout(cur.timer);
        cur.job.resolve(fault("PluginTrap", `sandbox worker died during the call: ${why}`, performance.now() - cur.started));
      }
      this.opts.logger?.warn({ why }, "plugin sandbox worker died; starting a new one");
      this.pump();
    };
    w.on("online", () => {
      if (w !== this.worker) return;
      this.workerOnline = true;
      this.pump();
    });
    w.on("error", (err) => onDeath(err.message));
    w.on("exit", (code) => onDeath(`exit code ${code}`));
    for (const [key, { module, abi }] of this.modules) w.postMessage({ op: "register", key, module, abi });
    this.worker = w;
    this.workerOnline = false;
    return w;
  }

  private pump(): void {
    if (this.current || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    if (!this.modules.has(job.key)) {
      job.resolve(fault("PluginUnloaded", "plugin is not loaded", 0));
      queueMicrotask(() => this.pump());
      return;
    }
    const w = this.ensureWorker();
    if (!this.workerOnline) {
      this.queue.unshift(job);
      return;
    }
    const started = performance.now();
    const timer = setTimeout(() => this.onDeadline(job), job.timeoutMs);
    this.current = { job, timer, started };
    w.postMessage({ op: "call", id: job.id, key: job.key, fn: job.fn, input: job.input, maxOutputBytes: this.maxOutputBytes, memoryMiB: this.opts.memoryMiB ?? DEFAULTS.memoryMiB });
  }

  private onDeadline(job: Job): void {
    const cur = this.current;
    if (!cur || cur.job !== job) return;
    this.current = null;
    const w = this.worker;
    // Detach first so the exit event of the terminated worker is not taken for a crash.
    this.worker = null;
    this.restarts++;
    if (w) void w.terminate();
    job.resolve(fault("PluginTimeout", `${job.fn}() did not return within ${job.timeoutMs} ms`, performance.now() - cur.started));
    this.pump();
  }
}

function fault(reason: FaultReason, message: string, durationMs: number): CallResult {
  return { ok: false, reason, message, durationMs };
}
