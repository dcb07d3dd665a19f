// Storage and volume health: the engine's side of NodeGetStorageHealth,
// NodeGetVolumeHealth and the legacy volume_condition. Storage checks run in
// the readiness engine's rounds on their own cadence (--health-interval:
// their verdicts arrive through onRound on the rounds that are their turn);
// volume checks run here, in the background, for every known volume right
// after such a round, so the shared sources (lctl output) are still in the
// catalog's cache, and at once for a volume newly staged or published. Answering reads memory only: nothing a
// health call does waits on a plugin, a source, a file or a process.

import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { PluginRuntime } from "../runtime/runtime.js";
import type { LoadedPlugin, Mode } from "../runtime/types.js";
import { performance } from "node:perf_hooks";
import { KeyPool, Rounds } from "../checks/rounds.js";
import { CheckScope } from "../checks/runner.js";
import type { EngineRound } from "../engine/readiness-engine.js";
import type { SourceCatalog } from "../engine/sources/index.js";
import { parseMountTable } from "../engine/sources/mount-table.js";
import type {
  HealthChange,
  StorageHealthEntry,
  StorageHealthView,
  VolumeHealthEntry,
  VolumeRef,
  VolumeRegistry,
} from "./view.js";
import { combineVolumeOutcomes, type LegacyVolumeCondition } from "./volume-condition.js";
import { discoverVolumes } from "./discover.js";
import { ScopeHealth } from "./entries.js";
import { volumeScopedCatalog } from "./scoped-sources.js";
import { storageHealthMetrics } from "./view-metrics.js";
import { healthMetrics, MAX_EVENT_REASONS_PER_CHECK, type HealthMetrics } from "./metrics.js";
import { DEFAULT_MAX_VOLUMES, VolumeBook, type KnownVolume } from "./registry.js";

export { DEFAULT_MAX_VOLUMES, VolumeRefError, volumeRefProblem } from "./registry.js";
export { FAULT_GRACE_ROUNDS, HEALTH_CHECK_FAILED } from "./entries.js";
export type { HealthChange, StorageHealthView, VolumeRegistry, VolumeRef } from "./view.js";

export const DEFAULT_KUBELET_DIR = "/var/lib/kubelet";

export interface StorageHealthOptions {
  mode: Mode;
  /** The check engine whose rounds carry the storage checks' verdicts. */
  engine: { onRound(listener: (r: EngineRound) => void): () => void };
  /** The engine's plugin runtime (the volume checks are its probe:"volume" plugins). */
  runtime: Pick<PluginRuntime, "current" | "runCheck" | "configFor" | "isQuarantined">;
  catalog: Pick<SourceCatalog, "read"> & Partial<Pick<SourceCatalog, "statfsOutstanding">>;
  logger: Logger;
  metrics: Metrics;
  /** --max-volumes. */
  maxVolumes?: number;
  /** --kubelet-dir: volumes are rediscovered from the mount table under it; undefined turns that off. */
  kubeletDir?: string;
  /** The mount table is searched for volumes again every this many rounds (the first round always). */
  rediscoverEveryRounds?: number;
  /** Volumes evaluated at once. */
  volumeConcurrency?: number;
}

export interface StorageHealth {
  view: StorageHealthView;
  registry: VolumeRegistry;
  start(): void;
  stop(): Promise<void>;
  /** Runs a volume round now (or after the one in progress); resolves when applied. For tests and benches. */
  refreshVolumes(): Promise<void>;
}

interface Evaluated {
  scope: ScopeHealth<VolumeHealthEntry["status"]>;
  legacy: LegacyVolumeCondition;
}

export function createStorageHealth(opts: StorageHealthOptions): StorageHealth {
  return new HealthEvaluator(opts);
}

class HealthEvaluator implements StorageHealth {
  readonly view: StorageHealthView;
  readonly registry: VolumeRegistry;
  private readonly log: Logger;
  private readonly m: HealthMetrics;
  private readonly book: VolumeBook;
  private readonly storageScope = new ScopeHealth<StorageHealthEntry["status"]>("STORAGE_DEGRADED");
  private readonly evaluated = new Map<string, Evaluated>();
  /** The volume checks, run by the runner with the volume id as key. */
  private readonly checks: CheckScope;
  private readonly eventReasons = new Map<string, Set<string>>();
  private readonly listeners = new Set<(c: HealthChange) => void>();
  private readonly rounds: Rounds;
  /** Volumes seen for the first time, and the workers of a round. */
  private readonly pool: KeyPool;
  private roundNo = 0;
  /** While the round itself adds volumes (rediscovery), it evaluates them too: no separate run. */
  private inRound = false;
  private unsubscribe: (() => void) | null = null;
  private stopped = false;

  constructor(private readonly opts: StorageHealthOptions) {
    this.log = opts.logger.child({ component: "storage-health" });
    this.book = new VolumeBook(opts.maxVolumes ?? DEFAULT_MAX_VOLUMES, {
      added: (id) => this.evaluateSoon(id),
      removed: (id) => this.dropVolume(id),
      refused: (kind) => this.m.volumesRefused.inc({ reason: kind }),
    });
    this.m = healthMetrics(opts.metrics, {
      volumes: () => this.book.size(),
      statfsOutstanding: () => opts.catalog.statfsOutstanding?.() ?? 0,
    });
    this.m.volumesRefused.inc({ reason: "invalid" }, 0);
    this.m.volumesRefused.inc({ reason: "limit" }, 0);
    this.m.volumeChecks.inc({ result: "run" }, 0);
    this.m.volumeChecks.inc({ result: "reused" }, 0);
    this.rounds = new Rounds({
      round: () => this.volumeRound(),
      onError: (err) => this.log.error({ err: (err as Error).message }, "volume health round failed"),
    });
    this.pool = new KeyPool(Math.max(1, opts.volumeConcurrency ?? 8), this.rounds, (err) =>
      this.log.error({ err: (err as Error).message }, "volume health evaluation failed"),
    );
    this.checks = new CheckScope({
      runtime: opts.runtime,
      mode: opts.mode,
      counted: (_p, reused) => this.m.volumeChecks.inc({ result: reused ? "reused" : "run" }),
    });
    this.registry = this.book;
    this.view = this.makeView();
    storageHealthMetrics(opts.metrics.registry).attach(this.view);
  }

  start(): void {
    if (this.unsubscribe || this.stopped) return;
    this.unsubscribe = this.opts.engine.onRound((r) => this.onEngineRound(r));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    // Rounds in progress end at their next await (each source read is bounded).
    await this.rounds.stop();
  }

  refreshVolumes(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return this.rounds.now();
  }

  private plugins(kind: "storage" | "volume"): LoadedPlugin[] {
    return this.opts.runtime.current().plugins.filter((p) => p.manifest.probe === kind && p.manifest.modes.includes(this.opts.mode));
  }

  private onEngineRound(r: EngineRound): void {
    // Storage checks ran only on the health cadence's turn; between turns their entries stand.
    if (!r.health) return;
    const results = r.results.filter((x) => x.plugin.manifest.probe === "storage");
    for (const x of results) {
      if (x.outcome.kind !== "verdict") continue;
      for (const e of x.outcome.output.events ?? []) this.countEvent(x.plugin.manifest.name, e.reason);
    }
    const changed = this.storageScope.apply(
      results.map((x) => ({ check: x.plugin.manifest.name, outcome: x.outcome })),
      new Date(r.epoch * 1000),
    );
    if (changed) this.notify({ storage: true, volumes: [] });
    void this.refreshVolumes();
  }

  private countEvent(check: string, reason: string): void {
    let seen = this.eventReasons.get(check);
    if (!seen) this.eventReasons.set(check, (seen = new Set()));
    if (!seen.has(reason) && seen.size >= MAX_EVENT_REASONS_PER_CHECK) reason = "Other";
    seen.add(reason);
    this.m.storageEvents.inc({ check, reason });
  }

  private async volumeRound(): Promise<void> {
    if (this.stopped) return;
    const started = performance.now();
    if (this.roundNo++ % (this.opts.rediscoverEveryRounds ?? 12) === 0) {
      this.inRound = true;
      try {
        await this.rediscover();
      } finally {
        this.inRound = false;
      }
    }
    const plugins = this.plugins("volume");
    const vols = new Map(this.book.all().map((v) => [v.volumeId, v]));
    // Every volume's statfs asked for now, together: the prober puts the paths
    // asked for in one turn in one stat (statfs.ts), where the workers below
    // reach their volumes apart and would start one each. Each check's own
    // read then joins or reuses these (the catalog's single flight and cache).
    if (plugins.some((p) => p.manifest.sources.includes(STATFS))) for (const v of vols.values()) this.opts.catalog.read(STATFS, volumeFacts(v)).catch(() => {});
    const changed: string[] = [];
    await this.pool.each([...vols.keys()], async (id) => {
      if (await this.evaluate(vols.get(id)!, plugins)) changed.push(id);
    });
    this.m.volumeRoundDuration.set((performance.now() - started) / 1000);
    if (changed.length > 0) this.notify({ storage: false, volumes: changed });
  }

  /**
   * A volume seen for the first time (or with a new path) is evaluated at
   * once, in the background, by at most volumeConcurrency workers.
   */
  private evaluateSoon(id: string): void {
    if (this.stopped || this.inRound) return;
    this.pool.soon(id, async (next) => {
      const v = this.book.get(next);
      if (!v) return;
      if (await this.evaluate(v, this.plugins("volume"))) this.notify({ storage: false, volumes: [next] });
    });
  }

  /** Runs every volume plugin for one volume; returns whether its entries changed. */
  private async evaluate(v: KnownVolume, plugins: LoadedPlugin[]): Promise<boolean> {
    const facts = volumeFacts(v);
    const epoch = Math.floor(Date.now() / 1000);
    // Each check reads its Lustre listing narrowed to the volume's own mount
    // (scoped-sources.ts). The input carries round.epoch and a verdict may
    // depend on it (an import within its grace now is beyond it later), so the
    // host cannot tell on its own that a call would answer as the last one
    // did; only the plugin can: a verdict it marks `stable` is reused while
    // the sources (as read here), facts, configuration and module are equal,
    // without calling the sandbox (checks/runner.ts). Anything else is a call, as every round.
    const catalog = (p: LoadedPlugin) => volumeScopedCatalog(this.opts.catalog, p.manifest.sources);
    const runs = await this.checks.run(v.volumeId, plugins, { catalog, facts, epoch });
    // Forgotten while it ran: its result is about a volume no longer here.
    if (this.book.get(v.volumeId) !== v || this.stopped) return false;
    const outcomes = runs.map((r) => r.outcome);
    this.checks.settle(v.volumeId, runs, epoch);
    this.checks.retain(v.volumeId, new Set(plugins.map((p) => p.manifest.name)));
    for (const r of runs) {
      if (!r.reused && r.outcome.kind === "verdict") for (const ev of r.outcome.output.events ?? []) this.countEvent(r.plugin.manifest.name, ev.reason);
    }
    let e = this.evaluated.get(v.volumeId);
    const first = !e;
    if (!e) {
      e = { scope: new ScopeHealth("DEGRADED"), legacy: { abnormal: false, message: "" } };
      this.evaluated.set(v.volumeId, e);
    }
    const changed = e.scope.apply(
      plugins.map((p, i) => ({ check: p.manifest.name, outcome: outcomes[i]! })),
      new Date(),
    );
    e.legacy = combineVolumeOutcomes(plugins, outcomes);
    return changed || first;
  }

  private async rediscover(): Promise<void> {
    const dir = this.opts.kubeletDir;
    if (dir === undefined) return;
    const r = await this.opts.catalog.read("proc.mounts", {});
    // A table that could not be read in full says nothing about what is gone.
    const entries = parseMountTable(r.stdout);
    const room = (this.opts.maxVolumes ?? DEFAULT_MAX_VOLUMES) * 2;
    const found = await discoverVolumes(entries, dir, room);
    let added = 0;
    for (const d of found) {
      try {
        const known = this.book.get(d.volumeId);
        if (known && ((d.targetPath && known.targets.has(d.targetPath)) || (d.stagingPath && known.stagingPath === d.stagingPath))) continue;
        this.book.remember({ ...d, origin: "mounts" });
        added++;
      } catch (err) {
        this.log.warn({ err: (err as Error).message, volumeId: d.volumeId.slice(0, 128) }, "rediscovered volume not taken");
        break;
      }
    }
    if (r.ok && !r.truncated) this.book.dropVanished(new Set(entries.map((e) => e.mountPoint)));
    if (added > 0) this.log.info({ added, known: this.book.size() }, "volumes rediscovered from the mount table");
  }

  private dropVolume(id: string): void {
    const had = this.evaluated.delete(id);
    this.checks.forget(id);
    if (had) this.notify({ storage: false, volumes: [id] });
  }

  private notify(change: HealthChange): void {
    for (const fn of this.listeners) {
      try {
        fn(change);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, "health listener threw");
      }
    }
  }

  private makeView(): StorageHealthView {
    return {
      hasStorageChecks: () => this.plugins("storage").length > 0,
      hasVolumeChecks: () => this.plugins("volume").length > 0,
      storage: () => this.storageScope.entries(),
      volume: (id) => this.evaluated.get(id)?.scope.entries(),
      volumeCondition: (id) => {
        const e = this.evaluated.get(id);
        return e ? { ...e.legacy } : undefined;
      },
      subscribe: (listener) => {
        this.listeners.add(listener);
        return () => this.listeners.delete(listener);
      },
      volumes: () =>
        this.book.all().map((v) => {
          const targets = [...v.targets];
          const last = targets[targets.length - 1];
          const ref: VolumeRef = {
            volumeId: v.volumeId,
            ...(last ? { targetPath: last[0] } : {}),
            ...(v.stagingPath ? { stagingPath: v.stagingPath } : {}),
            ...(last && last[1] !== undefined ? { readOnly: last[1] } : {}),
            origin: v.origin,
          };
          return { ref, entries: this.evaluated.get(v.volumeId)?.scope.entries() };
        }),
    };
  }
}

/** The source that probes a volume's paths (engine/sources/statfs.ts). */
const STATFS = "volume.statfs";

/** What the scope knows of a volume, as facts for its checks' sources and input. */
function volumeFacts(v: KnownVolume): Record<string, string> {
  const targets = [...v.targets];
  const [targetPath, readOnly] = targets.length ? targets[targets.length - 1]! : ["", undefined];
  return {
    "volume.id": v.volumeId,
    "volume.path": targetPath,
    "volume.stagingPath": v.stagingPath ?? "",
    "volume.readOnly": readOnly === undefined ? "" : String(readOnly),
  };
}
