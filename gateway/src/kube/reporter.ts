// Makes the Node show the verdict: the condition(s), the taint and Events.
// A consumer of the engine's snapshots; nothing here is ever awaited by Probe
// or the health endpoints. One reconcile loop runs at a time (so at most one
// write is in flight), and a new snapshot during a write only marks the loop
// dirty: the latest state wins and intermediate ones are never written. What
// the Node looks like now comes from node-watch.ts; this module is the loop.
import type { ReadinessProvider } from "../engine/readiness.js";
import type { StorageHealthView } from "../storage-health/view.js";
import type { Logger } from "../observability/logger.js";
import { KubeError, type Identity, type KubeApi } from "./client/api.js";
import { Backoff, TokenBucket } from "./backoff.js";
import { desiredState, operationsCondition, storageCondition, type DesiredState } from "./desired.js";
import { NodeEvents } from "./events.js";
import { HealthEvents } from "./health-events.js";
import { recordUnstickEvents, type UnstickSource } from "./unstick-events.js";
import type { KubeMetrics } from "./metrics.js";
import { FailureLog } from "./failure-log.js";
import { planConditions, planTaint } from "./node-plan.js";
import { hasTaint, viewOf, type NodeView } from "./node-view.js";
import { NodeWatch } from "./node-watch.js";
import { formatTaint, WRITE_BURST, type KubeReportingSpec } from "./spec.js";

export interface NodeReporterOptions {
  api: KubeApi;
  spec: KubeReportingSpec;
  readiness: ReadinessProvider;
  /** The CSI driver name CSINode must list before the taint is removed (the upstream's, in gateway mode). */
  driverName: () => string;
  logger: Logger;
  metrics: KubeMetrics;
  /** Storage and volume health: Events on transitions, and the opt-in storage condition and taint. */
  storageHealth?: StorageHealthView;
  /** --unstick=unmount's steps, each an Event. */
  unstick?: UnstickSource;
  now?: () => number;
}

/** Conflicts retried at once before backing off (another writer keeps winning). */
const QUICK_CONFLICT_RETRIES = 5;
const BACKOFF_BASE_MS = 200;

export class NodeReporter {
  private readonly api: KubeApi;
  private readonly spec: KubeReportingSpec;
  private readonly log: Logger;
  private readonly m: KubeMetrics;
  private readonly now: () => number;
  private readonly backoff: Backoff;
  private readonly writes: TokenBucket;
  private readonly failures: FailureLog;
  private readonly watch: NodeWatch;
  private readonly taintWrites: TokenBucket;
  private readonly eventWrites: TokenBucket;
  private readonly events: NodeEvents;
  private readonly healthEvents: HealthEvents | undefined;
  private unsubscribeStorage: (() => void) | null = null;
  private unsubscribeUnstick: (() => void) | null = null;
  /** Identity for reading the Node and writing its status. */
  private readonly statusAs: Identity;

  private desired: DesiredState;
  private view: NodeView | undefined;
  private lastReady: boolean | undefined;
  private perCheckWritten = new Set<string>();
  private running = false;
  private dirty = false;
  private stopped = false;
  private blockedUntil = 0;
  private conflicts = 0;
  private timer: NodeJS.Timeout | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  private waitingForCSINode = false;
  private csiNodeListed = "";
  private csiNodeListedUntil = 0;
  private unsubscribe: (() => void) | null = null;
  private idle: Promise<void> = Promise.resolve();

  constructor(private readonly opts: NodeReporterOptions) {
    this.api = opts.api;
    this.spec = opts.spec;
    this.log = opts.logger.child({ component: "node-reporter", node: opts.spec.nodeName });
    this.m = opts.metrics;
    this.now = opts.now ?? Date.now;
    const t = opts.spec.timings;
    this.backoff = new Backoff(BACKOFF_BASE_MS, t.backoffCapMs);
    this.writes = new TokenBucket(WRITE_BURST, t.writeIntervalMs, this.now);
    // The taint has its own budget: during a storm, condition writes must not starve it.
    this.taintWrites = new TokenBucket(WRITE_BURST, t.writeIntervalMs, this.now);
    this.eventWrites = new TokenBucket(WRITE_BURST, t.writeIntervalMs, this.now);
    this.events = new NodeEvents(opts.spec.nodeName);
    this.healthEvents = opts.storageHealth
      ? new HealthEvents(opts.storageHealth, opts.spec.nodeName, (type, reason, note, o) => {
          this.events.record(type, reason, note, this.now(), o);
          this.kick();
        })
      : undefined;
    this.statusAs = opts.spec.impersonateNode ? "node" : "self";
    this.failures = new FailureLog(this.log);
    this.watch = new NodeWatch({
      api: this.api,
      as: this.statusAs,
      nodeName: opts.spec.nodeName,
      resyncMs: t.resyncMs,
      backoffBaseMs: BACKOFF_BASE_MS,
      backoffCapMs: t.backoffCapMs,
      now: this.now,
      failures: this.failures,
      current: () => this.view,
      seen: (view, reconcile) => {
        this.view = view;
        this.noteTaint();
        if (reconcile) this.kick();
      },
    });
    this.desired = this.compute();
  }

  start(): void {
    this.unsubscribe = this.opts.readiness.subscribe(() => this.onSnapshot());
    this.healthEvents?.start();
    if (this.opts.unstick) {
      this.unsubscribeUnstick = recordUnstickEvents(this.opts.unstick, this.spec.nodeName, (type, reason, note, o) => {
        this.events.record(type, reason, note, this.now(), o);
        this.kick();
      });
    }
    // The storage condition and taint follow storage changes between readiness snapshots too.
    if (this.opts.storageHealth && (this.spec.storageCondition || this.spec.storageTaint || this.spec.operationsCondition)) {
      this.unsubscribeStorage = this.opts.storageHealth.subscribe((c) => {
        if (c.storage) this.onSnapshot();
      });
    }
    this.onSnapshot();
    this.watch.start();
  }

  /** Stops timers and the watch; a request in flight finishes on its own (its deadline bounds it). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribeStorage?.();
    this.unsubscribeUnstick?.();
    this.healthEvents?.stop();
    if (this.timer) clearTimeout(this.timer);
    this.watch.stop();
    await this.idle;
  }

  private compute(): DesiredState {
    const d = desiredState(this.opts.readiness.snapshot(), this.spec.condition, this.spec.conditionPerCheck);
    if (this.spec.operationsCondition) d.conditions.push(operationsCondition(this.opts.storageHealth?.storage() ?? [], d.known, this.spec.operationsCondition));
    if (!this.spec.storageCondition && !this.spec.storageTaint) return d;
    // Without a storage view (no storage checks wired) nothing adverse is known.
    const st = storageCondition(this.opts.storageHealth?.storage() ?? [], d.known, this.spec.storageCondition ?? "");
    if (this.spec.storageCondition) d.conditions.push({ type: st.type, status: st.status, reason: st.reason, message: st.message });
    if (this.spec.storageTaint) d.storageOk = st.ok;
    return d;
  }

  private onSnapshot(): void {
    this.desired = this.compute();
    const d = this.desired;
    if (d.known && d.ready !== this.lastReady) {
      // The first verdict after start is an Event only when it is bad news.
      if (this.lastReady !== undefined || !d.ready) {
        if (d.ready) this.events.record("Normal", "NodeReady", `probegate: node ready (${d.summary})`, this.now());
        else this.events.record("Warning", "NodeNotReady", `probegate: node not ready: ${d.summary}`, this.now());
      }
      this.lastReady = d.ready;
    }
    this.kick();
  }

  /** Runs the loop now, or after the one in progress, or when the backoff ends. */
  private kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.dirty = true;
      return;
    }
    const wait = this.blockedUntil - this.now();
    if (wait > 0) {
      this.wakeIn(wait);
      return;
    }
    this.running = true;
    this.idle = this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.dirty = false;
        await this.reconcile();
      } while (this.dirty && !this.stopped && this.blockedUntil <= this.now());
    } catch (err) {
      this.log.error({ err: (err as Error).message }, "node reporter bug (it keeps running)");
      this.wakeIn(this.spec.timings.backoffCapMs);
    } finally {
      this.running = false;
      if (this.dirty && !this.stopped) this.wakeIn(Math.max(0, this.blockedUntil - this.now()));
    }
  }

  private wakeIn(ms: number): void {
    if (this.stopped) return;
    const at = this.now() + ms;
    if (this.timer && this.timerAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.kick();
    }, Math.max(0, ms));
    this.timer.unref();
  }

  private async reconcile(): Promise<void> {
    let step = "read node";
    try {
      if (!this.view) {
        this.view = await this.watch.read();
        this.failures.succeeded(step);
        this.noteTaint();
        this.watch.ensure();
      }
      let done = true;
      if (this.spec.condition || this.spec.storageCondition || this.spec.operationsCondition) {
        step = "write condition";
        done = (await this.syncConditions()) && done;
      }
      if (this.spec.taint) {
        step = "write taint";
        done = (await this.syncTaint()) && done;
      }
      if (this.events.pending) {
        step = "write event";
        const wait = this.eventWrites.take();
        if (wait > 0) this.wakeIn(wait);
        else {
          await this.events.writeOne(this.api, this.now());
          this.failures.succeeded(step);
          if (this.events.pending) this.dirty = true;
        }
      }
      this.m.pending.set(done ? 0 : 1);
      this.backoff.reset();
      this.conflicts = 0;
    } catch (err) {
      this.m.pending.set(1);
      this.failed(step, err);
    }
  }

  /** true when the Node shows the desired conditions. */
  private async syncConditions(): Promise<boolean> {
    const view = this.view!;
    const d = this.desired;
    // Before the first round, a condition already on the Node is left as it is:
    // writing Unknown at every restart would reset its lastTransitionTime.
    const present = new Set(view.conditions.map((c) => c.type));
    const wanted = d.known ? d.conditions : d.conditions.filter((c) => !present.has(c.type));
    const wantedTypes = new Set(d.conditions.map((c) => c.type));
    const stale = d.known ? [...this.perCheckWritten].filter((t) => !wantedTypes.has(t)) : [];
    const plan = planConditions(view, wanted, stale, this.now(), this.spec.timings.heartbeatMs);
    if (Number.isFinite(plan.nextDueMs)) this.wakeIn(Math.max(0, plan.nextDueMs - this.now()));
    if (plan.write.length === 0 && plan.remove.length === 0) return true;
    const wait = this.writes.take();
    if (wait > 0) {
      this.wakeIn(wait);
      return false;
    }
    const body = {
      // The resourceVersion makes the patch conditional: if the Node changed
      // since it was read, the API server answers 409 and the loop re-reads it,
      // so lastTransitionTime is always derived from the Node as it is.
      metadata: { resourceVersion: view.resourceVersion },
      status: {
        conditions: [...plan.write, ...plan.remove.map((type) => ({ type, $patch: "delete" }))],
      },
    };
    this.view = viewOf(await this.api.patchNodeStatus(this.statusAs, body));
    this.failures.succeeded("write condition");
    this.m.lastWrite.set(this.now() / 1000);
    for (const c of plan.write) {
      for (const s of ["True", "False", "Unknown"]) this.m.conditionStatus.set({ condition: c.type, status: s }, c.status === s ? 1 : 0);
      if (c.type !== this.spec.condition && c.type !== this.spec.storageCondition && c.type !== this.spec.operationsCondition) this.perCheckWritten.add(c.type);
    }
    for (const t of plan.remove) {
      this.perCheckWritten.delete(t);
      for (const s of ["True", "False", "Unknown"]) this.m.conditionStatus.remove({ condition: t, status: s });
    }
    return true;
  }

  /** Whether the taint should be on the Node: true, false, or null for "leave it". */
  private taintWanted(): boolean | null {
    const d = this.desired;
    // Before the first round nothing is known: adding a NoExecute taint to a
    // healthy node at every restart would evict its pods.
    if (!d.known) return null;
    // --node-storage-taint: unreachable storage keeps the taint like a readiness loss (the verdict itself is untouched).
    const ok = d.ready && d.storageOk !== false;
    if (this.spec.taintMode === "continuous") return !ok;
    return ok ? false : null;
  }

  private async syncTaint(): Promise<boolean> {
    const taint = this.spec.taint!;
    const want = this.taintWanted();
    const has = hasTaint(this.view!, taint);
    if (want === null || want === has) {
      this.waitingForCSINode = false;
      return true;
    }
    if (!want && this.spec.waitForCSINode && !(this.csiNodeListed === this.opts.driverName() && this.now() < this.csiNodeListedUntil)) {
      const driver = this.opts.driverName();
      const drivers = await this.api.csiNodeDrivers();
      if (!drivers?.includes(driver)) {
        if (!this.waitingForCSINode) {
          this.log.info({ driver, csiNodeDrivers: drivers ?? "no CSINode" }, "node ready; the taint stays until CSINode lists the driver");
          this.waitingForCSINode = true;
        }
        // CSINode changes once, when the registrar registers the driver: polling it is cheap.
        this.wakeIn(Math.min(this.spec.timings.resyncMs, 2000));
        return false;
      }
      if (this.waitingForCSINode) this.log.info({ driver }, "CSINode lists the driver");
      this.waitingForCSINode = false;
      // A registered driver stays registered: a flapping check must not re-read CSINode at every flap.
      this.csiNodeListed = driver;
      this.csiNodeListedUntil = this.now() + this.spec.timings.resyncMs;
    }
    const ops = planTaint(this.view!, taint, want, this.now());
    if (!ops) return true;
    const wait = this.taintWrites.take();
    if (wait > 0) {
      this.wakeIn(wait);
      return false;
    }
    this.view = viewOf(await this.api.patchNodeTaints(ops));
    this.failures.succeeded("write taint");
    this.m.lastWrite.set(this.now() / 1000);
    this.noteTaint();
    this.log.info({ taint: formatTaint(taint), action: want ? "added" : "removed", mode: this.spec.taintMode }, want ? "taint added" : "taint removed");
    return true;
  }

  private noteTaint(): void {
    if (this.spec.taint && this.view) this.m.taintPresent.set(hasTaint(this.view, this.spec.taint) ? 1 : 0);
  }

  private failed(step: string, err: unknown): void {
    const e = err instanceof KubeError ? err : new KubeError((err as Error).message, undefined, "error");
    const conflict = e.status === 409 || e.status === 422;
    // Losing a race to kubelet or the node controller is routine: worth a warning only when it keeps happening.
    if (conflict && this.conflicts < QUICK_CONFLICT_RETRIES) this.log.debug({ step, status: e.status }, "write conflict; re-reading the Node");
    else this.failures.failed(step, e);

    let wait: number;
    if (e.status === 409 || e.status === 422) {
      // Someone else wrote the Node first: read it again and redo the change on top.
      this.view = undefined;
      this.conflicts++;
      wait = this.conflicts <= QUICK_CONFLICT_RETRIES ? 0 : this.backoff.next();
    } else if (e.status === 429) {
      wait = e.retryAfterMs ?? this.backoff.next();
    } else {
      if (e.status === undefined || e.status === 404 || e.status >= 500) this.view = undefined;
      wait = this.backoff.next();
    }
    if (wait === 0) {
      this.dirty = true;
      return;
    }
    this.blockedUntil = this.now() + wait;
    this.wakeIn(wait);
  }
}
