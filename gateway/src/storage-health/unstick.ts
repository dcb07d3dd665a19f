// Ending a stuck unmount, only when an operator turned it on (--unstick=unmount):
// the escalation GKE's Lustre driver runs in its own code, run by probegate for
// every driver. For a stuck NodeUnpublishVolume/NodeUnstageVolume whose path is
// a Lustre mount under the kubelet directory: `umount -f PATH` (aborts the
// client's in-flight RPCs, so the driver's own blocked umount returns), then,
// if the path is still mounted, `umount -l PATH`. Each step: through the
// process room (the Lustre tools' prefix/namespace rules), an allowlisted argv,
// its own deadline; one step in flight per path; a path tried at most once per
// --unstick-after; at most MAX_PATHS_PER_WINDOW paths started node-wide per
// --unstick-after. It never answers for the driver: the kubelet's next retry
// goes through the driver as usual, and succeeds once the path is gone.

import type { Counter } from "prom-client";
import { counter } from "../observability/declare.js";
import type { CommandResult } from "../exec/run-command.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { parseMountTable } from "../engine/sources/mount-table.js";
import type { Operation, OperationTable } from "./operations.js";

export const DEFAULT_UNSTICK_AFTER_MS = 10 * 60_000;
/** Paths whose escalation may start node-wide within one --unstick-after. */
export const MAX_PATHS_PER_WINDOW = 8;
export const FORCE_TIMEOUT_MS = 10_000;
export const LAZY_TIMEOUT_MS = 5_000;

export type UnstickStep = "force" | "lazy";
export type UnstickOutcome = "unmounted" | "still_mounted" | "failed" | "timeout" | "refused" | "rate_limited";

export interface UnstickReport {
  op: Readonly<Operation>;
  /** undefined for a refusal before any step. */
  step: UnstickStep | undefined;
  outcome: UnstickOutcome;
  detail: string;
}

export interface UnstickerOptions {
  table: OperationTable;
  room: { run(cmd: { argv: readonly string[]; label: string; timeoutMs: number; maxOutputBytes: number }): Promise<CommandResult> };
  /** The mount table as the mount's own namespace shows it (proc.mounts), and when it was read (epoch ms); undefined when unreadable. */
  readMounts(): Promise<{ text: string; at: number } | undefined>;
  kubeletDir: string;
  unstickAfterMs?: number;
  forceTimeoutMs?: number;
  lazyTimeoutMs?: number;
  maxPathsPerWindow?: number;
  logger: Logger;
  metrics?: Metrics;
  tickMs?: number;
  now?: () => number;
}

/** The steps' counter, registered once per registry (every mode exports it, at 0 without --unstick). */
export function unstickCounter(m: Metrics): Counter<"step" | "outcome"> {
  const name = "probegate_unstick_steps_total";
  return (
    (m.registry.getSingleMetric(name) as Counter<"step" | "outcome"> | undefined) ??
    counter(m.registry, name, "Escalation steps on stuck unmounts (--unstick=unmount), by step (force, lazy, none for a refusal) and outcome.", ["step", "outcome"] as const)
  );
}

const UNMOUNT_METHODS = new Set(["NodeUnpublishVolume", "NodeUnstageVolume"]);

export class Unsticker {
  private readonly after: number;
  private readonly now: () => number;
  private readonly inFlight = new Set<string>();
  /** Path -> when its escalation last started (pruned past one window). */
  private readonly tried = new Map<string, number>();
  private starts: number[] = [];
  private readonly timer: NodeJS.Timeout;
  private readonly counter: Counter<"step" | "outcome"> | undefined;
  private stopped = false;
  private readonly listeners = new Set<(r: UnstickReport) => void>();

  constructor(private readonly opts: UnstickerOptions) {
    this.after = opts.unstickAfterMs ?? DEFAULT_UNSTICK_AFTER_MS;
    this.now = opts.now ?? Date.now;
    this.counter = opts.metrics ? unstickCounter(opts.metrics) : undefined;
    this.timer = setInterval(() => this.tick(), opts.tickMs ?? Math.min(15_000, Math.max(50, Math.floor(this.after / 4))));
    this.timer.unref();
  }

  /** Told of every step and refusal (Events). */
  subscribe(fn: (r: UnstickReport) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Paths with a step running now (at most one each). */
  running(): number {
    return this.inFlight.size;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }

  tick(): void {
    if (this.stopped) return;
    const at = this.now();
    for (const [p, t] of this.tried) if (at - t >= this.after) this.tried.delete(p);
    this.starts = this.starts.filter((t) => at - t < this.after);
    for (const op of this.opts.table.stuck()) {
      if (!UNMOUNT_METHODS.has(op.method) || at - op.firstAt < this.after) continue;
      if (this.inFlight.has(op.path) || this.tried.has(op.path)) continue;
      this.tried.set(op.path, at);
      if (this.starts.length >= (this.opts.maxPathsPerWindow ?? MAX_PATHS_PER_WINDOW)) {
        this.report({ op, step: undefined, outcome: "rate_limited", detail: `more than ${this.opts.maxPathsPerWindow ?? MAX_PATHS_PER_WINDOW} paths in one --unstick-after window; tried again in the next` });
        continue;
      }
      this.starts.push(at);
      this.inFlight.add(op.path);
      this.opts.logger.warn({ method: op.method, volumeId: op.volumeId.slice(0, 128), path: op.path }, "stuck unmount escalation started");
      // A failure here (a mount table that cannot be read) must not become an unhandled rejection: that ends the process.
      void this.escalate(op)
        .catch((err: unknown) => this.opts.logger.warn({ path: op.path, err: (err as Error).message }, "stuck unmount escalation failed"))
        .finally(() => this.inFlight.delete(op.path));
    }
  }

  private async escalate(op: Operation): Promise<void> {
    const why = await this.refusal(op.path);
    if (why) {
      this.report({ op, step: undefined, outcome: "refused", detail: why });
      return;
    }
    for (const step of ["force", "lazy"] as const) {
      if (this.stopped) return;
      const timeoutMs = step === "force" ? (this.opts.forceTimeoutMs ?? FORCE_TIMEOUT_MS) : (this.opts.lazyTimeoutMs ?? LAZY_TIMEOUT_MS);
      const flag = step === "force" ? "-f" : "-l";
      const r = await this.opts.room.run({ argv: ["umount", flag, op.path], label: `umount ${flag}`, timeoutMs, maxOutputBytes: 4096 });
      const ended = this.now();
      const still = await this.stillMounted(op.path, ended);
      const outcome: UnstickOutcome = !still ? "unmounted" : r.outcome === "timeout" ? "timeout" : r.ok ? "still_mounted" : "failed";
      const said = r.ok ? "exit 0" : (r.error ?? "failed") + (r.stderr.trim() ? `: ${r.stderr.trim().slice(0, 200)}` : "");
      this.report({ op, step, outcome, detail: `umount ${flag} ${op.path}: ${said}; ${still ? "still mounted" : "no longer mounted"}` });
      if (!still) return;
    }
  }

  /** Why this path is not one probegate may unmount, or "" when it is. */
  private async refusal(path: string): Promise<string> {
    const dir = this.opts.kubeletDir.replace(/\/+$/, "");
    if (!path.startsWith(`${dir}/`) || path.split("/").includes("..")) return `${path} is not under the kubelet directory ${dir}`;
    const m = await this.opts.readMounts();
    if (!m) return "the mount table could not be read";
    const e = lastAt(m.text, path);
    if (!e) return `${path} is not in the mount table`;
    if (e.fsType !== "lustre") return `${path} is a ${e.fsType} mount, not lustre`;
    return "";
  }

  /** Whether the path is still a Lustre mount, from a mount table read after `since` (bounded wait for a fresh one). */
  private async stillMounted(path: string, since: number): Promise<boolean> {
    for (let i = 0; i < 20; i++) {
      const m = await this.opts.readMounts();
      if (m && m.at >= since) return lastAt(m.text, path)?.fsType === "lustre";
      await new Promise((r) => setTimeout(r, 100));
    }
    // Unknown counts as still mounted: the next step is the safer guess than declaring it done.
    return true;
  }

  private report(r: UnstickReport): void {
    this.counter?.inc({ step: r.step ?? "none", outcome: r.outcome });
    const line = { method: r.op.method, volumeId: r.op.volumeId.slice(0, 128), path: r.op.path, step: r.step ?? "none", outcome: r.outcome, detail: r.detail };
    if (r.outcome === "unmounted") this.opts.logger.warn(line, "stuck unmount ended by probegate");
    else this.opts.logger.warn(line, "stuck unmount escalation step");
    for (const fn of this.listeners) {
      try {
        fn(r);
      } catch {
        // Reporting must not break the escalation's bookkeeping.
      }
    }
  }
}

function lastAt(text: string, path: string) {
  let found;
  for (const e of parseMountTable(text)) if (e.mountPoint === path) found = e;
  return found;
}
