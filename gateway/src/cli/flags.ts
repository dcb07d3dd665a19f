// Every flag, once: its help, its default (as one would type it) and the
// parser that turns it into the value Config holds. --help and docs/flags.md
// are generated from this list (npm run docs:flags; a test fails when the page
// is stale).
//
// Adding a flag: one entry below, in its group, with
//   flag({ group, name, arg, help, default: "30s", parse: duration })
// (a switch is flag({ group, name, type: "boolean", help })); read it in
// config.ts with flags.get("name") (parsed, its default when not given) or
// flags.optional("name") (undefined when not given and without a default).
// An entry without parse is a plain string. Then `npm run docs:flags`.
import type { ParseArgsConfig } from "node:util";
import { LOG_LEVELS } from "../observability/logger.js";
import { CAPABILITY_NAMES, driverNameProblem } from "../services/identity.js";
import { DEFAULT_EDGE_LIMITS } from "../transport/edge-limits.js";
import type { Endpoint } from "../transport/endpoint.js";
import {
  duration,
  durationAtLeast,
  endpoint,
  formatDuration,
  nonEmpty,
  oneOf,
  UsageError,
  wholeNumber,
  absolutePath,
  type FlagParser,
} from "./flag-types.js";

export const GROUPS = ["Serving", "Checks", "Gateway mode", "Kubernetes node", "Other"] as const;

/** One flag: its parseArgs shape, its help, its default and its parser. */
export interface FlagSpec<N extends string = string, T = unknown> {
  name: N;
  group: (typeof GROUPS)[number];
  type?: "string" | "boolean";
  multiple?: boolean;
  /** The value's placeholder in --help (`--name ARG`). */
  arg?: string;
  help: string;
  /** The value when the flag is not given, as one would type it; parsed like a given value. */
  default?: string;
  /** What --help says the default is when it is not one fixed value (it depends on other flags). */
  defaultText?: string;
  /** An environment variable read when the flag is not given (an empty one counts as unset). */
  env?: string;
  parse?: FlagParser<T>;
}

// NoInfer: the list's contextual type must not make T unknown for a flag without a parser.
function flag<const N extends string, T = string>(spec: FlagSpec<N, T>): FlagSpec<N, NoInfer<T>> {
  return spec;
}

/** A TCP listener: HOST:PORT, [IPV6]:PORT, or an unbracketed IPv6 address and its port. */
const tcpEndpoint: FlagParser<Endpoint> = (raw, name) => {
  const ep = endpoint(raw, name);
  if (ep.kind !== "tcp") throw new UsageError(`--${name}: must be HOST:PORT (TCP), got "${raw}"`);
  return ep;
};

const httpEndpoint: FlagParser<Endpoint | undefined> = (raw, name) => (raw === "off" ? undefined : tcpEndpoint(raw, name));

const driverName: FlagParser<string> = (raw, name) => {
  const problem = driverNameProblem(raw);
  if (problem) throw new UsageError(`--${name}: "${raw}" ${problem}`);
  return raw;
};

const capabilities: FlagParser<string[]> = (raw, name) => {
  const list = raw.split(",").map((s) => s.trim()).filter((s) => s !== "" && s !== "none");
  for (const c of list) {
    if (!(c in CAPABILITY_NAMES)) throw new UsageError(`--${name}: unknown capability "${c}" (known: ${Object.keys(CAPABILITY_NAMES).join(", ")})`);
  }
  return list;
};

const logLevel: FlagParser<(typeof LOG_LEVELS)[number]> = (raw, name) => {
  const level = LOG_LEVELS.find((l) => l === raw);
  if (!level) throw new UsageError(`--${name}: expected one of ${LOG_LEVELS.join(", ")}, got "${raw}"`);
  return level;
};

const edge = DEFAULT_EDGE_LIMITS;
const MAX_COUNT = 1_000_000;

/**
 * The shortest --check-interval. A round runs every check and the commands its
 * sources read (lnetctl, lctl: a fork and exec each, more with nsenter); kubelet
 * probes every 10 s by default and a Node condition is written at most every
 * --node-write-interval, so rounds faster than a second cost the node without
 * anyone seeing them sooner.
 */
export const CHECK_INTERVAL_FLOOR_MS = 1000;

/** Where --http-endpoint listens when not given: the node and the controller have their own ports. */
export const DEFAULT_HTTP_ENDPOINT = { node: "0.0.0.0:29763", controller: "0.0.0.0:29762" } as const;

export const FLAGS = [
  flag({ group: "Serving", name: "mode", arg: "node|controller", default: "node", parse: oneOf(["node", "controller"]),
    help: "Node mode runs the node checks; controller mode is ready as soon as it serves." }),
  flag({ group: "Serving", name: "csi-endpoint", arg: "ENDPOINT", default: "unix:///tmp/csi.sock", env: "CSI_ENDPOINT", parse: endpoint,
    help: "Endpoint for kubelet-side tools: unix:///path/csi.sock or tcp://HOST:PORT. gRPC over h2c, and HTTP/1.1 for /healthz, /livez, /readyz, Connect and gRPC-Web (curl --unix-socket). A stale socket is replaced; a live one is refused. With --upstream it carries the mount API (gRPC only), so a TCP address must be loopback." }),
  flag({ group: "Serving", name: "http-endpoint", arg: "HOST:PORT|off", defaultText: `${DEFAULT_HTTP_ENDPOINT.node} (node), ${DEFAULT_HTTP_ENDPOINT.controller} (controller)`, parse: httpEndpoint,
    help: "One TCP port for gRPC (h2c), gRPC-Web, Connect (HTTP/1.1 and h2c), /healthz, /livez, /readyz, and /metrics unless --metrics-endpoint is set. 'off' disables it. On a hostNetwork pod bind it to 127.0.0.1 (kubelet probes over loopback)." }),
  flag({ group: "Serving", name: "metrics-endpoint", arg: "HOST:PORT", parse: tcpEndpoint,
    help: "A listener for GET /metrics and nothing else (no Probe, health, /readyz or reflection), for where Prometheus scrapes; /metrics then leaves --http-endpoint. Takes HOST:PORT, [IPV6]:PORT or an unbracketed IPv6 address (as status.podIP gives it) followed by :PORT." }),
  flag({ group: "Serving", name: "readyz-detail-remote", type: "boolean",
    help: "Serve health detail (?verbose lines, Accept: application/json conditions) to clients beyond loopback and the unix socket; without it they get the plain answer." }),
  flag({ group: "Serving", name: "driver-name", arg: "NAME", default: "probegate.csi.io", parse: driverName,
    help: "CSI driver name for GetPluginInfo (domain-name notation, at most 63 characters)." }),
  flag({ group: "Serving", name: "driver-version", arg: "VERSION", defaultText: "the probegate version", parse: nonEmpty,
    help: "vendor_version for GetPluginInfo." }),
  flag({ group: "Serving", name: "capabilities", arg: "LIST", default: "none", parse: capabilities,
    help: "Comma-separated plugin capabilities to advertise: controller-service, volume-accessibility-constraints, group-controller-service, online-expansion, offline-expansion." }),
  flag({ group: "Serving", name: "max-request-bytes", arg: "BYTES", default: "4194304", parse: wholeNumber(64 * 1024 * 1024),
    help: "Largest request message forwarded to the upstream driver (gateway mode). Calls probegate answers itself (Identity, Health, reflection) accept at most 4096 bytes, a fixed limit. Larger ones are refused with RESOURCE_EXHAUSTED." }),
  flag({ group: "Serving", name: "max-connections", arg: "N", default: String(edge.maxConnections), parse: wholeNumber(MAX_COUNT),
    help: "Open connections per listener (the CSI endpoint, the HTTP port and the metrics port each). A new one over it closes the connection idle the longest (no call in progress, or none made yet); only when all are busy is it refused. Idle and header timeouts shrink as the table fills past half." }),
  flag({ group: "Serving", name: "max-connections-per-address", arg: "N", default: String(edge.maxConnectionsPerAddress), defaultText: `${edge.maxConnectionsPerAddress} (at most --max-connections)`, parse: wholeNumber(MAX_COUNT),
    help: "Open connections per listener from one remote address; over it, that address's own idle-longest connection is closed, or the new one refused. Loopback and the node's own addresses are not capped." }),
  flag({ group: "Serving", name: "max-streams-per-connection", arg: "N", default: String(edge.maxStreamsPerConnection), parse: wholeNumber(2 ** 31 - 1),
    help: "Concurrent HTTP/2 streams one connection may open; more are refused (REFUSED_STREAM)." }),
  flag({ group: "Serving", name: "max-inflight", arg: "N", default: String(edge.maxInflight), parse: wholeNumber(MAX_COUNT),
    help: "Calls and HTTP requests in progress on all listeners together; more get RESOURCE_EXHAUSTED (HTTP 503). The last quarter is kept for Probe, Health/Check, /healthz, /livez, /readyz and /metrics." }),
  flag({ group: "Serving", name: "max-watches", arg: "N", default: String(edge.maxWatches), parse: wholeNumber(MAX_COUNT),
    help: "Open Health/Watch streams on all listeners together; more get RESOURCE_EXHAUSTED." }),
  flag({ group: "Serving", name: "header-timeout", arg: "DURATION", default: formatDuration(edge.headerTimeoutMs), parse: durationAtLeast(1),
    help: "A new connection's first request must arrive within this (HTTP/1.1 headers begun: 408; nothing sent, or HTTP/2 with no stream: closed). Shrinks as the connection table fills." }),
  flag({ group: "Serving", name: "request-timeout", arg: "DURATION", default: formatDuration(edge.requestTimeoutMs), parse: durationAtLeast(1),
    help: "A request must arrive in full (body and half-close) within this; after it the call is answered (408, DEADLINE_EXCEEDED) and closed." }),
  flag({ group: "Serving", name: "idle-timeout", arg: "DURATION", default: formatDuration(edge.idleTimeoutMs), parse: durationAtLeast(1),
    help: "A connection with nothing in progress is closed after this (HTTP/2 GOAWAY); a quiet one with streams open is pinged, and cut without an answer. Shrinks as the connection table fills." }),
  flag({ group: "Serving", name: "shutdown-timeout", arg: "DURATION", default: "5s", parse: duration,
    help: "On SIGTERM/SIGINT, how long in-flight calls may take before connections are cut." }),
  flag({ group: "Checks", name: "plugins-dir", multiple: true, arg: "DIR", defaultText: "the bundled plugins (dist/plugins)",
    help: "Directory of .wasm check plugins and their NAME.yaml/NAME.json configurations; watched, changes apply within seconds (ConfigMap ..data swaps included). Repeatable: a plugin name in a later directory replaces the same name from an earlier one. Given at all, it replaces the bundled Lustre checks; to keep them, give their directory first (the image's /etc/probegate/plugins, as the shipped manifests do; docs/plugins-bundled.md)." }),
  flag({ group: "Checks", name: "plugins-lock", arg: "FILE",
    help: "A lock of module digests (probegate plugin lock DIR writes DIR/plugins.lock): from every --plugins-dir but the image's bundled one, only the .wasm and configuration files it lists, with the sha256 it lists, load; any other is refused (NotInLock, DigestMismatch) and a module already loaded from that file stays in force until the file loads or is removed. Watched like the directories; a lock that cannot be read, parsed or verified (LockInvalid, LockUnverified) lets nothing new load until a valid one replaces it." }),
  flag({ group: "Checks", name: "plugins-lock-key", arg: "PEM",
    help: "Public key (PEM, ECDSA P-256 or Ed25519) that must have signed the --plugins-lock: FILE.sig beside it, base64 or DER (cosign sign-blob --key, openssl dgst -sha256 -sign, probegate plugin lock --sign), verified offline; no, a bad or another key's signature is refused (LockUnverified). Another kind of key is a usage error." }),
  flag({ group: "Checks", name: "check-interval", arg: "DURATION", default: "5s", parse: durationAtLeast(CHECK_INTERVAL_FLOOR_MS, "each round runs every check and its commands"),
    help: `How often checks are re-evaluated; at least ${formatDuration(CHECK_INTERVAL_FLOOR_MS)}. Probe never waits for them.` }),
  flag({ group: "Checks", name: "health-interval", arg: "DURATION", default: "30s", parse: durationAtLeast(CHECK_INTERVAL_FLOOR_MS, "storage health checks run their commands too"),
    help: "How often storage and volume health checks (probe storage and volume) are re-evaluated, in the rounds of --check-interval; Lustre's own pings notice a lost server on this scale. A change of readiness brings their next evaluation forward, and a volume newly staged or published is evaluated at once." }),
  flag({ group: "Checks", name: "plugin-timeout", arg: "DURATION", default: "500ms", parse: duration,
    help: "Deadline for one plugin call; a plugin that overruns fails with PluginTimeout." }),
  flag({ group: "Checks", name: "plugin-memory", arg: "MiB", default: "16", parse: wholeNumber(1024),
    help: "Memory cap of one plugin instance; a plugin that runs into it fails with PluginMemoryLimit." }),
  flag({ group: "Checks", name: "quarantine-after", arg: "N", default: "3", parse: wholeNumber(1000),
    help: "Consecutive faults (timeout, trap, bad output) after which a plugin is quarantined: it is retried with backoff, and released by one good verdict or a change of its file." }),
  flag({ group: "Checks", name: "quarantine-backoff", arg: "DURATION", default: "30s", parse: durationAtLeast(100),
    help: "First retry of a quarantined plugin after this long; doubles after each failed retry." }),
  flag({ group: "Checks", name: "quarantine-backoff-max", arg: "DURATION", default: "5m", parse: duration,
    help: "Longest wait between retries of a quarantined plugin." }),
  flag({ group: "Checks", name: "path.procfs", arg: "DIR", default: "/proc",
    help: "Where procfs is mounted (the host's, in a container)." }),
  flag({ group: "Checks", name: "path.sysfs", arg: "DIR", default: "/sys",
    help: "Where sysfs is mounted (the host's, in a container)." }),
  flag({ group: "Checks", name: "path.modules", arg: "DIR", default: "/lib/modules",
    help: "The host's kernel modules tree: checks configured with lnetConfiguredAt: mount look for the Lustre modules in DIR/<running kernel>/modules.dep." }),
  flag({ group: "Checks", name: "path.modprobe", arg: "DIR", default: "/etc/modprobe.d",
    help: "The host's modprobe configuration: checks configured with lnetConfiguredAt: mount read the options lnet lines of its *.conf files." }),
  flag({ group: "Checks", name: "sources", arg: "FILE",
    help: "YAML list of extra sources plugins may read: commands (name, argv, timeout, ttl) or read-only files (name, sysfs: GLOB or procfs: GLOB). Watched: a valid edit applies within seconds, a bad one keeps the last good set. No shell is ever used." }),
  flag({ group: "Checks", name: "command-prefix", arg: "\"PROG ARGS...\"",
    help: "Prepended to every source command, split on whitespace (e.g. \"nsenter --target 1 --mount --net --\" to run the host's lnetctl)." }),
  flag({ group: "Checks", name: "exec-in-process", arg: "NAME",
    help: "Run every source command in the mount namespace of the newest process named NAME (found under --path.procfs, found again after it restarts), e.g. the CSI driver that installed lnetctl in its own container. Needs nsenter and CAP_SYS_ADMIN; excludes --command-prefix." }),
  flag({ group: "Checks", name: "require-checks", arg: "NAME,...",
    help: "Checks that must be loaded: a missing or refused one fails readiness with CheckMissing. (In node mode, no readiness check at all always fails with NoChecks.)" }),
  flag({ group: "Checks", name: "kubelet-dir", arg: "DIR", default: "/var/lib/kubelet", parse: absolutePath,
    help: "The kubelet's root directory as the mount table shows it: after a restart, Lustre volumes mounted under DIR/pods/*/volumes/kubernetes.io~csi/*/mount and DIR/plugins/kubernetes.io/csi/*/*/globalmount are evaluated again (their volume ids from the vol_data.json beside them)." }),
  flag({ group: "Checks", name: "max-volumes", arg: "N", default: "1024", parse: wholeNumber(1_000_000),
    help: "Volumes whose health is evaluated at most; past it a new volume is refused (counted in probegate_volumes_refused_total) and the known ones keep being evaluated." }),
  flag({ group: "Checks", name: "statfs-timeout", arg: "DURATION", default: "5s", parse: durationAtLeast(1),
    help: "A volume's statfs (stat -f in a child process, run like lnetctl) still running after this is reported hung (the paths due together share one stat; past this, each is probed on its own, so a hang shows within twice this). A path's own probe is not started again while it runs: at most one per mount path, however long the hang." }),
  flag({ group: "Checks", name: "server-ping-interval", arg: "DURATION", default: "30s", parse: durationAtLeast(1000),
    help: "Each NID of the Lustre servers the mounted file systems use (MGS from the mount sources, MDS/OSS from the imports; source lnet.server_pings) and of lnet-self-ping's peers: is pinged (lnetctl ping, run like lnetctl) at most once per this long (less a tenth, at most 2 s, so that storage rounds at the same cadence do not skip every other ping); its last answer is what the checks see until then. At most one ping per NID is ever outstanding." }),
  flag({ group: "Checks", name: "command-spawner", arg: "on|off", default: "on", parse: oneOf(["on", "off"]),
    help: "on: source commands (lnetctl, lctl, --sources commands) are started by a small resident helper (dist/native/probegate-spawner, started once at startup) with posix_spawn, instead of a fork of the gateway each (1-3 ms of gateway CPU per command). Same argv, environment, limits and results either way; when the helper is not built or keeps failing, the gateway starts them itself, logs it once and shows probegate_command_spawner_state{state=\"fallback\"}." }),
  flag({ group: "Checks", name: "demo", arg: "auto|off|SCENARIO", default: "off",
    help: "Serve a built-in demo node (fake lnetctl/lctl, procfs and sysfs). 'auto' uses it only when lnetctl is not on PATH. Scenarios: healthy, ni-down, lnet-down." }),
  flag({ group: "Gateway mode", name: "upstream", arg: "ENDPOINT", parse: endpoint,
    help: "Put probegate in front of an existing CSI driver's socket: forward Node/Controller calls, combine Probe, gate mounts. NodeGetCapabilities gains GET_VOLUME_HEALTH/GET_STORAGE_HEALTH (and the legacy VOLUME_CONDITION, whose volume_condition is set on NodeGetVolumeStats for kubelets 1.21-1.36) while those checks are loaded; a driver with its own health RPCs is asked too and its entries merged (see docs/health.md)." }),
  flag({ group: "Gateway mode", name: "gate", arg: "LIST", defaultText: "node-stage,node-publish (with --upstream)",
    help: "Calls refused with UNAVAILABLE while the node is not ready; 'none' disables gating." }),
  flag({ group: "Gateway mode", name: "probe-ready", arg: "upstream|startup|readiness", defaultText: "upstream (with --upstream), readiness (without)", parse: oneOf(["upstream", "startup", "readiness"]),
    help: "What Probe's ready field follows. upstream: the driver's own answer; only probegate's liveness checks can fail Probe, so a readiness loss never restarts the driver (it shows in /readyz and gating). startup: ready:false until the readiness checks have passed once. readiness: the readiness checks, always." }),
  flag({ group: "Gateway mode", name: "upstream-timeout-cap", arg: "DURATION", default: "2m", parse: duration,
    help: "Longest deadline passed on to the upstream driver." }),
  flag({ group: "Gateway mode", name: "operation-stuck-after", arg: "DURATION", default: "5m", parse: durationAtLeast(1),
    help: "A forwarded NodeStage/Unstage/Publish/Unpublish/ExpandVolume whose attempts have not succeeded this long after the first one is stuck: the volume's NodeGetVolumeHealth says INACCESSIBLE (UnpublishStuck, UnstageStuck, ...), the node's storage health STORAGE_DEGRADED (VolumeOperationsStuck), and probegate_volume_operations_stuck counts it. Never part of readiness or Probe. Node mode sees no operations (no driver behind it): harmless there." }),
  flag({ group: "Gateway mode", name: "unstick", arg: "off|unmount", default: "off", parse: oneOf(["off", "unmount"]),
    help: "unmount: for a stuck NodeUnpublishVolume/NodeUnstageVolume whose path is a Lustre mount under --kubelet-dir, run `umount -f PATH` and, if still mounted, `umount -l PATH` (each bounded, one at a time per path, once per path per --unstick-after, at most 8 paths node-wide per --unstick-after), so the driver's own blocked umount returns and the kubelet's next retry completes. Open files on that mount get EIO (docs/health.md). off: nothing is ever unmounted by probegate." }),
  flag({ group: "Gateway mode", name: "unstick-after", arg: "DURATION", default: "10m", parse: durationAtLeast(1),
    help: "With --unstick=unmount: how long after its first attempt a stuck unmount is ended, and the least time between two escalations of one path." }),
  flag({ group: "Kubernetes node", name: "node-name", arg: "NAME", env: "NODE_NAME",
    help: "This node's name. With --node-condition, --node-taint, --node-storage-condition and/or --node-operations-condition, probegate reports its verdict on the Node object; given without any of them, it is refused (nothing to report)." }),
  flag({ group: "Kubernetes node", name: "kubeconfig", arg: "FILE", defaultText: "the pod's service account (in-cluster)", env: "KUBECONFIG",
    help: "Kubeconfig file for node reporting (refused without --node-condition, --node-taint, --node-storage-condition or --node-operations-condition). KUBECONFIG may list several files (':'-separated), merged as kubectl merges them." }),
  flag({ group: "Kubernetes node", name: "kube-context", arg: "NAME", defaultText: "the kubeconfig's current-context",
    help: "Kubeconfig context to use for node reporting." }),
  flag({ group: "Kubernetes node", name: "node-condition", arg: "TYPE",
    help: "Node condition to keep: a qualified name such as lustre.csi.example.com/NodeReady. True when ready, False when not ready or not live, Unknown until the first check round." }),
  flag({ group: "Kubernetes node", name: "node-condition-per-check", type: "boolean",
    help: "Also one condition per check, type <domain of --node-condition>/<check name>." }),
  flag({ group: "Kubernetes node", name: "node-storage-condition", arg: "TYPE",
    help: "Off by default. A second Node condition from the storage health checks (e.g. lustre.csi.example.com/StorageReachable): False while a file system is STORAGE_UNREACHABLE, True otherwise (degraded ones named in the message), Unknown until the first round. Never part of the readiness verdict or Probe." }),
  flag({ group: "Kubernetes node", name: "node-operations-condition", arg: "TYPE",
    help: "Off by default. A Node condition from stuck volume operations (gateway mode, --operation-stuck-after; e.g. lustre.csi.example.com/NoStuckVolumeOperations): False (reason VolumeOperationsStuck) while any mount or unmount is stuck, True otherwise, so an operator or the Node Readiness Controller can cordon or drain the node. Never part of the readiness verdict or Probe. Node mode sees no operations: always True there." }),
  flag({ group: "Kubernetes node", name: "node-storage-taint", type: "boolean",
    help: "Off by default. --node-taint also follows storage health: a STORAGE_UNREACHABLE entry counts as not ready for the taint (continuous mode adds it; bootstrap-only mode keeps it until storage is reachable), never for Probe or the readiness condition." }),
  flag({ group: "Kubernetes node", name: "node-heartbeat", arg: "DURATION", default: "5m", parse: durationAtLeast(1000),
    help: "Unchanged conditions are re-sent (lastHeartbeatTime) this often; otherwise a condition is written only when it changes." }),
  flag({ group: "Kubernetes node", name: "node-taint", arg: "KEY[=VALUE]:EFFECT",
    help: "Taint to manage (kubectl's syntax), per --node-taint-mode. No other taint is ever touched." }),
  flag({ group: "Kubernetes node", name: "node-taint-mode", arg: "bootstrap-only|continuous", default: "bootstrap-only", parse: oneOf(["bootstrap-only", "continuous"]),
    help: "bootstrap-only: remove the taint whenever the node is ready (again if something re-adds it), never add it. continuous: add it while not ready, remove it when ready." }),
  flag({ group: "Kubernetes node", name: "node-taint-wait-csinode", arg: "true|false", default: "true", parse: oneOf(["true", "false"]),
    help: "Remove the taint only once the node's CSINode lists the driver name probegate serves in GetPluginInfo (--driver-name; in gateway mode the driver's own once it has answered)." }),
  flag({ group: "Kubernetes node", name: "impersonate-node", type: "boolean",
    help: "Read the Node and write its status as system:node:<name> (constrained impersonation); taints and Events stay with the service account (NodeRestriction forbids a node to change its taints)." }),
  flag({ group: "Kubernetes node", name: "node-backoff-cap", arg: "DURATION", default: "30s", parse: durationAtLeast(100),
    help: "Longest wait between retries after API server errors, timeouts and refused connections (jittered). 429 waits as Retry-After says." }),
  flag({ group: "Kubernetes node", name: "node-resync", arg: "DURATION", default: "5m", parse: durationAtLeast(1000),
    help: "The Node is watched; the watch is renewed this often, and while it cannot run the Node is re-read this often." }),
  flag({ group: "Kubernetes node", name: "node-write-interval", arg: "DURATION", default: "10s", parse: duration,
    help: "Rate limit of Node writes: bursts of 5, then one per interval (a flapping check cannot flood the API server)." }),
  flag({ group: "Other", name: "log-level", arg: "LEVEL", default: "info", parse: logLevel,
    help: "trace, debug, info, warn, error, fatal or silent. Logs are JSON on stderr." }),
  flag({ group: "Other", name: "help", type: "boolean", help: "Show this help." }),
  flag({ group: "Other", name: "version", type: "boolean", help: "Print the version." }),
] satisfies readonly FlagSpec<string, unknown>[];

type AnyFlag = (typeof FLAGS)[number];
export type FlagName = AnyFlag["name"];
/** The parsed value of a flag (a string for one without a parser). */
export type FlagValue<N extends FlagName> = Extract<AnyFlag, { name: N }> extends FlagSpec<N, infer T> ? T : never;

const BY_NAME: ReadonlyMap<string, FlagSpec> = new Map(FLAGS.map((f) => [f.name, f as FlagSpec]));

export function flagSpec(name: string): FlagSpec | undefined {
  return BY_NAME.get(name);
}

export function parseArgsOptions(): NonNullable<ParseArgsConfig["options"]> {
  const options: NonNullable<ParseArgsConfig["options"]> = {};
  for (const f of FLAGS as readonly FlagSpec[]) options[f.name] = f.multiple ? { type: f.type ?? "string", multiple: true } : { type: f.type ?? "string" };
  options.help.short = "h";
  return options;
}

/**
 * The flags of one command line, read through their specs: a value given, else
 * its environment variable, else its default, each parsed by the flag's parser.
 */
export class FlagValues {
  constructor(
    private readonly values: Record<string, string | boolean | string[] | undefined>,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  /** Given on the command line. */
  given(name: FlagName): boolean {
    return this.values[name] !== undefined;
  }

  /** The text given (or from its environment variable); undefined when neither. */
  raw(name: FlagName): string | undefined {
    const v = this.values[name];
    if (typeof v === "string") return v;
    const env = BY_NAME.get(name)?.env;
    return env && this.env[env] ? this.env[env] : undefined;
  }

  /** A text parsed as the flag's value would be (a default that depends on other flags). */
  parse<N extends FlagName>(name: N, raw: string): FlagValue<N> {
    const spec = BY_NAME.get(name)!;
    return (spec.parse ? spec.parse(raw, name) : raw) as FlagValue<N>;
  }

  /** The parsed value, or undefined when it is not given and has no default. */
  optional<N extends FlagName>(name: N): FlagValue<N> | undefined {
    const raw = this.raw(name) ?? BY_NAME.get(name)!.default;
    return raw === undefined ? undefined : this.parse(name, raw);
  }

  /** The parsed value of a flag that has a default. */
  get<N extends FlagName>(name: N): FlagValue<N> {
    const v = this.optional(name);
    if (v === undefined && BY_NAME.get(name)!.default === undefined) throw new Error(`flag --${name} has no default; read it with optional()`);
    return v as FlagValue<N>;
  }

  /** Every value of a repeatable flag, in order. */
  list(name: FlagName): string[] {
    const v = this.values[name];
    return Array.isArray(v) ? v : typeof v === "string" ? [v] : [];
  }

  /** A switch. */
  on(name: FlagName): boolean {
    return this.values[name] === true;
  }
}

/** What the reference and --help say a flag defaults to. */
function defaultOf(f: FlagSpec): string | undefined {
  return f.defaultText ?? f.default;
}

export function helpText(version: string): string {
  const out: string[] = [
    `probegate ${version}: a CSI Probe gateway with sandboxed WebAssembly check plugins`,
    "",
    "Usage:",
    "  probegate [flags]                  serve csi.v1.Identity, grpc.health.v1 and reflection",
    "  probegate plugin new NAME [--dir DIR] [--lang LANG]        create a standalone check plugin project (assemblyscript|rust|c)",
    "  probegate plugin test PLUGIN.wasm --fixtures PATH...       run a plugin's fixture files (or --source NAME=FILE ...)",
    "  probegate plugin inspect PLUGIN.wasm                       show a plugin and whether it would load",
    "  probegate plugin lock DIR [--sign KEY.pem]                 write DIR/plugins.lock (sha256 of each module and configuration; --plugins-lock)",
    "  probegate plugin pack DIR --output FILE                    write DIR as a reproducible OCI image archive (oci-archive) to push and mount",
    "",
    "Flags take --name=value or --name value; switches take no value.",
  ];
  for (const group of GROUPS) {
    out.push("", `${group}:`);
    for (const f of (FLAGS as readonly FlagSpec[]).filter((x) => x.group === group)) {
      out.push(`  --${f.name}${f.arg ? ` ${f.arg}` : ""}`);
      out.push(`      ${f.help}`);
      const def = defaultOf(f);
      const extra = [def ? `default: ${def}` : "", f.env ? `env: ${f.env}` : ""].filter(Boolean).join("; ");
      if (extra) out.push(`      (${extra})`);
    }
  }
  out.push("", "Exit codes: 0 clean shutdown, 1 runtime failure (e.g. port or socket in use), 2 bad flags.", "");
  return out.join("\n");
}

const cell = (s: string) => s.replace(/\|/g, "\\|");

/** docs/flags.md: the same specs as --help, as a page. */
export function flagsMarkdown(): string {
  const out: string[] = [
    "<!-- GENERATED from gateway/src/cli/flags.ts by `npm run docs:flags`; edit the flag specs, not this page. -->",
    "# probegate flags",
    "",
    "Every flag of `probegate` (the serving command), as `probegate --help` prints them. Flags take",
    "`--name=value` or `--name value`; switches (no value column) take no value. A bad flag exits 2 with one",
    "line naming it.",
  ];
  for (const group of GROUPS) {
    out.push("", `## ${group}`, "", "| flag | default | env | what it does |", "|---|---|---|---|");
    for (const f of (FLAGS as readonly FlagSpec[]).filter((x) => x.group === group)) {
      const name = `\`--${f.name}${f.arg ? ` ${f.arg}` : ""}\``;
      const def = defaultOf(f);
      out.push(`| ${cell(name)} | ${def ? cell(def) : ""} | ${f.env ? `\`${f.env}\`` : ""} | ${cell(f.help)} |`);
    }
  }
  out.push("");
  return out.join("\n");
}
