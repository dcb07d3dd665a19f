import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { CommandSpawnerMetrics } from "./spawner-metrics.js";

/**
 * Every metric probegate exports, in one registry per gateway instance so
 * tests can run several gateways in one process without name clashes.
 */
export class Metrics {
  readonly registry = new Registry();

  /** transport: grpc-unix | grpc-tcp | grpc-web | connect | http; result: ready | not_ready | error */
  readonly probeRequests = new Counter({
    name: "probegate_probe_requests_total",
    help: "Health and Probe requests answered, by transport, method and result.",
    labelNames: ["transport", "method", "result"] as const,
    registers: [this.registry],
    collect: () => this.hotCells.flush(),
  });
  readonly ready = new Gauge({
    name: "probegate_ready",
    help: "1 when Probe answers ready:true.",
    registers: [this.registry],
  });
  readonly live = new Gauge({
    name: "probegate_live",
    help: "1 when no liveness check fails.",
    registers: [this.registry],
  });
  /** severity: required | advisory (an advisory check never fails the verdict). */
  readonly checkStatus = new Gauge({
    name: "probegate_check_status",
    help: "1 for each check's current status (pass, warn, fail), 0 otherwise.",
    labelNames: ["check", "probe", "severity", "status"] as const,
    registers: [this.registry],
  });
  readonly checkDuration = new Histogram({
    name: "probegate_check_duration_seconds",
    help: "Time a plugin's check() took, sandbox round trip included.",
    labelNames: ["check"] as const,
    buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [this.registry],
  });
  readonly checkRuns = new Counter({
    name: "probegate_check_runs_total",
    help: "Check evaluations by check and outcome.",
    labelNames: ["check", "status", "reason"] as const,
    registers: [this.registry],
  });
  /** result: run | reused (checks/stable-memo.ts). */
  readonly checkEvaluations = new Counter({
    name: "probegate_check_evaluations_total",
    help: "Scheduled check evaluations by check: result run (the plugin was called) or reused (its stable verdict stood: nothing it reads had changed).",
    labelNames: ["check", "result"] as const,
    registers: [this.registry],
  });
  /** result: ok | error | timeout | truncated | skipped (not run: nothing Lustre to ask, sources/lustre-gate.ts) */
  readonly sourceExecutions = new Counter({
    name: "probegate_source_executions_total",
    help: "Source reads and command executions (cache misses only), by result.",
    labelNames: ["source", "result"] as const,
    registers: [this.registry],
  });
  readonly sourceDuration = new Histogram({
    name: "probegate_source_duration_seconds",
    help: "Time to read a source or run its command.",
    labelNames: ["source"] as const,
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 3, 10, 30],
    registers: [this.registry],
  });
  readonly sourceTimeouts = new Counter({
    name: "probegate_source_timeouts_total",
    help: "Source commands killed at their timeout.",
    labelNames: ["source"] as const,
    registers: [this.registry],
  });
  readonly sourceErrors = new Counter({
    name: "probegate_source_errors_total",
    help: "Sources that failed (missing binary, non-zero exit, unreadable file, timeout).",
    labelNames: ["source"] as const,
    registers: [this.registry],
  });
  readonly pluginLoads = new Counter({
    name: "probegate_plugin_loads_total",
    help: "Plugin files loaded (result=loaded) or refused (result=refused).",
    labelNames: ["result"] as const,
    registers: [this.registry],
  });
  readonly pluginRefusals = new Counter({
    name: "probegate_plugin_refusals_total",
    help: "Plugin files refused at load, by reason.",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly pluginQuarantines = new Counter({
    name: "probegate_plugin_quarantines_total",
    help: "Plugins quarantined after repeated faults.",
    labelNames: ["plugin"] as const,
    registers: [this.registry],
  });
  readonly pluginsQuarantined = new Gauge({
    name: "probegate_plugins_quarantined",
    help: "Plugins currently quarantined after repeated faults (retried with backoff).",
    registers: [this.registry],
  });
  /** One series per loaded plugin, so an alert can name the plugin that stays quarantined. */
  readonly pluginQuarantined = new Gauge({
    name: "probegate_plugin_quarantined",
    help: "1 while this plugin is quarantined after repeated faults, 0 otherwise.",
    labelNames: ["plugin"] as const,
    registers: [this.registry],
  });
  readonly pluginQuarantineRetries = new Counter({
    name: "probegate_plugin_quarantine_retries_total",
    help: "Calls into quarantined plugins after their backoff; one success ends the quarantine.",
    labelNames: ["plugin"] as const,
    registers: [this.registry],
  });
  readonly pluginsLoaded = new Gauge({
    name: "probegate_plugins_loaded",
    help: "Plugins currently loaded and active.",
    registers: [this.registry],
  });
  readonly refusedPlugins = new Gauge({
    name: "probegate_plugins_refused",
    help: "Plugin files currently refused.",
    registers: [this.registry],
  });
  /** One series per refused file while it stays refused, so an alert can name it. */
  readonly refusedPlugin = new Gauge({
    name: "probegate_plugin_refused",
    help: "1 for each plugin file currently refused, with the refusal's reason code.",
    labelNames: ["file", "reason"] as const,
    registers: [this.registry],
  });
  /** Set once at start; the labels say what runs where (fleet upgrades, Node 20 vs 24, plugin ABI). */
  readonly buildInfo = new Gauge({
    name: "probegate_build_info",
    help: "Always 1; the labels carry probegate's version, the Node.js version and the plugin ABIs it speaks (comma-separated, e.g. 1,2).",
    labelNames: ["version", "node_version", "abi"] as const,
    registers: [this.registry],
  });

  /** result: answered (served from memory) | connect (handed to Connect: unusual request or async answer) */
  readonly fastPath = new Counter({
    name: "probegate_fast_path_requests_total",
    help: "gRPC Probe and Health/Check requests seen by the fast path, by how they were answered.",
    labelNames: ["method", "result"] as const,
    registers: [this.registry],
    collect: () => this.hotCells.flush(),
  });
  /** Counts of the Probe fast path, added to their counters when scraped. */
  readonly hotCells = new CounterCells();

  /** reason: see EdgeRejection in transport/edge-limits.ts */
  readonly edgeRejected = new Counter({
    name: "probegate_edge_rejected_total",
    help: "Requests and connections the network edge refused, timed out or cut, by reason.",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });

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
