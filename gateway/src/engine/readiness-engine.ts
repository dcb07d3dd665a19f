import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { PluginConfigState, PluginRuntime, PluginSet } from "../runtime/runtime.js";
import type { LoadedPlugin, Mode } from "../runtime/types.js";
import { Cadence, Rounds } from "../checks/rounds.js";
import { CheckScope, type CheckResult, type PendingResult } from "../checks/runner.js";
import { coverageGaps } from "./coverage.js";
import { buildSnapshot, judge, signature, type TrackedCondition } from "./readiness-verdict.js";
import type { SourceCatalog } from "./sources/index.js";
import type { CheckStatus, Condition, ReadinessSnapshot, ReadinessProvider } from "./readiness.js";

/** The part of the source catalog the engine uses; tests pass a small fake. */
export type CatalogLike = Pick<SourceCatalog, "has" | "names" | "requiredFacts" | "read"> &
  Partial<Pick<SourceCatalog, "problems" | "onChange">>;

export interface ReadinessEngineOptions {
  mode: Mode;
  catalog: CatalogLike;
  /**
   * The plugin set and its sandbox, built by the caller (who also hands it to
   * anything else that runs plugins). The engine starts and stops it.
   */
  runtime: PluginRuntime;
  checkIntervalMs?: number;
  /**
   * How often the storage and volume health checks (probe storage, volume)
   * take part in a round: every round whose start is this long after their
   * last one (and every round asked for with refresh()). Default: every round.
   */
  healthIntervalMs?: number;
  logger: Logger;
  metrics: Metrics;
  /** Check names that must be loaded and scheduled; a missing one fails readiness with CheckMissing. */
  requiredChecks?: readonly string[];
}

export interface PluginListing {
  name: string;
  version: string;
  file: string;
  dir?: string;
  sha256: string;
  /** The configuration file in use (path and sha256); absent when defaults apply. */
  config?: { file: string; sha256: string };
  configError?: string;
  probe: string;
  severity: string;
  modes: string[];
  sources: string[];
  scheduled: boolean;
  quarantined: boolean;
}

/** One check's result in a round (checks/runner.ts). */
export type RunResult = CheckResult;

/** The scope key of the node's own checks. */
const NODE = "node";

/** One applied round, for whatever keeps more than a condition per check (storage health). */
export interface EngineRound {
  /** Epoch seconds when the round started (the plugins' round.epoch). */
  epoch: number;
  /** The storage and volume health checks' turn (--health-interval): the storage checks ran in this round. */
  health: boolean;
  /** Results of the plugins still loaded when the round was applied. */
  results: readonly RunResult[];
}

const STATUSES: readonly CheckStatus[] = ["pass", "warn", "fail"];

/** The kinds of check that run at the health cadence rather than every round. */
const isHealthCheck = (p: LoadedPlugin) => p.manifest.probe === "storage" || p.manifest.probe === "volume";

/**
 * Runs the check plugins on a schedule and keeps a precomputed snapshot, so
 * answering a Probe is a field read: nothing a Probe does ever waits for a
 * plugin, a source, or a plugin-set swap.
 */
export class ReadinessEngine implements ReadinessProvider {
  private readonly runtime: PluginRuntime;
  private readonly log: Logger;
  private readonly rounds: Rounds;
  /** The node's checks, run by the runner: their stable verdicts and epochs, by check name. */
  private readonly checks: CheckScope;
  /** The storage checks' turns (--health-interval); readiness and liveness checks run every round. */
  private readonly health: Cadence;
  private readonly listeners = new Set<(s: ReadinessSnapshot) => void>();
  private readonly roundListeners = new Set<(r: EngineRound) => void>();
  private conditions = new Map<string, TrackedCondition>();
  private firstRoundDone = false;
  private generation = 0;
  private lastSignature = "";
  /** When each coverage gap (NoChecks, CheckMissing) was first seen. */
  private readonly gapSince = new Map<string, string>();
  private lastGaps = "";
  private snap: ReadinessSnapshot;
  private started = false;
  private stopped = false;
  private unwatch: (() => void) | null = null;
  private unwatchSources: (() => void) | null = null;
  private unwatchQuarantine: (() => void) | null = null;

  constructor(private readonly opts: ReadinessEngineOptions) {
    this.log = opts.logger.child({ component: "engine" });
    this.runtime = opts.runtime;
    this.health = new Cadence(opts.healthIntervalMs ?? 0);
    this.rounds = new Rounds({
      round: (forced) => this.evaluate(forced),
      intervalMs: opts.checkIntervalMs ?? 5000,
      onError: (err) => this.log.error({ err: (err as Error).message }, "evaluation round failed"),
    });
    this.checks = new CheckScope({
      runtime: this.runtime,
      mode: opts.mode,
      counted: (p, reused) => opts.metrics.checkEvaluations.inc({ check: p.manifest.name, result: reused ? "reused" : "run" }),
    });
    this.snap = this.publish(true);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    this.unwatchQuarantine = this.runtime.onQuarantineCount((n) => {
      this.opts.metrics.pluginsQuarantined.set(n);
      this.syncPluginGauges();
    });
    await this.runtime.start();
    if (this.scheduled(this.runtime.current()).length === 0) {
      // Nothing to wait for (typical for --mode controller): ready at once.
      this.firstRoundDone = true;
    }
    this.unwatch = this.runtime.onChange((set) => this.onPluginSetChanged(set));
    this.unwatchSources =
      this.opts.catalog.onChange?.(() => {
        // New or removed sources can make refused plugins loadable (and loaded ones not).
        this.publish();
        void this.runtime.revalidateSources().then(() => this.refresh());
      }) ?? null;
    // Publishes and starts the first round without waiting for it.
    this.onPluginSetChanged(this.runtime.current());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // Not awaited: a round in progress ends at its next await and applies nothing.
    void this.rounds.stop();
    this.unwatch?.();
    this.unwatchSources?.();
    this.unwatchQuarantine?.();
    await this.runtime.stop();
  }

  snapshot(): ReadinessSnapshot {
    return this.snap;
  }

  subscribe(listener: (s: ReadinessSnapshot) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Called after each applied round with every result, storage checks
   * included (their health entries live beside the snapshot, not in it).
   */
  onRound(listener: (r: EngineRound) => void): () => void {
    this.roundListeners.add(listener);
    return () => this.roundListeners.delete(listener);
  }

  /** Runs a round now, or right after the one in progress; resolves when it has been applied. */
  refresh(): Promise<void> {
    if (this.stopped || !this.started) return Promise.resolve();
    return this.rounds.now();
  }

  /** Every loaded plugin, including volume plugins the scheduler does not run. */
  plugins(): PluginListing[] {
    const set = this.runtime.current();
    const scheduled = new Set(this.scheduled(set).map((p) => p.key));
    return set.plugins.map((p) => {
      const cfg = this.runtime.configFor(p);
      return {
      name: p.manifest.name,
      version: p.manifest.version,
      file: p.file,
      ...(p.dir ? { dir: p.dir } : {}),
      sha256: p.sha256,
      ...(cfg.file && cfg.sha256 ? { config: { file: cfg.file, sha256: cfg.sha256 } } : {}),
      ...(cfg.error !== undefined ? { configError: cfg.error } : {}),
      probe: p.manifest.probe,
      severity: p.manifest.severity,
      modes: [...p.manifest.modes],
      sources: [...p.manifest.sources],
      scheduled: scheduled.has(p.key),
      quarantined: this.runtime.isQuarantined(p),
      };
    });
  }

  private scheduled(set: PluginSet): LoadedPlugin[] {
    return set.plugins.filter((p) => p.manifest.modes.includes(this.opts.mode) && p.manifest.probe !== "volume");
  }

  private onPluginSetChanged(set: PluginSet): void {
    const names = new Set(this.scheduled(set).map((p) => p.manifest.name));
    for (const name of [...this.conditions.keys()]) {
      if (!names.has(name)) this.dropCondition(name);
    }
    this.opts.metrics.pluginsLoaded.set(set.plugins.length);
    this.opts.metrics.refusedPlugins.set(set.refusals.length);
    this.syncPluginGauges();
    this.publish();
    void this.refresh();
  }

  /**
   * The per-plugin gauges follow the current set: one quarantine series per
   * loaded plugin (0 or 1), one refusal series per refused file. Reset and
   * refilled in one synchronous step, so no scrape sees them half done.
   */
  private syncPluginGauges(): void {
    const m = this.opts.metrics;
    const set = this.runtime.current();
    // Two keys may briefly share a name while a file is replaced: either one quarantined counts.
    const quarantined = new Map<string, number>();
    for (const p of set.plugins) {
      const name = p.manifest.name;
      quarantined.set(name, Math.max(quarantined.get(name) ?? 0, this.runtime.isQuarantined(p) ? 1 : 0));
    }
    m.pluginQuarantined.reset();
    for (const [plugin, on] of quarantined) {
      m.pluginQuarantined.set({ plugin }, on);
      // The counters start at 0 too, so increase() sees a plugin's first quarantine.
      m.pluginQuarantines.inc({ plugin }, 0);
      m.pluginQuarantineRetries.inc({ plugin }, 0);
    }
    // Both results start at 0 for every scheduled check, so a rate of either is defined from its first round.
    for (const p of this.scheduled(set)) {
      m.checkEvaluations.inc({ check: p.manifest.name, result: "run" }, 0);
      m.checkEvaluations.inc({ check: p.manifest.name, result: "reused" }, 0);
    }
    m.refusedPlugin.reset();
    for (const r of set.refusals) m.refusedPlugin.set({ file: r.file, reason: r.reason }, 1);
  }

  private async evaluate(forced: boolean): Promise<void> {
    const health = this.health.turn(Date.now(), forced);
    const scheduled = this.scheduled(this.runtime.current());
    // Between the health checks' turns their conditions stand as last judged.
    const plugins = health ? scheduled : scheduled.filter((p) => !isHealthCheck(p));
    const epoch = Math.floor(Date.now() / 1000);
    const needsFacts = (p: LoadedPlugin) => p.manifest.sources.some((s) => this.opts.catalog.requiredFacts(s).length > 0);
    const results = await this.checks.run(NODE, plugins, { catalog: this.opts.catalog, epoch, needsFacts });
    if (this.stopped) return;
    this.apply(results, epoch, health);
  }

  private apply(results: PendingResult[], epoch: number, health: boolean): void {
    const current = new Set(this.scheduled(this.runtime.current()).map((p) => p.key));
    const m = this.opts.metrics;
    // The set may have been swapped while this round ran: results of
    // plugins that are gone or replaced are stale and dropped.
    const fresh = results.filter((r) => current.has(r.plugin.key));
    this.checks.settle(NODE, fresh, epoch);
    const applied: RunResult[] = [];
    for (const r of fresh) {
      const { plugin: p, outcome, missingTools, ranAt, reused } = r;
      applied.push({ plugin: p, outcome, missingTools, ranAt, reused });
      const name = p.manifest.name;
      const status: CheckStatus = outcome.kind === "verdict" ? outcome.output.status : "fail";
      const reason = outcome.kind === "verdict" ? outcome.output.reason : outcome.reason;
      const message = outcome.kind === "verdict" ? outcome.output.message : outcome.message;
      const prev = this.conditions.get(name);
      const now = ranAt.toISOString();
      const transitioned = !prev || prev.condition.status !== status;
      this.conditions.set(name, {
        key: p.key,
        condition: {
          name,
          probe: p.manifest.probe,
          severity: p.manifest.severity,
          status,
          reason,
          message,
          lastTransitionTime: transitioned ? now : prev.condition.lastTransitionTime,
          lastRunTime: now,
          durationMs: Math.round(outcome.durationMs * 1000) / 1000,
          plugin: pluginIdentity(p, this.runtime.configFor(p)),
          // A liveness "fail" over a missing tool says nothing about the
          // driver's health, and a restart brings no tool back: it cannot tell.
          fault: outcome.kind === "fault" || (p.manifest.probe === "liveness" && status === "fail" && missingTools.length > 0),
        },
      });
      if (transitioned) {
        this.log.info(
          { check: name, probe: p.manifest.probe, severity: p.manifest.severity, from: prev?.condition.status ?? null, to: status, reason, message },
          "check status changed",
        );
      }
      // A quarantined plugin is not run: no run or duration to count. A
      // reused verdict counts as the evaluation it stands for; no call was timed.
      if (!(outcome.kind === "fault" && outcome.reason === "PluginQuarantined" && outcome.durationMs === 0)) {
        m.checkRuns.inc({ check: name, status, reason });
        if (!reused) m.checkDuration.observe({ check: name }, outcome.durationMs / 1000);
      }
      const { probe, severity } = p.manifest;
      for (const s of STATUSES) m.checkStatus.set({ check: name, probe, severity, status: s }, s === status ? 1 : 0);
    }
    this.firstRoundDone = true;
    this.publish();
    const round: EngineRound = { epoch, health, results: applied };
    for (const fn of this.roundListeners) {
      try {
        fn(round);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, "round listener threw");
      }
    }
  }

  private dropCondition(name: string): void {
    const t = this.conditions.get(name);
    if (!t) return;
    this.conditions.delete(name);
    this.checks.forget(NODE, name);
    const { probe, severity } = t.condition;
    for (const s of STATUSES) this.opts.metrics.checkStatus.remove({ check: name, probe, severity, status: s });
    this.log.info({ check: name }, "check removed");
  }

  /** Recomputes the snapshot; bumps generation and notifies only when something that matters changed. */
  private publish(initial = false): ReadinessSnapshot {
    const set = this.runtime.current();
    const { overrides } = set;
    const pluginRefusals = set.refusals;
    // A refused --sources edit shows beside refused plugins: the same `[!]` line, the same JSON list.
    const refusals = [...pluginRefusals, ...(this.opts.catalog.problems?.() ?? [])];
    // Before the plugin directory has been read, nothing is missing yet.
    const gaps = !this.started ? [] : coverageGaps(
      {
        mode: this.opts.mode,
        scheduled: this.scheduled(set).map((p) => ({ name: p.manifest.name, probe: p.manifest.probe })),
        refusals: pluginRefusals,
        required: this.opts.requiredChecks ?? [],
        pluginsDir: this.runtime.directories().join(", ") || undefined,
      },
      this.gapSince,
      new Date().toISOString(),
    );
    const gapKey = gaps.map((g) => `${g.condition.name}:${g.condition.reason}`).join(",");
    if (!initial && gapKey !== this.lastGaps) {
      this.lastGaps = gapKey;
      if (gaps.length) this.log.warn({ gaps: gaps.map((g) => ({ check: g.condition.name, reason: g.condition.reason, message: g.condition.message })) }, "checks missing: not ready");
      else this.log.info("no checks missing");
    }
    const conds = [...this.conditions.values(), ...gaps].sort((a, b) => a.condition.name.localeCompare(b.condition.name));
    const verdict = judge(conds.map((t) => t.condition), this.firstRoundDone);
    const sig = signature(verdict, conds, refusals) + JSON.stringify(overrides);
    const changed = sig !== this.lastSignature;
    if (changed) {
      this.generation++;
      this.lastSignature = sig;
    }
    const prev = initial ? undefined : this.snap;
    this.snap = buildSnapshot(verdict, conds, refusals, this.generation, overrides);
    this.opts.metrics.ready.set(verdict.ready ? 1 : 0);
    this.opts.metrics.live.set(verdict.live ? 1 : 0);
    if (changed && !initial) {
      if (prev && (prev.phase !== verdict.phase || prev.live !== verdict.live)) {
        this.log.info({ phase: verdict.phase, ready: verdict.ready, live: verdict.live }, "health changed");
        // What broke readiness (LNet, a module) may be what storage health
        // reports too: the next round judges storage as well, not in --health-interval.
        if (prev.phase !== "initializing") this.health.hurry();
      }
      for (const fn of this.listeners) {
        try {
          fn(this.snap);
        } catch (err) {
          this.log.error({ err: (err as Error).message }, "snapshot listener threw");
        }
      }
    }
    return this.snap;
  }
}

function pluginIdentity(p: LoadedPlugin, cfg: PluginConfigState): Condition["plugin"] {
  return {
    name: p.manifest.name,
    version: p.manifest.version,
    sha256: p.sha256,
    file: p.file,
    ...(p.dir ? { dir: p.dir } : {}),
    ...(cfg.file && cfg.sha256 ? { config: { file: cfg.file, sha256: cfg.sha256 } } : {}),
  };
}
