import { type Counter, Registry, collectDefaultMetrics } from "prom-client";
import { counter, gauge, histogram } from "./declare.js";
import { CommandSpawnerMetrics } from "./spawner-metrics.js";

/**
 * Every metric probegate exports, in one registry per gateway instance so
 * tests can run several gateways in one process without name clashes.
 */
export class Metrics {
  readonly registry = new Registry();

  /** transport: grpc-unix | grpc-tcp | grpc-web | connect | http; result: ready | not_ready | error */
  readonly probeRequests = counter(this.registry, "probegate_probe_requests_total", "Health and Probe requests answered, by transport, method and result.", ["transport", "method", "result"], {
    collect: () => this.hotCells.flush(),
  });
  readonly ready = gauge(this.registry, "probegate_ready", "1 when Probe answers ready:true.");
  readonly live = gauge(this.registry, "probegate_live", "1 when no liveness check fails.");
  /** severity: required | advisory (an advisory check never fails the verdict). */
  readonly checkStatus = gauge(this.registry, "probegate_check_status", "1 for each check's current status (pass, warn, fail), 0 otherwise.", ["check", "probe", "severity", "status"]);
  readonly checkDuration = histogram(this.registry, "probegate_check_duration_seconds", "Time a plugin's check() took, sandbox round trip included.", ["check"], [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5]);
  readonly checkRuns = counter(this.registry, "probegate_check_runs_total", "Check evaluations by check and outcome.", ["check", "status", "reason"]);
  /** result: run | reused (checks/stable-memo.ts). */
  readonly checkEvaluations = counter(this.registry, "probegate_check_evaluations_total", "Scheduled check evaluations by check: result run (the plugin was called) or reused (its stable verdict stood: nothing it reads had changed).", ["check", "result"]);
  /** result: ok | error | timeout | truncated | skipped (not run: nothing Lustre to ask, sources/lustre-gate.ts) */
  readonly sourceExecutions = counter(this.registry, "probegate_source_executions_total", "Source reads and command executions (cache misses only), by result.", ["source", "result"]);
  readonly sourceDuration = histogram(this.registry, "probegate_source_duration_seconds", "Time to read a source or run its command.", ["source"], [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 3, 10, 30]);
  readonly sourceTimeouts = counter(this.registry, "probegate_source_timeouts_total", "Source commands killed at their timeout.", ["source"]);
  readonly sourceErrors = counter(this.registry, "probegate_source_errors_total", "Sources that failed (missing binary, non-zero exit, unreadable file, timeout).", ["source"]);
  readonly pluginLoads = counter(this.registry, "probegate_plugin_loads_total", "Plugin files loaded (result=loaded) or refused (result=refused).", ["result"]);
  readonly pluginRefusals = counter(this.registry, "probegate_plugin_refusals_total", "Plugin files refused at load, by reason.", ["reason"]);
  readonly pluginQuarantines = counter(this.registry, "probegate_plugin_quarantines_total", "Plugins quarantined after repeated faults.", ["plugin"]);
  readonly pluginsQuarantined = gauge(this.registry, "probegate_plugins_quarantined", "Plugins currently quarantined after repeated faults (retried with backoff).");
  /** One series per loaded plugin, so an alert can name the plugin that stays quarantined. */
  readonly pluginQuarantined = gauge(this.registry, "probegate_plugin_quarantined", "1 while this plugin is quarantined after repeated faults, 0 otherwise.", ["plugin"]);
  readonly pluginQuarantineRetries = counter(this.registry, "probegate_plugin_quarantine_retries_total", "Calls into quarantined plugins after their backoff; one success ends the quarantine.", ["plugin"]);
  readonly pluginsLoaded = gauge(this.registry, "probegate_plugins_loaded", "Plugins currently loaded and active.");
  readonly refusedPlugins = gauge(this.registry, "probegate_plugins_refused", "Plugin files currently refused.");
  /** One series per refused file while it stays refused, so an alert can name it. */
  readonly refusedPlugin = gauge(this.registry, "probegate_plugin_refused", "1 for each plugin file currently refused, with the refusal's reason code.", ["file", "reason"]);
  /** Set once at start; the labels say what runs where (fleet upgrades, Node 20 vs 24, plugin ABI). */
  readonly buildInfo = gauge(this.registry, "probegate_build_info", "Always 1; the labels carry probegate's version, the Node.js version and the plugin ABIs it speaks (comma-separated, e.g. 1,2).", ["version", "node_version", "abi"]);

  /** result: answered (served from memory) | connect (handed to Connect: unusual request or async answer) */
  readonly fastPath = counter(this.registry, "probegate_fast_path_requests_total", "gRPC Probe and Health/Check requests seen by the fast path, by how they were answered.", ["method", "result"], {
    collect: () => this.hotCells.flush(),
  });
  /** Counts of the Probe fast path, added to their counters when scraped. */
  readonly hotCells = new CounterCells();

  /** reason: see EdgeRejection in transport/edge-limits.ts */
  readonly edgeRejected = counter(this.registry, "probegate_edge_rejected_total", "Requests and connections the network edge refused, timed out or cut, by reason.", ["reason"]);

  /** The command spawner's restarts and state, read from it at each scrape (attach() the catalog's). */
  readonly commandSpawner = new CommandSpawnerMetrics(this.registry);

  constructor(opts: { processMetrics?: boolean } = {}) {
    // prom-client samples event-loop delay with a timer at this resolution;
    // its default, 10 ms, wakes an idle gateway 100 times a second (most of
    // its idle CPU, bench/README.md "idle"). One sample a second keeps the
    // nodejs_eventloop_lag_* series and lets the loop sleep between rounds.
    if (opts.processMetrics !== false) {
      collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    }
  }
}

/** How often event-loop delay is sampled (prom-client's monitorEventLoopDelay resolution). */
export const EVENT_LOOP_SAMPLE_MS = 1000;

/** One pre-labelled count; `n` is added to its counter at the next scrape. */
export interface CounterCell {
  n: number;
}

/**
 * Counter cells for the Probe fast path: prom-client hashes the label object
 * on every inc() (a measurable share of a fast-path Probe's CPU, bench/README.md),
 * so the hot path bumps a plain number in a cell made once per label set, and
 * the cells are added to their counters when the registry is read.
 */
export class CounterCells {
  private readonly cells: { counter: Counter<string>; labels: Record<string, string>; cell: CounterCell }[] = [];

  cell<L extends string>(counter: Counter<L>, labels: Record<L, string>): CounterCell {
    const cell = { n: 0 };
    this.cells.push({ counter: counter as unknown as Counter<string>, labels, cell });
    return cell;
  }

  flush(): void {
    for (const c of this.cells) {
      if (c.cell.n === 0) continue;
      const n = c.cell.n;
      c.cell.n = 0;
      c.counter.inc(c.labels, n);
    }
  }
}
