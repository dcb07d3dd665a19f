// Stuck operations where people look: the volume's NodeGetVolumeHealth gets an
// INACCESSIBLE entry (reason UnpublishStuck, UnstageStuck, ...), the node's
// storage health a STORAGE_DEGRADED entry while any is stuck, and gauges. It
// wraps the background evaluation's view and registry (same contract, read
// from memory): readiness and Probe never look at it. While something is
// stuck, its timer also looks in procfs for the process unmounting each stuck
// path (unmounting-process.ts), so the message can say what the node shows.

import type { Gauge } from "prom-client";
import { gauge as declareGauge } from "../observability/declare.js";
import type { Metrics } from "../observability/metrics.js";
import { oneLine } from "../support/one-line.js";
import { MESSAGE_MAX } from "./entries.js";
import {
  describeOperation,
  OPERATION_METHODS,
  OperationTable,
  STUCK_REASON,
  type FinishedCall,
  type Operation,
  type OperationTableOptions,
  type OperationTransition,
} from "./operations.js";
import { unstickCounter } from "./unstick.js";
import { UnmountingWatch } from "./unmounting-process.js";
import type { HealthChange, StorageHealthEntry, StorageHealthView, VolumeHealthEntry, VolumeRegistry } from "./view.js";

export const OPERATIONS_CHECK = "volume-operations";
export const OPERATIONS_STUCK_REASON = "VolumeOperationsStuck";

export interface TrackedOperations {
  /** Give to the upstream gateway (createUpstreamGateway's observe). */
  observe: (call: FinishedCall) => void;
  /** The health with stuck operations added: give it wherever the evaluation's own went. */
  health: { view: StorageHealthView; registry: VolumeRegistry };
  table: OperationTable;
  stop(): void;
}

export interface TrackOptions extends OperationTableOptions {
  health: { view: StorageHealthView; registry: VolumeRegistry };
  metrics?: Metrics;
  /** How often stuck-ness is looked at (default a quarter of stuckAfterMs, within 50 ms and 15 s). */
  tickMs?: number;
  /** --path.procfs: where a stuck path's unmounting process is looked for (one scan per tick, only while something is stuck). */
  procfs?: string;
}

export function trackOperations(opts: TrackOptions): TrackedOperations {
  const table = new OperationTable(opts);
  const inner = opts.health.view;
  const now = opts.now ?? Date.now;
  const listeners = new Set<(c: HealthChange) => void>();
  const notify = (c: HealthChange) => {
    for (const fn of listeners) fn(c);
  };
  const stuckSince = (op: Operation) => new Date(op.firstAt + table.stuckAfterMs).toISOString();
  const unmounting = new UnmountingWatch(opts.procfs, now);

  const volumeEntries = (volumeId: string, theirs: readonly VolumeHealthEntry[] | undefined): VolumeHealthEntry[] => {
    const at = now();
    const shows = (theirs ?? []).map((e) => `${e.reason}: ${e.message}`).join("; ");
    const seen = new Set<string>();
    const out: VolumeHealthEntry[] = [];
    for (const op of table.stuckOn(volumeId)) {
      const reason = STUCK_REASON[op.method];
      if (seen.has(reason)) continue;
      seen.add(reason);
      const message = `${describeOperation(op, at)}${unmounting.part(op.path, at)}; the node shows: ${shows || "nothing adverse about this volume"}`;
      out.push({ status: "INACCESSIBLE", reason, message: oneLine(message, MESSAGE_MAX), check: OPERATIONS_CHECK, since: stuckSince(op) });
    }
    return out;
  };

  const storageEntry = (): StorageHealthEntry | undefined => {
    const stuck = table.stuck();
    if (stuck.length === 0) return undefined;
    const oldest = stuck.reduce((a, b) => (b.firstAt < a.firstAt ? b : a));
    const message = `${stuck.length} volume operation${stuck.length === 1 ? "" : "s"} stuck; the oldest: ${describeOperation(oldest, now())}`;
    return { status: "STORAGE_DEGRADED", reason: OPERATIONS_STUCK_REASON, message: oneLine(message, MESSAGE_MAX), check: OPERATIONS_CHECK, since: stuckSince(oldest) };
  };

  const view: StorageHealthView = {
    // Stuck operations are answered whatever plugins are loaded.
    hasStorageChecks: () => true,
    hasVolumeChecks: () => true,
    storage: () => {
      const e = storageEntry();
      return e ? [e, ...inner.storage()] : inner.storage();
    },
    volume: (id) => {
      const theirs = inner.volume(id);
      const ours = volumeEntries(id, theirs);
      return ours.length ? [...ours, ...(theirs ?? [])] : theirs;
    },
    volumeCondition: (id) => {
      const ours = volumeEntries(id, undefined);
      if (ours.length === 0) return inner.volumeCondition(id);
      const theirs = inner.volumeCondition(id);
      return { abnormal: true, message: oneLine([...ours.map((e) => `${e.reason}: ${e.message}`), theirs?.message ?? ""].filter(Boolean).join("; "), MESSAGE_MAX) };
    },
    subscribe: (fn) => {
      listeners.add(fn);
      const off = inner.subscribe(fn);
      return () => {
        listeners.delete(fn);
        off();
      };
    },
    volumes: () => inner.volumes().map(({ ref, entries }) => ({ ref, entries: view.volume(ref.volumeId) ?? entries })),
  };

  const registry: VolumeRegistry = {
    remember: (ref) => opts.health.registry.remember(ref),
    request: (ref) => opts.health.registry.request(ref),
    forget: (volumeId, path) => {
      // The operations first: their "ended" is told while the volume is still
      // known, so its PV (named by the publish path the registry holds) gets
      // the Normal Event too; forgotten first, only the Node would.
      for (const p of [path.targetPath, path.stagingPath]) if (p) table.forget(volumeId, p);
      opts.health.registry.forget(volumeId, path);
    },
  };

  table.subscribe((ts: OperationTransition[]) => {
    for (const t of ts) if (t.kind === "stuck") knowVolume(opts.health.registry, t.op);
    notify({ storage: true, volumes: [...new Set(ts.map((t) => t.op.volumeId))] });
  });
  const tickMs = opts.tickMs ?? Math.min(15_000, Math.max(50, Math.floor(table.stuckAfterMs / 4)));
  const timer = setInterval(() => {
    table.tick();
    // The messages say "for how long": rebuild the cached answers of what is stuck.
    const stuck = table.stuck();
    if (stuck.length) notify({ storage: true, volumes: [...new Set(stuck.map((op) => op.volumeId))] });
    unmounting.scan(
      stuck.map((op) => op.path),
      () => table.stuck().length > 0,
      () => notify({ storage: false, volumes: [...new Set(table.stuck().map((op) => op.volumeId))] }),
    );
  }, tickMs);
  timer.unref();

  if (opts.metrics) operationMetrics(opts.metrics, table, now);

  return {
    observe: (call) => table.observe(call),
    health: { view, registry },
    table,
    stop: () => clearInterval(timer),
  };
}

/**
 * The operations' gauges and the unstick counter. Every mode exports them
 * (node mode sees no operations: they read 0), so one dashboard fits all.
 */
export function operationMetrics(m: Metrics, table: OperationTable, now: () => number = Date.now): void {
  unstickCounter(m);
  const byMethod = (stuckOnly: boolean) => {
    const counts = new Map<string, number>(OPERATION_METHODS.map((x) => [x, 0]));
    for (const op of table.all()) if (!stuckOnly || op.stuck) counts.set(op.method, counts.get(op.method)! + 1);
    return counts;
  };
  const gauge = (name: string, help: string, collect: (g: Gauge<"method">) => void, labelNames: readonly "method"[] = []) => {
    if (!m.registry.getSingleMetric(name)) declareGauge(m.registry, name, help, labelNames, { collect() { collect(this); } });
  };
  gauge("probegate_volume_operations_pending", "Forwarded volume operations (gateway mode) whose attempts have not succeeded yet, by method.", (g) => {
    for (const [method, n] of byMethod(false)) g.set({ method }, n);
  }, ["method"]);
  gauge("probegate_volume_operations_stuck", "Pending volume operations older than --operation-stuck-after, by method.", (g) => {
    for (const [method, n] of byMethod(true)) g.set({ method }, n);
  }, ["method"]);
  gauge("probegate_volume_operation_oldest_pending_seconds", "Age of the oldest pending volume operation, from its first attempt (0 when none).", (g) => {
    const first = table.all().reduce((a, op) => Math.min(a, op.firstAt), Infinity);
    g.set(Number.isFinite(first) ? (now() - first) / 1000 : 0);
  });
  gauge("probegate_volume_operations_untracked", "Forwarded volume operations not tracked since start: the table was full or the request named no usable volume.", (g) => g.set(table.untracked));
}

/**
 * A volume stuck on a retry probegate never saw staged (it restarted, say) is
 * made known, so its health is evaluated and its Events find its PV.
 */
function knowVolume(registry: VolumeRegistry, op: Operation): void {
  const staging = op.method === "NodeStageVolume" || op.method === "NodeUnstageVolume";
  try {
    registry.request({ volumeId: op.volumeId, ...(op.path ? (staging ? { stagingPath: op.path } : { targetPath: op.path }) : {}), origin: "request" });
  } catch {
    // Refused (--max-volumes, hostile path): it is still reported on the node.
  }
}
