import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import path from "node:path";
import type { LevelWithSilent } from "pino";
import { isLoopback, type Endpoint } from "../transport/endpoint.js";
import type { EdgeLimits } from "../transport/edge-limits.js";
import { DEFAULT_HTTP_ENDPOINT, flagSpec, FlagValues, parseArgsOptions } from "./flags.js";
import { UsageError } from "./flag-types.js";
import { GATE_NAMES, type GateName } from "../upstream/methods.js";
import type { Mode } from "../runtime/types.js";
import { LockKeyError, lockPublicKey, type LockPublicKey } from "../runtime/plugin-lock.js";
import { parseTaint, qualifiedNameProblem, type KubeReportingSpec, type TaintMode } from "../kube/spec.js";

export { UsageError };

export type { GateName };
export type ProbeReady = "upstream" | "startup" | "readiness";

export interface Config {
  help: boolean;
  version: boolean;
  mode: Mode;
  csiEndpoint: Endpoint;
  httpEndpoint?: Endpoint;
  /** --metrics-endpoint: /metrics served here only (and no longer on the HTTP endpoint). */
  metricsEndpoint?: Endpoint;
  /** --readyz-detail-remote: health detail (?verbose, JSON) to any client, not only loopback and the unix socket. */
  healthDetailRemote: boolean;
  driverName: string;
  driverVersion?: string;
  capabilities: string[];
  maxRequestBytes: number;
  limits: EdgeLimits;
  shutdownTimeoutMs: number;
  /** --plugins-dir, in order; empty means the bundled plugins. */
  pluginsDirs: string[];
  /** --plugins-lock and --plugins-lock-key (read and checked here: a wrong key is a usage error, not a refusal at every scan). */
  pluginsLock?: { file: string; key?: LockPublicKey };
  checkIntervalMs: number;
  /** --health-interval: storage and volume health checks' cadence. */
  healthIntervalMs: number;
  pluginTimeoutMs: number;
  pluginMemoryMiB: number;
  quarantineAfter: number;
  quarantineBackoffMs: number;
  quarantineBackoffMaxMs: number;
  procfs: string;
  sysfs: string;
  modules: string;
  modprobe: string;
  sourcesFile?: string;
  commandPrefix?: string[];
  execInProcess?: string;
  requireChecks: string[];
  /** --kubelet-dir: where volumes are rediscovered from the mount table. */
  kubeletDir: string;
  /** --max-volumes. */
  maxVolumes: number;
  /** --statfs-timeout: a statfs outstanding longer is reported hung. */
  statfsTimeoutMs: number;
  /** --server-ping-interval: each server NID is pinged at most once per this long. */
  serverPingIntervalMs: number;
  /** --operation-stuck-after (gateway mode). */
  operationStuckAfterMs: number;
  /** --unstick=unmount: end stuck unmounts (umount -f, then -l). */
  unstick: boolean;
  /** --unstick-after. */
  unstickAfterMs: number;
  /** --command-spawner: source commands started by the resident spawner (on) or a fork of the gateway each (off). */
  commandSpawner: boolean;
  probeReady: ProbeReady;
  demo: string;
  upstream?: Endpoint;
  gate: Set<GateName>;
  upstreamTimeoutCapMs: number;
  logLevel: LevelWithSilent;
  /** Kubernetes node reporting; undefined when off. */
  kube?: KubeReportingSpec;
}

const GATES = GATE_NAMES;

function edgeLimits(flags: FlagValues): EdgeLimits {
  const limits: EdgeLimits = {
    maxConnections: flags.get("max-connections"),
    maxConnectionsPerAddress: flags.get("max-connections-per-address"),
    maxStreamsPerConnection: flags.get("max-streams-per-connection"),
    maxInflight: flags.get("max-inflight"),
    maxWatches: flags.get("max-watches"),
    headerTimeoutMs: flags.get("header-timeout"),
    requestTimeoutMs: flags.get("request-timeout"),
    idleTimeoutMs: flags.get("idle-timeout"),
  };
  // The default share is a quarter-ish of the default table; with a smaller table it is all of it.
  if (!flags.given("max-connections-per-address")) limits.maxConnectionsPerAddress = Math.min(limits.maxConnectionsPerAddress, limits.maxConnections);
  else if (limits.maxConnectionsPerAddress > limits.maxConnections) {
    throw new UsageError(`--max-connections-per-address: ${limits.maxConnectionsPerAddress} is more than --max-connections ${limits.maxConnections}`);
  }
  if (limits.maxWatches > limits.maxInflight) {
    throw new UsageError(`--max-watches: ${limits.maxWatches} is more than --max-inflight ${limits.maxInflight} (Watch streams count as calls in progress)`);
  }
  return limits;
}

function pluginsLock(flags: FlagValues): Config["pluginsLock"] {
  const file = flags.optional("plugins-lock");
  const keyFile = flags.optional("plugins-lock-key");
  if (file === undefined) {
    if (keyFile !== undefined) throw new UsageError("--plugins-lock-key: needs --plugins-lock (the key verifies the lock's signature)");
    return undefined;
  }
  if (file === "") throw new UsageError("--plugins-lock: must not be empty");
  if (keyFile === undefined) return { file: path.resolve(file) };
  let pem: Buffer;
  try {
    pem = readFileSync(keyFile);
  } catch (e) {
    throw new UsageError(`--plugins-lock-key: cannot read ${keyFile}: ${(e as Error).message}`);
  }
  try {
    return { file: path.resolve(file), key: lockPublicKey(pem) };
  } catch (e) {
    if (e instanceof LockKeyError) throw new UsageError(`--plugins-lock-key: ${keyFile}: ${e.message}`);
    throw e;
  }
}

function pluginsDirs(dirs: string[]): string[] {
  for (const d of dirs) if (d === "") throw new UsageError("--plugins-dir: must not be empty");
  const seen = new Set<string>();
  for (const d of dirs) {
    if (seen.has(d)) throw new UsageError(`--plugins-dir: ${d} is given twice`);
    seen.add(d);
  }
  return dirs;
}

function quarantineBackoff(flags: FlagValues): { quarantineBackoffMs: number; quarantineBackoffMaxMs: number } {
  const a = flags.get("quarantine-backoff");
  const b = flags.get("quarantine-backoff-max");
  if (b < a) {
    throw new UsageError(`--quarantine-backoff-max: must not be shorter than --quarantine-backoff (${flags.raw("quarantine-backoff") ?? flagSpec("quarantine-backoff")!.default}), got "${flags.raw("quarantine-backoff-max")}"`);
  }
  return { quarantineBackoffMs: a, quarantineBackoffMaxMs: b };
}

/**
 * parseArgs' own refusals, reworded to name the flag the way --help writes it:
 * a switch given a value (`--help=yes`) takes none; a flag without its value needs one.
 */
function argvError(err: unknown): UsageError {
  const e = err as { code?: string; message: string };
  const quoted = /'([^']*)'/.exec(e.message)?.[1] ?? "";
  const long = /--([A-Za-z0-9][A-Za-z0-9.-]*)/.exec(quoted)?.[1];
  if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return new UsageError(`unknown flag ${quoted} (see --help)`);
  if (e.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const spec = long ? flagSpec(long) : undefined;
    if (spec?.type === "boolean") return new UsageError(`--${spec.name} is a switch and takes no value: give --${spec.name} alone, or leave it out`);
    return new UsageError(`--${long ?? quoted} needs a value`);
  }
  if (e.code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") return new UsageError(`unexpected argument "${quoted}" (see --help)`);
  return new UsageError(e.message);
}

/** Turns argv and the environment into a validated Config, or throws UsageError. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    values = parseArgs({ args: argv, options: parseArgsOptions(), strict: true, allowPositionals: false }).values as typeof values;
  } catch (err) {
    throw argvError(err);
  }
  const flags = new FlagValues(values, env);

  const mode: Mode = flags.get("mode");
  const csiEndpoint = flags.get("csi-endpoint");
  const httpEndpoint = flags.given("http-endpoint") ? flags.optional("http-endpoint") : flags.parse("http-endpoint", DEFAULT_HTTP_ENDPOINT[mode]);
  const metricsEndpoint = flags.optional("metrics-endpoint");
  if (metricsEndpoint?.kind === "tcp" && httpEndpoint?.kind === "tcp" && metricsEndpoint.port !== 0 && metricsEndpoint.port === httpEndpoint.port) {
    throw new UsageError(`--metrics-endpoint: port ${metricsEndpoint.port} is --http-endpoint's too`);
  }

  const driverName = flags.get("driver-name");
  const driverVersion = flags.optional("driver-version");
  const capabilities = flags.get("capabilities");
  const logLevel = flags.get("log-level");

  const upstream = flags.optional("upstream");
  if (upstream && csiEndpoint.kind === "tcp" && !isLoopback(csiEndpoint)) {
    throw new UsageError(
      `--csi-endpoint: ${csiEndpoint.display} is not a loopback address, and with --upstream it carries the mount API ` +
        `(NodePublishVolume, NodeStageVolume, CreateVolume, DeleteVolume), which must never be reachable from the network; ` +
        `use a unix socket (unix:///csi/csi.sock) or a loopback address (tcp://127.0.0.1:PORT)`,
    );
  }
  const gateRaw = flags.raw("gate") ?? (upstream ? GATES.join(",") : "none");
  const gate = new Set<GateName>();
  for (const g of gateRaw.split(",").map((s) => s.trim()).filter((s) => s && s !== "none")) {
    if (!GATES.includes(g as GateName)) throw new UsageError(`--gate: unknown call "${g}" (known: ${GATES.join(", ")}, none)`);
    gate.add(g as GateName);
  }
  if (gate.size > 0 && !upstream) throw new UsageError("--gate: needs --upstream (gating applies to forwarded calls)");

  const prefixRaw = flags.optional("command-prefix");
  const commandPrefix = prefixRaw === undefined ? undefined : prefixRaw.split(/\s+/).filter(Boolean);
  if (commandPrefix && commandPrefix.length === 0) throw new UsageError("--command-prefix: must name a program");

  const execInProcess = flags.optional("exec-in-process");
  if (execInProcess !== undefined) {
    // A process's executable name: no path, nothing a shell or /proc lookup could misread.
    if (!/^[^/\0\s]{1,255}$/.test(execInProcess)) {
      throw new UsageError(`--exec-in-process: expected an executable name (no '/', no spaces), got "${execInProcess}"`);
    }
    if (commandPrefix) throw new UsageError("--exec-in-process and --command-prefix cannot be combined (each decides where commands run)");
  }

  const requireChecks = [...new Set((flags.optional("require-checks") ?? "").split(",").map((s) => s.trim()).filter(Boolean))];
  for (const n of requireChecks) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(n)) throw new UsageError(`--require-checks: invalid check name "${n}"`);
  }

  const probeReady: ProbeReady = flags.optional("probe-ready") ?? (upstream ? "upstream" : "readiness");
  if (probeReady === "upstream" && !upstream) throw new UsageError("--probe-ready=upstream: needs --upstream (it follows the upstream driver's Probe)");

  const demo = flags.get("demo");
  if (demo !== "off" && demo !== "auto" && !/^[a-z0-9-]+$/.test(demo)) throw new UsageError(`--demo: invalid scenario "${demo}"`);

  const kube = kubeSpec(flags, env, mode);

  return {
    kube,
    help: flags.on("help"),
    version: flags.on("version"),
    mode,
    csiEndpoint,
    httpEndpoint,
    metricsEndpoint,
    healthDetailRemote: flags.on("readyz-detail-remote"),
    driverName,
    driverVersion,
    capabilities,
    maxRequestBytes: flags.get("max-request-bytes"),
    limits: edgeLimits(flags),
    shutdownTimeoutMs: flags.get("shutdown-timeout"),
    pluginsDirs: pluginsDirs(flags.list("plugins-dir")),
    pluginsLock: pluginsLock(flags),
    checkIntervalMs: flags.get("check-interval"),
    healthIntervalMs: flags.get("health-interval"),
    pluginTimeoutMs: flags.get("plugin-timeout"),
    pluginMemoryMiB: flags.get("plugin-memory"),
    quarantineAfter: flags.get("quarantine-after"),
    ...quarantineBackoff(flags),
    procfs: flags.get("path.procfs"),
    sysfs: flags.get("path.sysfs"),
    modules: flags.get("path.modules"),
    modprobe: flags.get("path.modprobe"),
    sourcesFile: flags.optional("sources"),
    commandPrefix,
    execInProcess,
    requireChecks,
    kubeletDir: flags.get("kubelet-dir"),
    maxVolumes: flags.get("max-volumes"),
    statfsTimeoutMs: flags.get("statfs-timeout"),
    serverPingIntervalMs: flags.get("server-ping-interval"),
    operationStuckAfterMs: flags.get("operation-stuck-after"),
    unstick: flags.get("unstick") === "unmount",
    unstickAfterMs: flags.get("unstick-after"),
    commandSpawner: flags.get("command-spawner") === "on",
    probeReady,
    demo,
    upstream,
    gate,
    upstreamTimeoutCapMs: flags.get("upstream-timeout-cap"),
    logLevel,
  };
}

/** --kubeconfig names one file; KUBECONFIG a list (':'-separated), merged as kubectl merges it. */
function kubeconfigPaths(flag: string | undefined, env: string | undefined): string[] | undefined {
  if (flag) return [flag];
  const list = [...new Set((env ?? "").split(path.delimiter).filter((f) => f !== ""))];
  return list.length > 0 ? list : undefined;
}

/** The node-reporting flags that mean nothing without a condition or a taint to report. */
const REPORTING_ONLY = [
  "node-name", "kubeconfig", "kube-context", "impersonate-node", "node-heartbeat", "node-taint-mode",
  "node-taint-wait-csinode", "node-backoff-cap", "node-resync", "node-write-interval",
] as const;

/**
 * Node reporting is on only with a node name and something to report: a pod
 * that merely has NODE_NAME (or a shell that has KUBECONFIG) in its environment
 * changes nothing. A reporting flag given on the command line without
 * --node-condition or --node-taint is refused: the user asked for reporting
 * that would never happen, and a log line at start is easy to miss.
 */
function kubeSpec(flags: FlagValues, env: NodeJS.ProcessEnv, mode: Mode): KubeReportingSpec | undefined {
  const condition = flags.optional("node-condition");
  const taintRaw = flags.optional("node-taint");
  const perCheck = flags.on("node-condition-per-check");
  const storageCondition = flags.optional("node-storage-condition");
  const storageTaint = flags.on("node-storage-taint");
  if (storageCondition !== undefined) {
    const problem = qualifiedNameProblem(storageCondition, true);
    if (problem) throw new UsageError(`--node-storage-condition: "${storageCondition}" ${problem}`);
    if (storageCondition === condition) throw new UsageError("--node-storage-condition: must differ from --node-condition");
  }
  const operationsCondition = flags.optional("node-operations-condition");
  if (operationsCondition !== undefined) {
    const problem = qualifiedNameProblem(operationsCondition, true);
    if (problem) throw new UsageError(`--node-operations-condition: "${operationsCondition}" ${problem}`);
    if (operationsCondition === condition || operationsCondition === storageCondition) {
      throw new UsageError("--node-operations-condition: must differ from --node-condition and --node-storage-condition");
    }
  }
  const impersonate = flags.on("impersonate-node");
  if (condition !== undefined) {
    const problem = qualifiedNameProblem(condition, true);
    if (problem) throw new UsageError(`--node-condition: "${condition}" ${problem}`);
  }
  const taint = taintRaw === undefined ? undefined : (() => {
    try {
      return parseTaint(taintRaw);
    } catch (err) {
      throw new UsageError(`--node-taint: ${(err as Error).message}`);
    }
  })();
  const taintMode: TaintMode = flags.get("node-taint-mode");
  const waitForCSINode = flags.get("node-taint-wait-csinode") === "true";
  if (perCheck && condition === undefined) throw new UsageError("--node-condition-per-check: needs --node-condition");
  if (storageTaint && taintRaw === undefined) throw new UsageError("--node-storage-taint: needs --node-taint");
  const nodeName = flags.optional("node-name");
  const timings = {
    heartbeatMs: flags.get("node-heartbeat"),
    backoffCapMs: flags.get("node-backoff-cap"),
    resyncMs: flags.get("node-resync"),
    writeIntervalMs: flags.get("node-write-interval"),
    requestTimeoutMs: 10_000,
  };
  if (condition === undefined && taint === undefined && storageCondition === undefined && operationsCondition === undefined) {
    if (impersonate) throw new UsageError("--impersonate-node: needs --node-condition or --node-taint");
    const idle = REPORTING_ONLY.find((f) => flags.given(f));
    if (idle) {
      throw new UsageError(
        `--${idle}: nothing to report: node reporting needs --node-condition, --node-taint, --node-storage-condition and/or --node-operations-condition (without them probegate never writes to the Node)`,
      );
    }
    return undefined;
  }
  const what = condition !== undefined ? "node-condition" : taint !== undefined ? "node-taint" : storageCondition !== undefined ? "node-storage-condition" : "node-operations-condition";
  if (!nodeName) throw new UsageError(`--${what}: needs --node-name (or NODE_NAME)`);
  const validName = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(nodeName) && nodeName.length <= 253;
  if (!validName) throw new UsageError(`--node-name: "${nodeName}" is not a valid node name (a lowercase DNS subdomain)`);
  if (mode !== "node") throw new UsageError("--node-condition/--node-taint: only in --mode node (the controller runs on no particular node)");
  return {
    nodeName,
    kubeconfig: kubeconfigPaths(flags.given("kubeconfig") ? flags.raw("kubeconfig") : undefined, env.KUBECONFIG),
    kubeContext: flags.optional("kube-context"),
    condition,
    conditionPerCheck: perCheck,
    ...(storageCondition !== undefined ? { storageCondition } : {}),
    ...(storageTaint ? { storageTaint } : {}),
    ...(operationsCondition !== undefined ? { operationsCondition } : {}),
    taint,
    taintMode,
    waitForCSINode,
    impersonateNode: impersonate,
    timings,
  };
}
