import { existsSync } from "node:fs";
import path from "node:path";
import { ReadinessEngine } from "../engine/readiness-engine.js";
import { createStorageHealth, type StorageHealth } from "../storage-health/index.js";
import { demoBinDir, demoScenarioDir, resolveProgram, SourceCatalog, SourcesFileError } from "../engine/sources/index.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { pluginMetricHooks } from "../runtime/plugin-metrics.js";
import { PluginRuntime } from "../runtime/runtime.js";
import { UsageError, type Config } from "./config.js";
import { createDemoDir, removeStaleDemoDirs, type DemoDir } from "./demo-dir.js";
import { BUNDLED_CHECKS, BUNDLED_PLUGINS_DIR, IMAGE_PLUGINS_DIR } from "./package-info.js";
import { isHostComposedSource } from "../engine/sources/host-sources.js";

export interface RunningChecks {
  engine: ReadinessEngine;
  catalog: SourceCatalog;
  /** The engine's plugins, for whatever else runs them (gateway mode's volume checks). */
  runtime: PluginRuntime;
  /**
   * Storage and volume health (node mode only): evaluated in the background,
   * read by NodeGetStorageHealth/NodeGetVolumeHealth, the legacy
   * volume_condition, /readyz?verbose, metrics and Events.
   */
  health?: StorageHealth;
  stop(): Promise<void>;
  /** Facts for the start log line. */
  describe: Record<string, unknown>;
  /** `[!]` lines for /readyz?verbose about how the checks were set up (none when all is as expected). */
  notes(): string[];
}

interface HostView {
  env: NodeJS.ProcessEnv;
  procfs: string;
  sysfs: string;
  demo?: string;
  demoDir?: DemoDir;
  staleRemoved?: string[];
}

/**
 * Where the checks look: the real host, or a demo node. The demo scenario is
 * copied to a temporary directory because the fake tools log their calls into
 * it, and the package directory may be read-only.
 */
async function hostView(cfg: Config): Promise<HostView> {
  let scenario: string | undefined;
  if (cfg.demo === "auto") {
    const found = await resolveProgram("lnetctl", process.env.PATH);
    if (!found.ok) scenario = "healthy";
  } else if (cfg.demo !== "off") scenario = cfg.demo;
  // A plain copy of the environment the gateway started with: every command
  // start reads the whole of it, and process.env answers each variable through
  // a getenv() call (~0.3 ms per command for 35 variables, bench/README.md).
  if (!scenario) return { env: { ...process.env }, procfs: cfg.procfs, sysfs: cfg.sysfs };

  let source: string;
  try {
    source = demoScenarioDir(scenario);
  } catch (err) {
    throw new UsageError(`--demo: ${(err as Error).message}`);
  }
  const staleRemoved = removeStaleDemoDirs();
  const demoDir = createDemoDir(scenario, source);
  const dir = demoDir.path;
  return {
    demoDir,
    staleRemoved,
    env: { ...process.env, PATH: `${demoBinDir()}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: dir },
    procfs: path.join(dir, "proc"),
    sysfs: path.join(dir, "sys"),
    demo: scenario,
  };
}

/** Builds and starts the check engine (sources, plugins, scheduler) for this configuration. */
export async function startChecks(cfg: Config, logger: Logger, metrics: Metrics): Promise<RunningChecks> {
  const host = await hostView(cfg);
  if (host.staleRemoved?.length) logger.info({ dirs: host.staleRemoved }, "removed demo directories left by gateways that are gone");
  let catalog: SourceCatalog;
  try {
    catalog = await SourceCatalog.create({
      procfs: host.procfs,
      sysfs: host.sysfs,
      modules: cfg.modules,
      modprobe: cfg.modprobe,
      sourcesFile: cfg.sourcesFile,
      commandPrefix: cfg.commandPrefix,
      execInProcess: cfg.execInProcess,
      statfsBoundMs: cfg.statfsTimeoutMs,
      serverPings: { intervalMs: cfg.serverPingIntervalMs },
      commandSpawner: cfg.commandSpawner,
      env: host.env,
      logger,
      metrics,
    });
  } catch (err) {
    host.demoDir?.remove();
    if (err instanceof SourcesFileError) throw new UsageError(`--sources: ${err.message}`);
    throw err;
  }
  const pluginsDirs = cfg.pluginsDirs.length > 0 ? cfg.pluginsDirs : [BUNDLED_PLUGINS_DIR];
  const runtime = new PluginRuntime({
    dirs: pluginsDirs,
    isKnownSource: (name) => catalog.has(name) || isHostComposedSource(name),
    timeoutMs: cfg.pluginTimeoutMs,
    memoryMiB: cfg.pluginMemoryMiB,
    quarantineAfter: cfg.quarantineAfter,
    quarantineBackoffMs: cfg.quarantineBackoffMs,
    quarantineBackoffMaxMs: cfg.quarantineBackoffMaxMs,
    logger: logger.child({ component: "plugins" }),
    ...pluginMetricHooks(metrics),
    ...(cfg.pluginsLock ? { lock: { ...cfg.pluginsLock, governs: lockGoverns } } : {}),
  });
  const engine = new ReadinessEngine({
    mode: cfg.mode,
    catalog,
    runtime,
    checkIntervalMs: cfg.checkIntervalMs,
    healthIntervalMs: cfg.healthIntervalMs,
    requiredChecks: cfg.requireChecks,
    logger,
    metrics,
  });
  // Before the engine starts: the first round's storage verdicts reach it too.
  const health =
    cfg.mode === "node"
      ? createStorageHealth({
          mode: cfg.mode,
          engine,
          runtime,
          catalog,
          logger,
          metrics,
          maxVolumes: cfg.maxVolumes,
          kubeletDir: cfg.kubeletDir,
          // The mount table is searched again every 12 readiness rounds' time (a minute by default), whatever the health cadence.
          rediscoverEveryRounds: Math.max(1, Math.round((12 * cfg.checkIntervalMs) / Math.max(cfg.healthIntervalMs, cfg.checkIntervalMs))),
        })
      : undefined;
  health?.start();
  await engine.start();
  await catalog.watch();
  const notes = () => {
    const note = bundledNote(cfg, runtime.current().plugins.map((p) => p.manifest.name));
    return note ? [`[!]${note}`] : [];
  };
  const atStart = bundledNote(cfg, runtime.current().plugins.map((p) => p.manifest.name));
  if (atStart) logger.warn({ pluginsDirs, bundled: BUNDLED_CHECKS }, atStart);
  return {
    engine,
    catalog,
    runtime,
    notes,
    health,
    stop: async () => {
      await health?.stop();
      await engine.stop();
      await catalog.stop();
      host.demoDir?.remove();
    },
    describe: {
      pluginsDirs,
      ...(cfg.pluginsLock ? { pluginsLock: cfg.pluginsLock.file, pluginsLockKey: cfg.pluginsLock.key?.type ?? "none" } : {}),
      demo: host.demo ?? "off",
      ...(cfg.execInProcess ? { execInProcess: cfg.execInProcess } : {}),
      ...(cfg.requireChecks.length ? { requireChecks: cfg.requireChecks } : {}),
      procfs: host.procfs,
      sysfs: host.sysfs,
      checkIntervalMs: cfg.checkIntervalMs,
      healthIntervalMs: cfg.healthIntervalMs,
      plugins: engine.plugins().map((p) => `${p.name}@${p.version}`),
    },
  };
}

/**
 * The image's bundled directory ships inside the gateway's own image, pinned
 * with it, and is as trusted as the gateway's code: --plugins-lock governs
 * every other directory (docs/plugins.md, "Distributing plugins").
 */
function lockGoverns(dir: string): boolean {
  const d = path.resolve(dir);
  return d !== path.resolve(BUNDLED_PLUGINS_DIR) && d !== IMAGE_PLUGINS_DIR;
}

/**
 * `--plugins-dir` replaces the bundled plugins rather than adding to them:
 * every shipped manifest names the image's copy first, and an operator who
 * means to run only their own checks keeps that choice. What must not happen
 * is that they go without a word, so a node-mode gateway whose directories
 * hold none of the bundled Lustre checks says so, and how to keep them.
 */
export function bundledNote(cfg: Pick<Config, "pluginsDirs" | "mode">, loaded: readonly string[]): string | undefined {
  if (cfg.pluginsDirs.length === 0 || cfg.mode !== "node") return undefined;
  if (loaded.some((n) => BUNDLED_CHECKS.includes(n))) return undefined;
  const bundledDir = [BUNDLED_PLUGINS_DIR, IMAGE_PLUGINS_DIR].find((d) => existsSync(d)) ?? IMAGE_PLUGINS_DIR;
  return (
    `bundled Lustre checks not loaded (${BUNDLED_CHECKS.join(", ")}): --plugins-dir replaces the bundled set; ` +
    `to keep them, give their directory first: --plugins-dir=${bundledDir} --plugins-dir=${cfg.pluginsDirs[0]} (docs/plugins-bundled.md)`
  );
}
