import { parseArgs } from "node:util";
import path from "node:path";
import type { LevelWithSilent } from "pino";
import { LOG_LEVELS } from "../observability/logger.js";
import { CAPABILITY_NAMES, driverNameProblem } from "../services/identity.js";
import { isLoopback, parseEndpoint, type Endpoint } from "../transport/endpoint.js";
import { DEFAULT_EDGE_LIMITS, type EdgeLimits } from "../transport/edge-limits.js";
import { parseDuration } from "../engine/sources/index.js";
import { parseArgsOptions } from "./flags.js";
import { parseTaint, qualifiedNameProblem, type KubeReportingSpec, type TaintMode } from "../kube/spec.js";

/** A bad command line: printed as one line, exit code 2. */
export class UsageError extends Error {}

export type Mode = "node" | "controller";
export type GateName = "node-stage" | "node-publish";
export type ProbeReady = "upstream" | "startup" | "readiness";
const PROBE_READY: readonly ProbeReady[] = ["upstream", "startup", "readiness"];

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
  checkIntervalMs: number;
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
  probeReady: ProbeReady;
  demo: string;
  upstream?: Endpoint;
  gate: Set<GateName>;
  upstreamTimeoutCapMs: number;
  logLevel: LevelWithSilent;
  /** Kubernetes node reporting; undefined when off. */
  kube?: KubeReportingSpec;
}

const GATES: readonly GateName[] = ["node-stage", "node-publish"];

function duration(flag: string, value: string): number {
  const ms = parseDuration(value);
  if (ms === null) throw new UsageError(`--${flag}: invalid duration "${value}" (use e.g. 500ms, 5s, 1m)`);
  return ms;
}

function positiveInt(flag: string, value: string, max: number): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new UsageError(`--${flag}: expected a whole number from 1 to ${max}, got "${value}"`);
  }
  return Number(value);
}

function endpoint(flag: string, value: string): Endpoint {
  try {
    return parseEndpoint(value);
  } catch (err) {
    throw new UsageError(`--${flag}: ${(err as Error).message}`);
  }
}

function modeFromEnv(env: NodeJS.ProcessEnv): Mode | undefined {
  const v = env.AZURELUSTRE_CSI_INSTALL_LUSTRE_CLIENT;
  if (v === undefined || v === "") return undefined;
  if (v === "yes") return "node";
  if (v === "no") return "controller";
  throw new UsageError(`AZURELUSTRE_CSI_INSTALL_LUSTRE_CLIENT: expected yes or no, got "${v}"`);
}

function positiveDuration(flag: string, value: string): number {
  const ms = duration(flag, value);
  if (ms <= 0) throw new UsageError(`--${flag}: must be longer than 0`);
  // Node timers hold at most 2^31-1 ms.
  if (ms > 2_147_483_647) throw new UsageError(`--${flag}: must be at most 24 days`);
  return ms;
}

function edgeLimits(str: (k: string) => string | undefined): EdgeLimits {
  const d = DEFAULT_EDGE_LIMITS;
  const int = (flag: string, def: number, max: number) => positiveInt(flag, str(flag) ?? String(def), max);
  const dur = (flag: string, defMs: number) => {
    const raw = str(flag);
    return raw === undefined ? defMs : positiveDuration(flag, raw);
  };
  const limits: EdgeLimits = {
    maxConnections: int("max-connections", d.maxConnections, 1_000_000),
    maxConnectionsPerAddress: int("max-connections-per-address", d.maxConnectionsPerAddress, 1_000_000),
    maxStreamsPerConnection: int("max-streams-per-connection", d.maxStreamsPerConnection, 2 ** 31 - 1),
    maxInflight: int("max-inflight", d.maxInflight, 1_000_000),
    maxWatches: int("max-watches", d.maxWatches, 1_000_000),
    headerTimeoutMs: dur("header-timeout", d.headerTimeoutMs),
    requestTimeoutMs: dur("request-timeout", d.requestTimeoutMs),
    idleTimeoutMs: dur("idle-timeout", d.idleTimeoutMs),
  };
  // The default share is a quarter-ish of the default table; with a smaller table it is all of it.
  if (str("max-connections-per-address") === undefined) limits.maxConnectionsPerAddress = Math.min(limits.maxConnectionsPerAddress, limits.maxConnections);
  else if (limits.maxConnectionsPerAddress > limits.maxConnections) {
    throw new UsageError(`--max-connections-per-address: ${limits.maxConnectionsPerAddress} is more than --max-connections ${limits.maxConnections}`);
  }
  if (limits.maxWatches > limits.maxInflight) {
    throw new UsageError(`--max-watches: ${limits.maxWatches} is more than --max-inflight ${limits.maxInflight} (Watch streams count as calls in progress)`);
  }
  return limits;
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

function quarantineBackoff(first: string, max: string): { quarantineBackoffMs: number; quarantineBackoffMaxMs: number } {
  const a = duration("quarantine-backoff", first);
  const b = duration("quarantine-backoff-max", max);
  if (a < 100) throw new UsageError(`--quarantine-backoff: must be at least 100ms, got "${first}"`);
  if (b < a) throw new UsageError(`--quarantine-backoff-max: must not be shorter than --quarantine-backoff (${first}), got "${max}"`);
  return { quarantineBackoffMs: a, quarantineBackoffMaxMs: b };
}

/** Turns argv and the environment into a validated Config, or throws UsageError. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv): Config {
  let values: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({ args: argv, options: parseArgsOptions(), strict: true, allowPositionals: false });
    values = parsed.values as Record<string, string | boolean | undefined>;
  } catch (err) {
    const e = err as { code?: string; message: string };
    const flag = /'(-[^' ]*)/.exec(e.message)?.[1];
    if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new UsageError(`unknown flag ${flag ?? ""} (see --help)`);
    if (e.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") throw new UsageError(`flag ${flag ?? ""} needs a value`.replace(/ +/, " "));
    if (e.code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
      const arg = /'([^']*)'/.exec(e.message)?.[1];
      throw new UsageError(`unexpected argument "${arg}" (see --help)`);
    }
    throw new UsageError(e.message);
  }
  const str = (k: string) => (typeof values[k] === "string" ? (values[k] as string) : undefined);
  const list = (k: string): string[] => {
    const v = values[k] as unknown;
    return Array.isArray(v) ? (v as string[]) : typeof v === "string" ? [v] : [];
  };

  const modeRaw = str("mode");
  let mode: Mode;
  if (modeRaw !== undefined) {
    if (modeRaw !== "node" && modeRaw !== "controller") throw new UsageError(`--mode: expected node or controller, got "${modeRaw}"`);
    mode = modeRaw;
  } else mode = modeFromEnv(env) ?? "node";

  const csiRaw = str("csi-endpoint") ?? (env.CSI_ENDPOINT || "unix:///tmp/csi.sock");
  const csiEndpoint = endpoint("csi-endpoint", csiRaw);

  const httpRaw = str("http-endpoint") ?? (mode === "node" ? "0.0.0.0:29763" : "0.0.0.0:29762");
  const httpEndpoint = httpRaw === "off" ? undefined : endpoint("http-endpoint", httpRaw);
  if (httpEndpoint && httpEndpoint.kind !== "tcp") throw new UsageError(`--http-endpoint: must be HOST:PORT (TCP), got "${httpRaw}"`);
  const metricsRaw = str("metrics-endpoint");
  const metricsEndpoint = metricsRaw === undefined ? undefined : endpoint("metrics-endpoint", metricsRaw);
  if (metricsEndpoint && metricsEndpoint.kind !== "tcp") throw new UsageError(`--metrics-endpoint: must be HOST:PORT (TCP), got "${metricsRaw}"`);
  if (metricsEndpoint && httpEndpoint && metricsEndpoint.port !== 0 && metricsEndpoint.port === httpEndpoint.port) {
    throw new UsageError(`--metrics-endpoint: port ${metricsEndpoint.port} is --http-endpoint's too`);
  }

  const driverName = str("driver-name") ?? "probegate.csi.io";
  const nameProblem = driverNameProblem(driverName);
  if (nameProblem) throw new UsageError(`--driver-name: "${driverName}" ${nameProblem}`);
  const driverVersion = str("driver-version");
  if (driverVersion === "") throw new UsageError("--driver-version: must not be empty");

  const capabilities = (str("capabilities") ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "" && s !== "none");
  for (const c of capabilities) {
    if (!(c in CAPABILITY_NAMES)) {
      throw new UsageError(`--capabilities: unknown capability "${c}" (known: ${Object.keys(CAPABILITY_NAMES).join(", ")})`);
    }
  }

  const logLevel = (str("log-level") ?? "info") as LevelWithSilent;
  if (!LOG_LEVELS.includes(logLevel)) throw new UsageError(`--log-level: expected one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);

  const upstreamRaw = str("upstream");
  const upstream = upstreamRaw !== undefined ? endpoint("upstream", upstreamRaw) : undefined;
  if (upstream && csiEndpoint.kind === "tcp" && !isLoopback(csiEndpoint)) {
    throw new UsageError(
      `--csi-endpoint: ${csiEndpoint.display} is not a loopback address, and with --upstream it carries the mount API ` +
        `(NodePublishVolume, NodeStageVolume, CreateVolume, DeleteVolume), which must never be reachable from the network; ` +
        `use a unix socket (unix:///csi/csi.sock) or a loopback address (tcp://127.0.0.1:PORT)`,
    );
  }
  const gateRaw = str("gate") ?? (upstream ? GATES.join(",") : "none");
  const gate = new Set<GateName>();
  for (const g of gateRaw.split(",").map((s) => s.trim()).filter((s) => s && s !== "none")) {
    if (!GATES.includes(g as GateName)) throw new UsageError(`--gate: unknown call "${g}" (known: ${GATES.join(", ")}, none)`);
    gate.add(g as GateName);
  }
  if (gate.size > 0 && !upstream) throw new UsageError("--gate: needs --upstream (gating applies to forwarded calls)");

  const prefixRaw = str("command-prefix");
  const commandPrefix = prefixRaw === undefined ? undefined : prefixRaw.split(/\s+/).filter(Boolean);
  if (commandPrefix && commandPrefix.length === 0) throw new UsageError("--command-prefix: must name a program");

  const execInProcess = str("exec-in-process");
  if (execInProcess !== undefined) {
    // A process's executable name: no path, nothing a shell or /proc lookup could misread.
    if (!/^[^/\0\s]{1,255}$/.test(execInProcess)) {
      throw new UsageError(`--exec-in-process: expected an executable name (no '/', no spaces), got "${execInProcess}"`);
    }
    if (commandPrefix) throw new UsageError("--exec-in-process and --command-prefix cannot be combined (each decides where commands run)");
  }

  const requireChecks = [...new Set((str("require-checks") ?? "").split(",").map((s) => s.trim()).filter(Boolean))];
  for (const n of requireChecks) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(n)) throw new UsageError(`--require-checks: invalid check name "${n}"`);
  }

  const probeReadyRaw = str("probe-ready") ?? (upstream ? "upstream" : "readiness");
  if (!PROBE_READY.includes(probeReadyRaw as ProbeReady)) {
    throw new UsageError(`--probe-ready: expected ${PROBE_READY.join(", ")}, got "${probeReadyRaw}"`);
  }
  if (probeReadyRaw === "upstream" && !upstream) throw new UsageError("--probe-ready=upstream: needs --upstream (it follows the upstream driver's Probe)");
  const probeReady = probeReadyRaw as ProbeReady;

  const demo = str("demo") ?? "off";
  if (demo !== "off" && demo !== "auto" && !/^[a-z0-9-]+$/.test(demo)) throw new UsageError(`--demo: invalid scenario "${demo}"`);

  const kube = kubeSpec(values, str, env, mode);

  return {
    kube,
    help: values.help === true,
    version: values.version === true,
    mode,
    csiEndpoint,
    httpEndpoint,
    metricsEndpoint,
    healthDetailRemote: values["readyz-detail-remote"] === true,
    driverName,
    driverVersion,
    capabilities,
    maxRequestBytes: positiveInt("max-request-bytes", str("max-request-bytes") ?? "4194304", 64 * 1024 * 1024),
    limits: edgeLimits(str),
    shutdownTimeoutMs: duration("shutdown-timeout", str("shutdown-timeout") ?? "5s"),
    pluginsDirs: pluginsDirs(list("plugins-dir")),
    checkIntervalMs: Math.max(100, duration("check-interval", str("check-interval") ?? "5s")),
    pluginTimeoutMs: duration("plugin-timeout", str("plugin-timeout") ?? "500ms"),
    pluginMemoryMiB: positiveInt("plugin-memory", str("plugin-memory") ?? "16", 1024),
    quarantineAfter: positiveInt("quarantine-after", str("quarantine-after") ?? "3", 1000),
    ...quarantineBackoff(str("quarantine-backoff") ?? "30s", str("quarantine-backoff-max") ?? "5m"),
    procfs: str("path.procfs") ?? "/proc",
    sysfs: str("path.sysfs") ?? "/sys",
    modules: str("path.modules") ?? "/lib/modules",
    modprobe: str("path.modprobe") ?? "/etc/modprobe.d",
    sourcesFile: str("sources"),
    commandPrefix,
    execInProcess,
    requireChecks,
    kubeletDir: kubeletDir(str("kubelet-dir") ?? "/var/lib/kubelet"),
    maxVolumes: positiveInt("max-volumes", str("max-volumes") ?? "1024", 1_000_000),
    statfsTimeoutMs: positiveDuration("statfs-timeout", str("statfs-timeout") ?? "5s"),
    probeReady,
    demo,
    upstream,
    gate,
    upstreamTimeoutCapMs: duration("upstream-timeout-cap", str("upstream-timeout-cap") ?? "2m"),
    logLevel,
  };
}

function kubeletDir(dir: string): string {
  if (!dir.startsWith("/") || dir.includes("\0")) throw new UsageError(`--kubelet-dir: expected an absolute path, got "${dir}"`);
  return dir;
}

/** --kubeconfig names one file; KUBECONFIG a list (':'-separated), merged as kubectl merges it. */
function kubeconfigPaths(flag: string | undefined, env: string | undefined): string[] | undefined {
  if (flag) return [flag];
  const list = [...new Set((env ?? "").split(path.delimiter).filter((f) => f !== ""))];
  return list.length > 0 ? list : undefined;
}

/**
 * Node reporting is on only with a node name and something to report: a pod
 * that merely has NODE_NAME in its environment changes nothing.
 */
function kubeSpec(
  values: Record<string, string | boolean | undefined>,
  str: (k: string) => string | undefined,
  env: NodeJS.ProcessEnv,
  mode: Mode,
): KubeReportingSpec | undefined {
  const condition = str("node-condition");
  const taintRaw = str("node-taint");
  const perCheck = values["node-condition-per-check"] === true;
  const storageCondition = str("node-storage-condition");
  const storageTaint = values["node-storage-taint"] === true;
  if (storageCondition !== undefined) {
    const problem = qualifiedNameProblem(storageCondition, true);
    if (problem) throw new UsageError(`--node-storage-condition: "${storageCondition}" ${problem}`);
    if (storageCondition === condition) throw new UsageError("--node-storage-condition: must differ from --node-condition");
  }
  const impersonate = values["impersonate-node"] === true;
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
  const modeRaw = str("node-taint-mode") ?? "bootstrap-only";
  if (modeRaw !== "bootstrap-only" && modeRaw !== "continuous") {
    throw new UsageError(`--node-taint-mode: expected bootstrap-only or continuous, got "${modeRaw}"`);
  }
  const waitRaw = str("node-taint-wait-csinode") ?? "true";
  if (waitRaw !== "true" && waitRaw !== "false") throw new UsageError(`--node-taint-wait-csinode: expected true or false, got "${waitRaw}"`);
  if (perCheck && condition === undefined) throw new UsageError("--node-condition-per-check: needs --node-condition");
  if (storageTaint && taintRaw === undefined) throw new UsageError("--node-storage-taint: needs --node-taint");
  const nodeName = str("node-name") ?? (env.NODE_NAME || undefined);
  const timings = {
    heartbeatMs: duration("node-heartbeat", str("node-heartbeat") ?? "5m"),
    backoffCapMs: duration("node-backoff-cap", str("node-backoff-cap") ?? "30s"),
    resyncMs: duration("node-resync", str("node-resync") ?? "5m"),
    writeIntervalMs: duration("node-write-interval", str("node-write-interval") ?? "10s"),
    requestTimeoutMs: 10_000,
  };
  if (timings.heartbeatMs < 1000) throw new UsageError("--node-heartbeat: must be at least 1s");
  if (timings.resyncMs < 1000) throw new UsageError("--node-resync: must be at least 1s");
  if (timings.backoffCapMs < 100) throw new UsageError("--node-backoff-cap: must be at least 100ms");
  if (condition === undefined && taint === undefined && storageCondition === undefined) {
    if (impersonate) throw new UsageError("--impersonate-node: needs --node-condition or --node-taint");
    return undefined;
  }
  const what = condition !== undefined ? "node-condition" : taint !== undefined ? "node-taint" : "node-storage-condition";
  if (!nodeName) throw new UsageError(`--${what}: needs --node-name (or NODE_NAME)`);
  const validName = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(nodeName) && nodeName.length <= 253;
  if (!validName) throw new UsageError(`--node-name: "${nodeName}" is not a valid node name (a lowercase DNS subdomain)`);
  if (mode !== "node") throw new UsageError("--node-condition/--node-taint: only in --mode node (the controller runs on no particular node)");
  return {
    nodeName,
    kubeconfig: kubeconfigPaths(str("kubeconfig"), env.KUBECONFIG),
    kubeContext: str("kube-context"),
    condition,
    conditionPerCheck: perCheck,
    ...(storageCondition !== undefined ? { storageCondition } : {}),
    ...(storageTaint ? { storageTaint } : {}),
    taint,
    taintMode: modeRaw as TaintMode,
    waitForCSINode: waitRaw === "true",
    impersonateNode: impersonate,
    timings,
  };
}
