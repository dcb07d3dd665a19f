import { MOUNT_API_SERVICES, startGateway, type Gateway } from "../gateway.js";
import { createLogger, type Logger } from "../observability/logger.js";
import { Metrics } from "../observability/metrics.js";
import { CAPABILITY_NAMES, type IdentityConfig } from "../services/identity.js";
import { LocalProbeSource } from "../services/probe-source.js";
import type { Endpoint } from "../transport/endpoint.js";
import { ListenError } from "../transport/listeners.js";
import { startChecks, type RunningChecks } from "./checks.js";
import { parseConfig, UsageError, type Config } from "./config.js";
import { helpText } from "./flags.js";
import { VERSION } from "./package-info.js";
import { spokenAbis } from "../runtime/abi/index.js";
import { storageHealthMetrics } from "../storage-health/view-metrics.js";
import { formatTaint, type KubeReportingSpec } from "../kube/spec.js";
import type { UnstickSource } from "../kube/unstick-events.js";
import type { StorageHealthView } from "../storage-health/view.js";

/** Services listed over reflection in gateway mode: forwarded to the driver, described from our csi.proto. */

function identityConfig(cfg: Config): IdentityConfig {
  return {
    driverName: cfg.driverName,
    vendorVersion: cfg.driverVersion ?? VERSION,
    manifest: {
      "probegate.version": VERSION,
      "probegate.mode": cfg.mode,
      // Every plugin ABI this gateway loads, comma-separated (runtime/abi/, plugins/ABI.md).
      "probegate.plugin-abi": spokenAbis(),
      "node.version": process.version,
      "node.platform": `${process.platform}/${process.arch}`,
    },
    capabilities: cfg.capabilities.map((c) => CAPABILITY_NAMES[c]),
  };
}

/**
 * Gateway mode: the proxy to the driver's socket and the combined Probe. Its
 * code is loaded only in gateway mode; it is not small, and RSS matters on every node.
 */
async function startUpstream(cfg: Config, endpoint: Endpoint, checks: RunningChecks, logger: Logger, metrics: Metrics) {
  const { createUpstreamGateway } = await import("../upstream/index.js");
  const ops = await trackedOperations(cfg, checks, logger, metrics);
  const gateway = createUpstreamGateway({
    upstream: endpoint.display,
    driverName: cfg.driverName,
    gate: cfg.gate,
    readiness: checks.engine,
    // --probe-ready=upstream: the driver's own ready field; only liveness checks can fail Probe.
    localProbe: new LocalProbeSource(checks.engine, cfg.probeReady === "upstream" ? "liveness" : cfg.probeReady),
    // Health answers and the legacy volume_condition come from the background evaluation, never a per-call run.
    health: ops?.health,
    logger,
    metrics,
    timeoutCapMs: cfg.upstreamTimeoutCapMs,
    maxRequestBytes: cfg.maxRequestBytes,
    observe: ops?.observe,
  });
  return {
    ...gateway,
    /** The health with stuck operations in it, for node reporting. */
    health: ops?.health,
    /** --unstick=unmount's steps, for Events. */
    unstick: ops?.unstick,
    close: async () => {
      ops?.stop();
      await gateway.close();
    },
  };
}

/**
 * Gateway mode's volume operations (the forwarded calls' observer): stuck ones
 * reported in the volume and storage health, and ended with --unstick=unmount.
 */
async function trackedOperations(cfg: Config, checks: RunningChecks, logger: Logger, metrics: Metrics) {
  if (!checks.health) return undefined;
  const { trackOperations } = await import("../storage-health/operations-view.js");
  // The procfs the checks read (a demo scenario's own, or --path.procfs): where a stuck path's unmounting process is looked for.
  const procfs = typeof checks.describe.procfs === "string" ? checks.describe.procfs : cfg.procfs;
  const tracked = trackOperations({ health: { view: checks.health.view, registry: checks.health.registry }, metrics, stuckAfterMs: cfg.operationStuckAfterMs, procfs });
  if (!cfg.unstick) return { ...tracked, unstick: undefined };
  const { Unsticker } = await import("../storage-health/unstick.js");
  const catalog = checks.catalog;
  const unsticker = new Unsticker({
    table: tracked.table,
    room: catalog.room,
    readMounts: async () => {
      const r = await catalog.read("proc.mounts", {});
      return r.ok && !r.truncated ? { text: r.stdout, at: r.fetchedAtMs } : undefined;
    },
    kubeletDir: cfg.kubeletDir,
    unstickAfterMs: cfg.unstickAfterMs,
    logger: logger.child({ component: "unstick" }),
    metrics,
  });
  return { ...tracked, unstick: unsticker, stop: () => (unsticker.stop(), tracked.stop()) };
}

type NodeReportingStarter = { start(): { stop(): Promise<void> } };

/**
 * Kubernetes node reporting and its client are loaded only when the flags
 * ask for it. The kubeconfig is read before serving starts, so a bad one
 * is a usage error, not a silent reporter.
 */
async function prepareReporting(
  spec: KubeReportingSpec,
  driverName: () => string,
  checks: RunningChecks,
  logger: Logger,
  metrics: Metrics,
  /** Gateway mode: the health with stuck operations in it, and the unstick steps. */
  upstream?: { health?: { view: StorageHealthView }; unstick?: UnstickSource },
): Promise<NodeReportingStarter> {
  const { prepareNodeReporting } = await import("../kube/index.js");
  const storageHealth = upstream?.health?.view ?? checks.health?.view;
  return prepareNodeReporting({ spec, readiness: checks.engine, storageHealth, unstick: upstream?.unstick, driverName, logger, metrics, version: VERSION, env: process.env });
}

/** Resolves when the first SIGTERM or SIGINT arrives. */
function waitForSignal(logger: Logger): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals) => {
      process.removeListener("SIGTERM", on);
      process.removeListener("SIGINT", on);
      logger.info({ signal: sig }, "shutting down");
      resolve(sig);
    };
    process.on("SIGTERM", on);
    process.on("SIGINT", on);
  });
}

/** Keeps the gateway serving whatever a bug somewhere throws; it is logged, never fatal. */
function guardProcess(logger: Logger): void {
  process.on("uncaughtException", (err) => logger.error({ err }, "uncaught exception (gateway keeps serving)"));
  process.on("unhandledRejection", (err) => logger.error({ err }, "unhandled rejection (gateway keeps serving)"));
}

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === "plugin") {
    const { runPluginCommand } = await import("./plugin-commands.js");
    return runPluginCommand(argv.slice(1), { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd() });
  }
  let cfg: Config;
  try {
    cfg = parseConfig(argv, process.env);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`probegate: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (cfg.help) {
    process.stdout.write(helpText(VERSION));
    return 0;
  }
  if (cfg.version) {
    process.stdout.write(`probegate ${VERSION}\n`);
    return 0;
  }

  const logger = createLogger(cfg.logLevel);
  guardProcess(logger);
  const metrics = new Metrics();
  metrics.buildInfo.set({ version: VERSION, node_version: process.version, abi: spokenAbis() }, 1);
  const stopSignal = waitForSignal(logger);

  let checks: RunningChecks;
  try {
    checks = await startChecks(cfg, logger, metrics);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`probegate: ${err.message}\n`);
      return 2;
    }
    throw err;
  }

  // The storage and volume health gauges, in every mode; they read the evaluator's view (attached by it) at each scrape.
  storageHealthMetrics(metrics.registry);
  // The spawner's read the catalog's spawner (none with --command-spawner=off: state off).
  metrics.commandSpawner.attach(checks.catalog.spawner);
  const upstream = cfg.upstream ? await startUpstream(cfg, cfg.upstream, checks, logger, metrics) : undefined;
  // Node mode forwards no calls and sees no operations: the gauges read 0 there (one dashboard for both modes).
  if (!upstream?.health) {
    const [{ operationMetrics }, { OperationTable }] = await Promise.all([import("../storage-health/operations-view.js"), import("../storage-health/operations.js")]);
    operationMetrics(metrics, new OperationTable());
  }

  let reporting: NodeReportingStarter | undefined;
  if (cfg.kube) {
    try {
      // The name the node's CSINode must list before a startup taint goes: in
      // gateway mode the driver's own, once it has answered GetPluginInfo.
      const driverName = upstream ? () => upstream.status.driverName : () => cfg.driverName;
      reporting = await prepareReporting(cfg.kube, driverName, checks, logger, metrics, upstream);
    } catch (err) {
      await upstream?.close();
      await checks.stop();
      process.stderr.write(`probegate: node reporting: ${(err as Error).message}\n`);
      return 2;
    }
  }

  let gw: Gateway;
  try {
    gw = await startGateway({
      csiEndpoint: cfg.csiEndpoint,
      httpEndpoint: cfg.httpEndpoint,
      metricsEndpoint: cfg.metricsEndpoint,
      healthDetailRemote: cfg.healthDetailRemote,
      identity: identityConfig(cfg),
      readiness: checks.engine,
      logger,
      metrics,
      limits: cfg.limits,
      csiOnlyRoutes: upstream ? [upstream.route] : [],
      probe: upstream?.probe ?? new LocalProbeSource(checks.engine, cfg.probeReady === "startup" ? "startup" : "readiness"),
      healthNotes: () => [...checks.notes(), ...(upstream?.healthNotes() ?? [])],
      csiOnlyServices: upstream ? MOUNT_API_SERVICES : undefined,
      // Node mode answers the health RPCs from it on the CSI endpoint; gateway mode's upstream route already does.
      health: upstream?.health ?? (checks.health && { view: checks.health.view, registry: checks.health.registry }),
      healthAnsweredUpstream: upstream !== undefined,
      // A diagnostic switch: the interop tests and benchmarks compare both paths.
      fastPath: process.env.PROBEGATE_FAST_PATH !== "off",
    });
  } catch (err) {
    await upstream?.close();
    await checks.stop();
    if (err instanceof ListenError) {
      logger.error({ err: err.message }, "cannot listen");
      process.stderr.write(`probegate: cannot listen: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  const nodeReporting = reporting?.start();
  logger.info(
    {
      version: VERSION,
      mode: cfg.mode,
      csiEndpoint: gw.csi?.address,
      httpEndpoint: gw.http?.address ?? "off",
      metricsEndpoint: gw.metrics?.address ?? "on the HTTP endpoint",
      driverName: cfg.driverName,
      upstream: upstream?.upstream ?? "none",
      gate: [...cfg.gate],
      probeReady: cfg.probeReady,
      ...(cfg.kube ? { node: cfg.kube.nodeName, nodeCondition: cfg.kube.condition ?? "none", nodeTaint: cfg.kube.taint ? formatTaint(cfg.kube.taint) : "none" } : {}),
      ...checks.describe,
    },
    "probegate started",
  );

  await stopSignal;
  await gw.close(cfg.shutdownTimeoutMs);
  await nodeReporting?.stop();
  await upstream?.close();
  await checks.stop();
  logger.info("stopped");
  logger.flush();
  return 0;
}
