// The source catalog: the only way check plugins see the node. Plugins name
// sources; the gateway decides what runs, how often, for how long, and with
// which (validated) parameters. See plugins/ABI.md, "Source catalog".

import { basename, join } from "node:path";
import { performance } from "node:perf_hooks";
import type { Logger } from "../../observability/logger.js";
import type { Metrics } from "../../observability/metrics.js";
import { SingleFlightCache } from "./cache.js";
import { lustreMountsKey, type KeepWhile } from "./keep-while.js";
import { ProcessRoom } from "../../exec/room.js";
import type { CommandResult } from "../../exec/run-command.js";
import type { CommandSpawner } from "../../exec/spawner.js";
import type { CustomSourceConfig } from "./sources-file.js";
import { SourcesFileError } from "./sources-file-error.js";
import { SourcesFileWatcher } from "./sources-watch.js";
import { modulesDepSource } from "./modules-dep.js";
import { modprobeOptionsSource } from "./modprobe-options.js";
import { statfsSource, StatfsProber } from "./statfs.js";
import { peerPingsSource, serverPingsSource, ServerPinger, type ServerPingSettings } from "./server-pings.js";
import { serverPingMetrics } from "../../observability/server-ping-metrics.js";
import { gateLustreSources } from "./lustre-gate.js";
import { shareNetShow } from "./net-show-plain.js";
import { isValidNid } from "./validate.js";
import {
  commandSource,
  fileSource,
  globFileSource,
  NID_PARAM,
  operstateSource,
  processFileSource,
  type Produced,
  type SourceDef,
} from "./definitions.js";

/** What the catalog's sources run with: the process room, and the statfs prober behind volume.statfs. */
interface RunContext {
  room: ProcessRoom;
  statfs?: StatfsProber;
  /** The pinger behind lnet.server_pings, and how it reads the sources naming the servers. */
  pings?: { pinger: ServerPinger; read: (name: "proc.mounts" | "lctl.imports") => Promise<SourceResult> };
}

export { isValidIfaceName, isValidNid, parseNid } from "./validate.js";
export { SourcesFileError };
export type { FaultKind, SavedOutput } from "./replay.js";
import type { SavedOutput } from "./replay.js";

/** What plugins see of a source: a command's result, stamped with when it was produced. */
export interface SourceResult extends Omit<CommandResult, "outcome"> {
  /** Date.now() when produced; the engine turns it into ageMs. */
  fetchedAtMs: number;
  /**
   * Set on a result whose stdout is made when read (a volume's restricted
   * listing, health/scoped-sources.ts): two results with the same key have
   * the same stdout, so they can be compared without making it.
   */
  readonly stdoutKey?: object;
}

export interface SourceDefaults {
  commandTimeoutMs: number;
  pingTimeoutMs: number;
  commandTtlMs: number;
  /** Not in the original brief's list; optional like the others. */
  pingTtlMs: number;
  fileTtlMs: number;
  maxOutputBytes: number;
}

/**
 * Why these numbers:
 * - commands time out after 3 s: `lnetctl net show` answers in milliseconds on
 *   a healthy node, and 3 s matches the livenessprobe sidecar's default Probe
 *   timeout, so one stuck command cannot hold a whole round hostage;
 * - ping gets 10 s, the budget of the reference driver's readiness script;
 *   an unreachable NID makes lnetctl wait for LNet's own timeout;
 * - command results live 2 s, a bit under a 5 s check interval: every round
 *   sees fresh output, while bursts share one execution;
 * - ping results live 10 s: a ping is costly and may block for its timeout;
 * - file reads live 1 s: they are cheap but still syscalls on every Probe burst;
 * - 1 MiB per stream is far above any real LNet output (a verbose `net show`
 *   on a big node is tens of KiB) and bounds the memory a runaway can take.
 */
export const SOURCE_DEFAULTS: Readonly<SourceDefaults> = Object.freeze({
  commandTimeoutMs: 3_000,
  pingTimeoutMs: 10_000,
  commandTtlMs: 2_000,
  pingTtlMs: 10_000,
  fileTtlMs: 1_000,
  maxOutputBytes: 1024 * 1024,
});

export interface SourceCatalogOptions {
  procfs: string;
  sysfs: string;
  /** The host's kernel modules tree (--path.modules). Default /lib/modules. */
  modules?: string;
  /** The host's modprobe configuration directory (--path.modprobe). Default /etc/modprobe.d. */
  modprobe?: string;
  sourcesFile?: string;
  commandPrefix?: string[];
  /** Run commands in the mount namespace of the newest process with this executable name (under procfs). */
  execInProcess?: string;
  logger: Logger;
  metrics?: Metrics;
  /** Environment of the commands; PATH lookup uses env.PATH. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  defaults?: Partial<SourceDefaults>;
  /**
   * Start the commands through a resident spawner (exec/spawner.ts) instead of
   * a fork of this process each: true finds the built binary, a string names it.
   * The spawner is started at once, so create the catalog early. Default off.
   */
  commandSpawner?: boolean | string;
  /** volume.statfs: a statfs still running after this long is reported hung (--statfs-timeout). Default 5 s. */
  statfsBoundMs?: number;
  /** volume.statfs: probes outstanding at once, hung ones included. Default 64. */
  statfsMaxOutstanding?: number;
  /** volume.statfs: a path that answered is probed again after this long. Default 30 s. */
  statfsIntervalMs?: number;
  /** lnet.server_pings bounds (SERVER_PING_DEFAULTS); intervalMs is --server-ping-interval. */
  serverPings?: Partial<ServerPingSettings>;
  /**
   * Monotonic milliseconds for the result cache and kept results (tests drive
   * it by hand to pass a TTL or a max age without sleeping). Default performance.now.
   */
  now?: () => number;
}

/**
 * statfs bound: Lustre 2.14+ clients answer a statfs in milliseconds even with
 * a target down (lazystatfs fails fast); 5 s is far past that and well under
 * the kubelet's one-minute health cadence. 64 outstanding probes covers a hung
 * statfs on every volume of a busy node, and bounds the processes a hang keeps.
 * A healthy path is probed every 30 s (half the kubelet's cadence): a new hang
 * shows within 35 s, and 8 volumes cost a process start every ~4 s, not 8 every round.
 */
/**
 * Server pings: once per NID per 30 s (Lustre's own pinger pings every
 * obd_timeout/4, 25 s by default); `lnetctl ping --timeout=5` (seconds; a
 * healthy LNet peer answers in well under a millisecond on TCP, and without
 * the option a ping waits 1 s up to 2.15 but 180 s from 2.16, which no round
 * should wait for); a ping still running 15 s after it started is hung (past
 * its timeout lnet_ping still waits for the unlink, api-ni.c); a read waits
 * 3 s at most (the usual command deadline) and reports the rest next time; 32 pings start
 * per read and 64 may be outstanding (hung included), so a node with every
 * server gone keeps 64 processes at worst.
 */
export const SERVER_PING_DEFAULTS: Readonly<ServerPingSettings & { ttlMs: number }> = Object.freeze({ intervalMs: 30_000, timeoutSeconds: 5, boundMs: 15_000, waitMs: 3_000, maxPerRead: 32, maxOutstanding: 64, ttlMs: 1_000 });

export const STATFS_DEFAULTS = Object.freeze({ boundMs: 5_000, maxOutstanding: 64, ttlMs: 1_000, intervalMs: 30_000 });

/** A --sources file edit that was refused (the last good set stays); shown as a `[!]` line. */
export interface SourcesProblem {
  file: string;
  reason: "SourcesInvalid";
  message: string;
  sha256?: string;
  at: string;
}

export interface SourceDescription {
  name: string;
  kind: "command" | "file";
  argv?: string[];
  path?: string;
  timeoutMs?: number;
  ttlMs: number;
  params: string[];
  /** A success is kept past ttlMs while these read the same (at most keepMaxAgeMs). */
  keptWhile?: string;
  keepMaxAgeMs?: number;
}


/**
 * Cap of both Lustre listings. `lctl get_param {osc,mdc,mgc}.*.import` prints
 * 1.1–2 KiB per target (the connect flags alone are ~400 bytes), so a client
 * of a 1,000-OST file system prints ~1–2 MiB: past the 1 MiB that bounds LNet
 * outputs; 4 MiB covers ~2,000–3,500 targets over all mounts. The state
 * listing the bundled checks read (`{osc,mdc,mgc}.*.state`) is measured at
 * 138 bytes per block with the 2-entry history of a first connect and 516
 * bytes with the full 16-entry ring (IMP_STATE_HIST_LEN) of a long-mounted
 * client, so 4 MiB holds ~8,100 targets at worst (~30,000 short): e.g. 64
 * volumes × 65 imports with full rings is ~2.1 MiB. More is cut and the
 * plugin reports it cannot tell (fail closed), never that it saw the imports
 * healthy.
 */
export const LUSTRE_IMPORTS_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The presence check of mount.lustre runs a process; its answer only changes
 * when software is installed, so one run a minute is plenty (and is all a node
 * whose checks never look at it pays).
 */
const TOOL_PRESENCE_TTL_MS = 60_000;

/** What a built-in source's definition is made from. */
interface BuiltinContext {
  opts: SourceCatalogOptions;
  d: SourceDefaults;
  ctx: RunContext;
  now: () => number;
  /** The usual command bounds (defaults). */
  cmd: { timeoutMs: number; ttlMs: number; maxOutputBytes: number };
  /** Another source's result through the catalog's cache: for a source built on one. */
  read: (name: string) => Promise<SourceResult>;
}

/** `lctl get_param {osc,mdc,mgc}.*.PARAM`: one of the Lustre listings, capped at LUSTRE_IMPORTS_MAX_BYTES. */
function lustreListing(name: string, { ctx, cmd, d }: BuiltinContext, param: "import" | "state"): SourceDef {
  const argv = ["lctl", "get_param", ...["osc", "mdc", "mgc"].map((dev) => `${dev}.*.${param}`)];
  const maxOutputBytes = Math.max(d.maxOutputBytes, LUSTRE_IMPORTS_MAX_BYTES);
  return commandSource({ name, argv, label: `lctl get_param *.${param}`, ...cmd, maxOutputBytes }, ctx.room);
}

/**
 * The built-in sources, each named once: the key is the source's name, the
 * value makes its definition (undefined: not offered by this catalog).
 */
const BUILTIN: Readonly<Record<string, (name: string, b: BuiltinContext) => SourceDef | undefined>> = {
  "lnetctl.net_show": (name, { ctx, cmd }) => commandSource({ name, argv: ["lnetctl", "net", "show"], label: "lnetctl net show", ...cmd }, ctx.room),
  "lctl.list_nids": (name, { ctx, cmd }) => commandSource({ name, argv: ["lctl", "list_nids"], label: "lctl list_nids", ...cmd }, ctx.room),
  // --timeout as the server pings have it: without it 2.16+ wait 180 s in the kernel
  // (uninterruptibly: the kill at the deadline does not end the process), 2.12–2.15 1 s.
  "lnetctl.ping": (name, { ctx, d }) =>
    commandSource(
      {
        name,
        argv: ["lnetctl", "ping", `--timeout=${SERVER_PING_DEFAULTS.timeoutSeconds}`, NID_PARAM("lnet.selfNid")],
        label: "lnetctl ping",
        timeoutMs: d.pingTimeoutMs,
        ttlMs: d.pingTtlMs,
        maxOutputBytes: d.maxOutputBytes,
      },
      ctx.room,
    ),
  "proc.modules": (name, { opts, d }) => fileSource(name, join(opts.procfs, "modules"), d.fileTtlMs, d.maxOutputBytes),
  // PID 1's table, not <procfs>/mounts (our own namespace): with hostPID and the
  // host's procfs this is the host's mount table, whose paths kubelet passes us.
  // With --exec-in-process it is the target's table instead: the driver mounts
  // volumes in its own namespace (under a Bidirectional /var/lib/kubelet), and
  // in a pod with shareProcessNamespace PID 1 is only the pause container.
  "proc.mounts": (name, { opts, d, ctx }) =>
    ctx.room.place.namespace
      ? processFileSource(name, ctx.room.place.namespace, "mounts", d.fileTtlMs, d.maxOutputBytes)
      : fileSource(name, join(opts.procfs, "1", "mounts"), d.fileTtlMs, d.maxOutputBytes),
  "sys.net.operstate": (name, { opts, d }) => operstateSource(name, opts.sysfs, "lnet.interfaces", d.fileTtlMs, d.maxOutputBytes),
  // For checks configured with lnetConfiguredAt: mount (LNet set up by the first mount).
  "kernel.release": (name, { opts, d }) => fileSource(name, join(opts.procfs, "sys", "kernel", "osrelease"), d.fileTtlMs, d.maxOutputBytes),
  // The release through kernel.release's cached read: one read of osrelease a round serves both.
  "kernel.modules_dep": (name, { opts, d, read }) =>
    modulesDepSource(name, opts.procfs, opts.modules ?? "/lib/modules", d.fileTtlMs, d.maxOutputBytes, () => read("kernel.release")),
  "modprobe.lnet_options": (name, { opts, d }) =>
    modprobeOptionsSource(name, opts.modprobe ?? "/etc/modprobe.d", "lnet", d.fileTtlMs, d.maxOutputBytes, join(opts.sysfs, "module", "lnet", "parameters")),
  // Run through the same prefix or namespace as lnetctl, so "present" means
  // present where the mount will run it; any exit but "not found" will do.
  "mount_lustre.version": (name, { ctx, cmd }) =>
    commandSource({ name, argv: ["mount.lustre", "-V"], label: "mount.lustre -V", ...cmd, ttlMs: TOOL_PRESENCE_TTL_MS }, ctx.room),
  // Lustre client state (plugins/ABI.md, "Source catalog"): run exactly like
  // lnetctl (prefix or namespace, argv only, deadline, cap, single-flight
  // cache); globs are lctl's own, never a shell's.
  "lctl.imports": (name, b) => lustreListing(name, b, "import"),
  "lctl.import_states": (name, b) => lustreListing(name, b, "state"),
  // Re-run only when the Lustre mounts change (a fork costs more than the key's file read).
  "lfs.getname": (name, { opts, d, ctx, now, cmd }) => {
    // The Lustre mounts of the namespace proc.mounts reads (its mountinfo): what
    // `lfs getname` lists cannot change unless they do.
    const lustreMounts = lustreMountsKey({
      mountinfo: ctx.room.place.namespace ? { ns: ctx.room.place.namespace } : { path: join(opts.procfs, "1", "mountinfo") },
      sysfs: opts.sysfs,
      ttlMs: d.fileTtlMs,
      maxBytes: d.maxOutputBytes,
      now,
    });
    return commandSource({ name, argv: ["lfs", "getname"], label: "lfs getname", ...cmd, keepWhile: lustreMounts }, ctx.room);
  },
  "lustre.health_check": (name, { ctx, cmd }) =>
    commandSource({ name, argv: ["lctl", "get_param", "-n", "health_check"], label: "lctl get_param health_check", ...cmd }, ctx.room),
  // Each NI's `health stats` (`health value`) are printed from verbosity 2 on (2.12–2.17); 3 as the #30 contract names it.
  "lnetctl.net_show_health": (name, { ctx, cmd }) =>
    commandSource({ name, argv: ["lnetctl", "net", "show", "-v", "3"], label: "lnetctl net show -v 3", ...cmd }, ctx.room),
  // Each peer NI's `health stats` (`health value` and the counters), 2.12–2.17.
  "lnetctl.peer_show_health": (name, { ctx, cmd }) =>
    commandSource({ name, argv: ["lnetctl", "peer", "show", "-v", "3"], label: "lnetctl peer show -v 3", ...cmd }, ctx.room),
  "volume.statfs": (name, { ctx, d }) => (ctx.statfs ? statfsSource(name, ctx.statfs, STATFS_DEFAULTS.ttlMs, d.maxOutputBytes) : undefined),
  // The servers of the mounted file systems, pinged at the LNet level (server-pings.ts).
  "lnet.server_pings": (name, { ctx, d }) =>
    ctx.pings ? serverPingsSource(name, ctx.pings.pinger, ctx.pings.read, SERVER_PING_DEFAULTS.ttlMs, d.maxOutputBytes) : undefined,
  // The peers a check is configured with (lnet-self-ping's `peers:`), by the same pinger.
  "lnet.peer_pings": (name, { ctx, d }) => (ctx.pings ? peerPingsSource(name, ctx.pings.pinger, SERVER_PING_DEFAULTS.ttlMs, d.maxOutputBytes, isValidNid) : undefined),
};

export const BUILTIN_SOURCE_NAMES: readonly string[] = Object.freeze(Object.keys(BUILTIN));

function builtinSources(
  opts: SourceCatalogOptions,
  d: SourceDefaults,
  ctx: RunContext,
  now: () => number,
  read: (name: string) => Promise<SourceResult>,
): SourceDef[] {
  const b: BuiltinContext = { opts, d, ctx, now, read, cmd: { timeoutMs: d.commandTimeoutMs, ttlMs: d.commandTtlMs, maxOutputBytes: d.maxOutputBytes } };
  return Object.entries(BUILTIN).flatMap(([name, make]) => make(name, b) ?? []);
}

function customLabel(argv: readonly string[]): string {
  const [program = "", ...rest] = argv;
  const label = [basename(program), ...rest].join(" ");
  return label.length > 80 ? `${label.slice(0, 79)}…` : label;
}

export class SourceCatalog {
  private cache: SingleFlightCache<SourceResult>;
  /** For sources with keepWhile: the key read before each successful result ran, and when it was produced. */
  private readonly stamps = new WeakMap<SourceResult, { key: string; at: number }>();
  private sources: ReadonlyMap<string, SourceDef>;
  private problem: SourcesProblem | null = null;
  private watcher: SourcesFileWatcher | null = null;
  private readonly listeners = new Set<() => void>();

  private constructor(
    sources: ReadonlyMap<string, SourceDef>,
    private readonly opts: SourceCatalogOptions,
    private readonly defaults: SourceDefaults,
    private readonly ctx: RunContext,
    private readonly logger: Logger,
    private readonly metrics: Metrics | undefined,
    private readonly now: () => number,
  ) {
    this.sources = sources;
    this.cache = new SingleFlightCache<SourceResult>(now);
  }

  /** Loads and validates the --sources file; throws SourcesFileError naming file, line and field. */
  static async create(opts: SourceCatalogOptions): Promise<SourceCatalog> {
    const d: SourceDefaults = { ...SOURCE_DEFAULTS, ...stripUndefined(opts.defaults ?? {}) };
    const room = new ProcessRoom({
      procfs: opts.procfs,
      env: opts.env ?? process.env,
      ...(opts.commandPrefix ? { commandPrefix: opts.commandPrefix } : {}),
      ...(opts.execInProcess ? { execInProcess: opts.execInProcess } : {}),
      ...(opts.commandSpawner ? { commandSpawner: opts.commandSpawner } : {}),
      spawnerLogger: opts.logger.child({ component: "spawner" }),
    });
    let self: SourceCatalog | undefined;
    const ctx: RunContext = {
      room,
      statfs: new StatfsProber({
        boundMs: opts.statfsBoundMs ?? STATFS_DEFAULTS.boundMs,
        maxOutstanding: opts.statfsMaxOutstanding ?? STATFS_DEFAULTS.maxOutstanding,
        intervalMs: opts.statfsIntervalMs ?? STATFS_DEFAULTS.intervalMs,
        room,
        // The same namespace's table as proc.mounts (cached like it).
        mountTable: async () => {
          const r = await self?.read("proc.mounts", {});
          return r?.ok ? r.stdout : undefined;
        },
      }),
    };
    const now = opts.now ?? (() => performance.now());
    const pingMetrics = opts.metrics ? serverPingMetrics(opts.metrics.registry) : undefined;
    ctx.pings = {
      pinger: new ServerPinger({
        room,
        ...SERVER_PING_DEFAULTS,
        ...stripUndefined(opts.serverPings ?? {}),
        now,
        ...(pingMetrics
          ? { onPing: (result, seconds) => pingMetrics.pings.observe({ result }, seconds), onChange: (n) => pingMetrics.outstanding.set(n) }
          : {}),
      }),
      read: (name) => self!.read(name, {}),
    };
    const defs = await buildDefs(opts, d, ctx, now, (name) => self!.read(name, {}));
    const log = opts.logger.child({ component: "sources" });
    self = new SourceCatalog(defs, opts, d, ctx, log, opts.metrics, now);
    return self;
  }

  /**
   * Watches the --sources file (a ConfigMap's ..data swap included): a valid
   * edit replaces the custom sources within a few seconds; an invalid one
   * keeps the last good set and is reported by problems() until fixed.
   */
  async watch(opts: { pollMs?: number; debounceMs?: number } = {}): Promise<void> {
    const file = this.opts.sourcesFile;
    if (file === undefined || this.watcher) return;
    this.watcher = new SourcesFileWatcher(file, () => this.reload(), { ...opts, logger: this.logger });
    await this.watcher.start();
  }

  /** Stops watching and ends the commands still running; resolves once they are reaped. */
  async stop(): Promise<void> {
    this.watcher?.stop();
    this.watcher = null;
    await Promise.all([this.ctx.statfs?.stop(), this.ctx.pings?.pinger.stop(), this.ctx.room.stop()]);
  }

  /** The process room the sources run in (its place rules are the Lustre tools'): for what else must run where they do (--unstick). */
  get room(): ProcessRoom {
    return this.ctx.room;
  }

  /** The command spawner, when this catalog was given one (commandSpawner). */
  get spawner(): CommandSpawner | undefined {
    return this.ctx.room.spawner;
  }

  /** statfs probes outstanding now, hung ones included (volume.statfs). */
  statfsOutstanding(): number {
    return this.ctx.statfs?.count() ?? 0;
  }

  /** Server pings outstanding now, hung ones included (lnet.server_pings). */
  serverPingsOutstanding(): number {
    return this.ctx.pings?.pinger.count() ?? 0;
  }

  /** Called after the set of sources or its problems changed. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The refused edit of the --sources file, if the current file is not the one in use. */
  problems(): SourcesProblem[] {
    return this.problem ? [this.problem] : [];
  }

  /** Re-reads the --sources file; never throws. */
  async reload(sha256?: string): Promise<void> {
    let defs: ReadonlyMap<string, SourceDef>;
    try {
      defs = await buildDefs(this.opts, this.defaults, this.ctx, this.now, (name) => this.read(name, {}));
    } catch (err) {
      if (!(err instanceof SourcesFileError)) {
        this.logger.error({ err: (err as Error).message }, "sources file reload failed unexpectedly");
        return;
      }
      const message = `${err.message.replace(/:\n\s*/, ": ").replace(/\n\s*/g, "; ")}; the last good set of sources stays in use`;
      if (this.problem?.message !== message) {
        this.problem = { file: this.opts.sourcesFile!, reason: "SourcesInvalid", message, sha256, at: new Date().toISOString() };
        this.logger.warn({ file: this.opts.sourcesFile, detail: err.message }, "sources file refused; keeping the last good set");
        this.notify();
      }
      return;
    }
    const before = JSON.stringify(this.describe());
    this.sources = defs;
    const changed = JSON.stringify(this.describe()) !== before;
    const hadProblem = this.problem !== null;
    this.problem = null;
    if (changed) {
      // Results of a source whose definition changed must not outlive it.
      this.cache = new SingleFlightCache<SourceResult>(this.now);
      this.logger.info({ file: this.opts.sourcesFile, sources: this.names().filter((n) => !BUILTIN_SOURCE_NAMES.includes(n)) }, "sources file applied");
    }
    if (changed || hadProblem) this.notify();
  }

  private notify(): void {
    for (const fn of this.listeners) {
      try {
        fn();
      } catch (err) {
        this.logger.error({ err: (err as Error).message }, "sources listener threw");
      }
    }
  }

  has(name: string): boolean {
    return this.sources.has(name);
  }

  names(): string[] {
    return [...this.sources.keys()];
  }

  /** Unknown sources need no facts (read() then reports them as unknown). */
  requiredFacts(name: string): string[] {
    return [...(this.sources.get(name)?.params ?? [])];
  }

  describe(): SourceDescription[] {
    return [...this.sources.values()].map((s) => ({
      name: s.name,
      kind: s.kind,
      ...(s.argv ? { argv: [...s.argv] } : {}),
      ...(s.path ? { path: s.path } : {}),
      ...(s.timeoutMs !== undefined ? { timeoutMs: s.timeoutMs } : {}),
      ttlMs: s.ttlMs,
      params: [...s.params],
      ...(s.keepWhile ? { keptWhile: s.keepWhile.what, keepMaxAgeMs: s.keepWhile.maxAgeMs } : {}),
    }));
  }

  /**
   * What read() would have returned had the source printed `saved` (for
   * `plugin test` and fixture files): a missing or invalid fact fails exactly
   * as it does on a node, before anything runs. Returns a problem text when
   * the saved output is impossible for this source (e.g. a file with stderr).
   */
  async replay(name: string, saved: SavedOutput, facts: Readonly<Record<string, string>>): Promise<SourceResult | { problem: string }> {
    const def = this.sources.get(name);
    if (!def) return { problem: `unknown source ${name}` };
    const { replayOutput, replayProblem } = await import("./replay.js");
    const problem = replayProblem(def.replay, saved);
    if (problem) return { problem: `${name}: ${problem}` };
    const prepared = def.prepare(facts ?? {});
    if ("error" in prepared) return immediateFailure(prepared.error);
    const { outcome: _outcome, ...rest } = replayOutput(def.replay, saved);
    return Object.freeze({ ...rest, fetchedAtMs: Date.now() });
  }

  /**
   * Never rejects. Results are frozen and shared between callers: within a
   * TTL every caller with the same parameters gets the very same object.
   */
  async read(name: string, facts: Readonly<Record<string, string>>): Promise<SourceResult> {
    try {
      const def = this.sources.get(name);
      if (!def) return immediateFailure(`unknown source ${name}`);
      const prepared = def.prepare(facts ?? {});
      if ("error" in prepared) return immediateFailure(prepared.error);
      const key = `${name}\0${prepared.key}`;
      const keep = def.keepWhile;
      if (!keep) return await this.cache.get(key, def.ttlMs, () => this.execute(def, prepared.run));
      return await this.cache.get(
        key,
        def.ttlMs,
        () => this.executeKeyed(def, prepared.run, keep),
        (last) => this.stillKept(last, keep),
      );
    } catch (err) {
      this.logger.error({ err, source: name }, "source read failed unexpectedly");
      return immediateFailure(`internal error: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /**
   * The key is read before the command runs: a mount that comes or goes while
   * it runs then shows as a changed key at the next read (one run too many,
   * never a stale answer kept). Failures are never stamped, so never kept.
   */
  private async executeKeyed(def: SourceDef, run: () => Promise<Produced>, keep: KeepWhile): Promise<SourceResult> {
    const key = await readKey(keep);
    const result = await this.execute(def, run);
    if (key !== undefined && result.ok) this.stamps.set(result, { key, at: this.now() });
    return result;
  }

  private async stillKept(last: SourceResult, keep: KeepWhile): Promise<boolean> {
    const stamp = this.stamps.get(last);
    if (!stamp || this.now() - stamp.at >= keep.maxAgeMs) return false;
    return (await readKey(keep)) === stamp.key;
  }

  private async execute(def: SourceDef, run: () => Promise<Produced>): Promise<SourceResult> {
    const started = performance.now();
    const produced = await run();
    const seconds = (performance.now() - started) / 1000;
    const m = this.metrics;
    if (m) {
      m.sourceExecutions.inc({ source: def.name, result: produced.outcome });
      m.sourceDuration.observe({ source: def.name }, seconds);
      // Adding 0 starts each source's series at its first run, so increase()
      // sees the first timeout or error and a dashboard shows the source at 0.
      m.sourceTimeouts.inc({ source: def.name }, produced.outcome === "timeout" ? 1 : 0);
      m.sourceErrors.inc({ source: def.name }, produced.ok || produced.outcome === "skipped" ? 0 : 1);
    }
    // Sizes only: outputs can be large and are the plugins' business.
    this.logger.debug(
      {
        source: def.name,
        result: produced.outcome,
        exitCode: produced.exitCode,
        error: produced.error,
        stdoutChars: produced.stdout.length,
        stderrChars: produced.stderr.length,
        durationMs: Math.round(seconds * 1000),
      },
      "source executed",
    );
    const { outcome: _outcome, ...rest } = produced;
    return Object.freeze({ ...rest, fetchedAtMs: Date.now() });
  }
}

/** The key never fails a read: whatever goes wrong means "cannot tell", and nothing is kept. */
async function readKey(keep: KeepWhile): Promise<string | undefined> {
  try {
    return await keep.key();
  } catch {
    return undefined;
  }
}

async function buildDefs(
  opts: SourceCatalogOptions,
  d: SourceDefaults,
  ctx: RunContext,
  now: () => number,
  read: (name: string) => Promise<SourceResult>,
): Promise<ReadonlyMap<string, SourceDef>> {
  // No command whose answer cannot matter: one `net show` run a round, no Lustre command without Lustre.
  const defs = shareNetShow(gateLustreSources(builtinSources(opts, d, ctx, now, read), read), read);
  if (opts.sourcesFile !== undefined) {
    // Loaded on demand: most gateways have no --sources file and need no YAML parser.
    const { loadSourcesFile } = await import("./sources-file.js");
    const custom = await loadSourcesFile(opts.sourcesFile, new Set(BUILTIN_SOURCE_NAMES));
    await refuseEscapes(opts, custom);
    for (const c of custom) defs.push(customSource(c, opts, d, ctx));
  }
  return new Map(defs.map((s) => [s.name, s]));
}

function customSource(c: CustomSourceConfig, opts: SourceCatalogOptions, d: SourceDefaults, ctx: RunContext): SourceDef {
  if (c.kind === "file") {
    const root = c.root === "sysfs" ? opts.sysfs : opts.procfs;
    return globFileSource(c.name, root, c.glob, c.ttlMs ?? d.fileTtlMs, c.maxOutputBytes ?? d.maxOutputBytes, c.maxFiles);
  }
  return commandSource(
    { name: c.name, argv: c.argv, label: customLabel(c.argv), timeoutMs: c.timeoutMs, ttlMs: c.ttlMs, maxOutputBytes: c.maxOutputBytes ?? d.maxOutputBytes },
    ctx.room,
  );
}

/** A file source whose matches resolve outside its root (a symlink out of the tree) is refused at load. */
async function refuseEscapes(opts: SourceCatalogOptions, custom: readonly CustomSourceConfig[]): Promise<void> {
  const files = custom.filter((c) => c.kind === "file");
  if (files.length === 0) return;
  const { expandGlob, escapes } = await import("./glob-files.js");
  const problems: string[] = [];
  for (const c of files) {
    const root = c.root === "sysfs" ? opts.sysfs : opts.procfs;
    const where = `${opts.sourcesFile}:${c.line}: source ${JSON.stringify(c.name)}: ${c.root}: ${c.glob}`;
    try {
      const { matches } = await expandGlob(root, c.glob, 1024);
      for (const [rel, real] of await escapes(root, matches)) problems.push(`${where}: ${rel} resolves to ${real}, outside ${root}; refused`);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A root that does not exist (yet) has nothing to escape through; reads report it.
      if (code !== "ENOENT") problems.push(`${where}: ${(err as Error).message}`);
    }
  }
  if (problems.length > 0) throw new SourcesFileError(`invalid sources file ${opts.sourcesFile}:\n  ${problems.join("\n  ")}`);
}

function immediateFailure(error: string): SourceResult {
  return Object.freeze({
    ok: false,
    exitCode: null,
    stdout: "",
    stderr: "",
    error,
    truncated: false,
    fetchedAtMs: Date.now(),
  });
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
