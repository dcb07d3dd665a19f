import type { ParseArgsConfig } from "node:util";

/** One flag: its parseArgs shape, its help line, and its default as shown in --help. */
export interface FlagSpec {
  name: string;
  type: "string" | "boolean";
  multiple?: boolean;
  arg?: string;
  help: string;
  default?: string;
  env?: string;
  group: "Serving" | "Checks" | "Gateway mode" | "Kubernetes node" | "Other";
}

export const FLAGS: readonly FlagSpec[] = [
  { group: "Serving", name: "mode", type: "string", arg: "node|controller", default: "node", env: "AZURELUSTRE_CSI_INSTALL_LUSTRE_CLIENT=yes|no",
    help: "Node mode runs the node checks; controller mode is ready as soon as it serves." },
  { group: "Serving", name: "csi-endpoint", type: "string", arg: "ENDPOINT", default: "unix:///tmp/csi.sock", env: "CSI_ENDPOINT",
    help: "gRPC (h2c) endpoint for kubelet-side tools: unix:///path/csi.sock or tcp://HOST:PORT. A stale socket is replaced; a live one is refused. With --upstream it carries the mount API, so a TCP address must be loopback. Only here (never on --http-endpoint): NodeGetStorageHealth and NodeGetVolumeHealth (CSI 1.13) while storage/volume checks are loaded, answered from the last evaluation; without --upstream also NodeGetCapabilities (just those two)." },
  { group: "Serving", name: "http-endpoint", type: "string", arg: "HOST:PORT|off", default: "0.0.0.0:29763 (node), 0.0.0.0:29762 (controller)",
    help: "One TCP port for gRPC (h2c), gRPC-Web, Connect (HTTP/1.1 and h2c), /healthz, /livez, /readyz, and /metrics unless --metrics-endpoint is set. 'off' disables it. On a hostNetwork pod bind it to 127.0.0.1 (kubelet probes over loopback)." },
  { group: "Serving", name: "metrics-endpoint", type: "string", arg: "HOST:PORT",
    help: "A listener for GET /metrics and nothing else (no Probe, health, /readyz or reflection), for where Prometheus scrapes; /metrics then leaves --http-endpoint. Takes HOST:PORT, [IPV6]:PORT or an unbracketed IPv6 address (as status.podIP gives it) followed by :PORT." },
  { group: "Serving", name: "readyz-detail-remote", type: "boolean",
    help: "Serve health detail (?verbose lines, Accept: application/json conditions) to clients beyond loopback and the unix socket; without it they get the plain answer." },
  { group: "Serving", name: "driver-name", type: "string", arg: "NAME", default: "probegate.csi.io",
    help: "CSI driver name for GetPluginInfo (domain-name notation, at most 63 characters)." },
  { group: "Serving", name: "driver-version", type: "string", arg: "VERSION", default: "the probegate version",
    help: "vendor_version for GetPluginInfo." },
  { group: "Serving", name: "capabilities", type: "string", arg: "LIST", default: "none",
    help: "Comma-separated plugin capabilities to advertise: controller-service, volume-accessibility-constraints, group-controller-service, online-expansion, offline-expansion." },
  { group: "Serving", name: "max-request-bytes", type: "string", arg: "BYTES", default: "4194304",
    help: "Largest request message forwarded to the upstream driver (gateway mode). Calls probegate answers itself (Identity, Health, reflection) accept at most 4096 bytes. Larger ones are refused with RESOURCE_EXHAUSTED." },
  { group: "Serving", name: "max-connections", type: "string", arg: "N", default: "256",
    help: "Open connections per listener (the CSI endpoint, the HTTP port and the metrics port each). A new one over it closes the connection idle the longest (no call in progress, or none made yet); only when all are busy is it refused. Idle and header timeouts shrink as the table fills past half." },
  { group: "Serving", name: "max-connections-per-address", type: "string", arg: "N", default: "64 (at most --max-connections)",
    help: "Open connections per listener from one remote address; over it, that address's own idle-longest connection is closed, or the new one refused. Loopback and the node's own addresses are not capped." },
  { group: "Serving", name: "max-streams-per-connection", type: "string", arg: "N", default: "100",
    help: "Concurrent HTTP/2 streams one connection may open; more are refused (REFUSED_STREAM)." },
  { group: "Serving", name: "max-inflight", type: "string", arg: "N", default: "256",
    help: "Calls and HTTP requests in progress on all listeners together; more get RESOURCE_EXHAUSTED (HTTP 503). The last quarter is kept for Probe, Health/Check, /healthz, /livez, /readyz and /metrics." },
  { group: "Serving", name: "max-watches", type: "string", arg: "N", default: "64",
    help: "Open Health/Watch streams on all listeners together; more get RESOURCE_EXHAUSTED." },
  { group: "Serving", name: "header-timeout", type: "string", arg: "DURATION", default: "10s",
    help: "A new connection's first request must arrive within this (HTTP/1.1 headers begun: 408; nothing sent, or HTTP/2 with no stream: closed). Shrinks as the connection table fills." },
  { group: "Serving", name: "request-timeout", type: "string", arg: "DURATION", default: "10s",
    help: "A request must arrive in full (body and half-close) within this; after it the call is answered (408, DEADLINE_EXCEEDED) and closed." },
  { group: "Serving", name: "idle-timeout", type: "string", arg: "DURATION", default: "30s",
    help: "A connection with nothing in progress is closed after this (HTTP/2 GOAWAY); a quiet one with streams open is pinged, and cut without an answer. Shrinks as the connection table fills." },
  { group: "Serving", name: "shutdown-timeout", type: "string", arg: "DURATION", default: "5s",
    help: "On SIGTERM/SIGINT, how long in-flight calls may take before connections are cut." },
  { group: "Checks", name: "plugins-dir", type: "string", multiple: true, arg: "DIR", default: "the bundled plugins (dist/plugins)",
    help: "Directory of .wasm check plugins and their NAME.yaml/NAME.json configurations; watched, changes apply within seconds (ConfigMap ..data swaps included). Repeatable: a plugin name in a later directory replaces the same name from an earlier one." },
  { group: "Checks", name: "check-interval", type: "string", arg: "DURATION", default: "5s",
    help: "How often checks are re-evaluated. Probe never waits for them." },
  { group: "Checks", name: "plugin-timeout", type: "string", arg: "DURATION", default: "500ms",
    help: "Deadline for one plugin call; a plugin that overruns fails with PluginTimeout." },
  { group: "Checks", name: "plugin-memory", type: "string", arg: "MiB", default: "16",
    help: "Memory cap of one plugin instance; a plugin that runs into it fails with PluginMemoryLimit." },
  { group: "Checks", name: "quarantine-after", type: "string", arg: "N", default: "3",
    help: "Consecutive faults (timeout, trap, bad output) after which a plugin is quarantined: it is retried with backoff, and released by one good verdict or a change of its file." },
  { group: "Checks", name: "quarantine-backoff", type: "string", arg: "DURATION", default: "30s",
    help: "First retry of a quarantined plugin after this long; doubles after each failed retry." },
  { group: "Checks", name: "quarantine-backoff-max", type: "string", arg: "DURATION", default: "5m",
    help: "Longest wait between retries of a quarantined plugin." },
  { group: "Checks", name: "path.procfs", type: "string", arg: "DIR", default: "/proc",
    help: "Where procfs is mounted (the host's, in a container)." },
  { group: "Checks", name: "path.sysfs", type: "string", arg: "DIR", default: "/sys",
    help: "Where sysfs is mounted (the host's, in a container)." },
  { group: "Checks", name: "path.modules", type: "string", arg: "DIR", default: "/lib/modules",
    help: "The host's kernel modules tree: checks configured with lnetConfiguredAt: mount look for the Lustre modules in DIR/<running kernel>/modules.dep." },
  { group: "Checks", name: "path.modprobe", type: "string", arg: "DIR", default: "/etc/modprobe.d",
    help: "The host's modprobe configuration: checks configured with lnetConfiguredAt: mount read the options lnet lines of its *.conf files." },
  { group: "Checks", name: "sources", type: "string", arg: "FILE",
    help: "YAML list of extra sources plugins may read: commands (name, argv, timeout, ttl) or read-only files (name, sysfs: GLOB or procfs: GLOB). Watched: a valid edit applies within seconds, a bad one keeps the last good set. No shell is ever used." },
  { group: "Checks", name: "command-prefix", type: "string", arg: "\"PROG ARGS...\"",
    help: "Prepended to every source command, split on whitespace (e.g. \"nsenter --target 1 --mount --net --\" to run the host's lnetctl)." },
  { group: "Checks", name: "exec-in-process", type: "string", arg: "NAME",
    help: "Run every source command in the mount namespace of the newest process named NAME (found under --path.procfs, found again after it restarts), e.g. the CSI driver that installed lnetctl in its own container. Needs nsenter and CAP_SYS_ADMIN; excludes --command-prefix." },
  { group: "Checks", name: "require-checks", type: "string", arg: "NAME,...",
    help: "Checks that must be loaded: a missing or refused one fails readiness with CheckMissing. (In node mode, no readiness check at all always fails with NoChecks.)" },
  { group: "Checks", name: "kubelet-dir", type: "string", arg: "DIR", default: "/var/lib/kubelet",
    help: "The kubelet's root directory as the mount table shows it: after a restart, Lustre volumes mounted under DIR/pods/*/volumes/kubernetes.io~csi/*/mount and DIR/plugins/kubernetes.io/csi/*/*/globalmount are evaluated again (their volume ids from the vol_data.json beside them)." },
  { group: "Checks", name: "max-volumes", type: "string", arg: "N", default: "1024",
    help: "Volumes whose health is evaluated at most; past it a new volume is refused (counted in probegate_volumes_refused_total) and the known ones keep being evaluated." },
  { group: "Checks", name: "statfs-timeout", type: "string", arg: "DURATION", default: "5s",
    help: "A volume's statfs (stat -f in a child process, run like lnetctl) still running after this is reported hung. It is not started again while it runs: at most one per mount path, however long the hang." },
  { group: "Checks", name: "demo", type: "string", arg: "auto|off|SCENARIO", default: "off",
    help: "Serve a built-in demo node (fake lnetctl/lctl, procfs and sysfs). 'auto' uses it only when lnetctl is not on PATH. Scenarios: healthy, ni-down, lnet-down." },
  { group: "Gateway mode", name: "upstream", type: "string", arg: "ENDPOINT",
    help: "Put probegate in front of an existing CSI driver's socket: forward Node/Controller calls, combine Probe, gate mounts. NodeGetCapabilities gains GET_VOLUME_HEALTH/GET_STORAGE_HEALTH (and the legacy VOLUME_CONDITION, whose volume_condition is set on NodeGetVolumeStats for kubelets 1.21-1.36) while those checks are loaded; a driver with its own health RPCs is asked too and its entries merged (see docs/health.md)." },
  { group: "Gateway mode", name: "gate", type: "string", arg: "LIST", default: "node-stage,node-publish (with --upstream)",
    help: "Calls refused with UNAVAILABLE while the node is not ready; 'none' disables gating." },
  { group: "Gateway mode", name: "probe-ready", type: "string", arg: "upstream|startup|readiness", default: "upstream (with --upstream), readiness (without)",
    help: "What Probe's ready field follows. upstream: the driver's own answer; only probegate's liveness checks can fail Probe, so a readiness loss never restarts the driver (it shows in /readyz and gating). startup: ready:false until the readiness checks have passed once. readiness: the readiness checks, always." },
  { group: "Gateway mode", name: "upstream-timeout-cap", type: "string", arg: "DURATION", default: "2m",
    help: "Longest deadline passed on to the upstream driver." },
  { group: "Kubernetes node", name: "node-name", type: "string", arg: "NAME", env: "NODE_NAME",
    help: "This node's name. With --node-condition, --node-taint and/or --node-storage-condition, probegate reports its verdict on the Node object (off otherwise)." },
  { group: "Kubernetes node", name: "kubeconfig", type: "string", arg: "FILE", default: "the pod's service account (in-cluster)", env: "KUBECONFIG",
    help: "Kubeconfig file for node reporting. KUBECONFIG may list several files (':'-separated), merged as kubectl merges them." },
  { group: "Kubernetes node", name: "kube-context", type: "string", arg: "NAME", default: "the kubeconfig's current-context",
    help: "Kubeconfig context to use for node reporting." },
  { group: "Kubernetes node", name: "node-condition", type: "string", arg: "TYPE",
    help: "Node condition to keep: a qualified name such as lustre.csi.example.com/NodeReady. True when ready, False when not ready or not live, Unknown until the first check round." },
  { group: "Kubernetes node", name: "node-condition-per-check", type: "boolean",
    help: "Also one condition per check, type <domain of --node-condition>/<check name>." },
  { group: "Kubernetes node", name: "node-storage-condition", type: "string", arg: "TYPE",
    help: "Off by default. A second Node condition from the storage health checks (e.g. lustre.csi.example.com/StorageReachable): False while a file system is STORAGE_UNREACHABLE, True otherwise (degraded ones named in the message), Unknown until the first round. Never part of the readiness verdict or Probe." },
  { group: "Kubernetes node", name: "node-storage-taint", type: "boolean",
    help: "Off by default. --node-taint also follows storage health: a STORAGE_UNREACHABLE entry counts as not ready for the taint (continuous mode adds it; bootstrap-only mode keeps it until storage is reachable), never for Probe or the readiness condition." },
  { group: "Kubernetes node", name: "node-heartbeat", type: "string", arg: "DURATION", default: "5m",
    help: "Unchanged conditions are re-sent (lastHeartbeatTime) this often; otherwise a condition is written only when it changes." },
  { group: "Kubernetes node", name: "node-taint", type: "string", arg: "KEY[=VALUE]:EFFECT",
    help: "Taint to manage (kubectl's syntax), per --node-taint-mode. No other taint is ever touched." },
  { group: "Kubernetes node", name: "node-taint-mode", type: "string", arg: "bootstrap-only|continuous", default: "bootstrap-only",
    help: "bootstrap-only: remove the taint whenever the node is ready (again if something re-adds it), never add it. continuous: add it while not ready, remove it when ready." },
  { group: "Kubernetes node", name: "node-taint-wait-csinode", type: "string", arg: "true|false", default: "true",
    help: "Remove the taint only once the node's CSINode lists the driver name probegate serves in GetPluginInfo (--driver-name; in gateway mode the driver's own once it has answered)." },
  { group: "Kubernetes node", name: "impersonate-node", type: "boolean",
    help: "Read the Node and write its status as system:node:<name> (constrained impersonation); taints and Events stay with the service account (NodeRestriction forbids a node to change its taints)." },
  { group: "Kubernetes node", name: "node-backoff-cap", type: "string", arg: "DURATION", default: "30s",
    help: "Longest wait between retries after API server errors, timeouts and refused connections (jittered). 429 waits as Retry-After says." },
  { group: "Kubernetes node", name: "node-resync", type: "string", arg: "DURATION", default: "5m",
    help: "The Node is watched; the watch is renewed this often, and while it cannot run the Node is re-read this often." },
  { group: "Kubernetes node", name: "node-write-interval", type: "string", arg: "DURATION", default: "10s",
    help: "Rate limit of Node writes: bursts of 5, then one per interval (a flapping check cannot flood the API server)." },
  { group: "Other", name: "log-level", type: "string", arg: "LEVEL", default: "info",
    help: "trace, debug, info, warn, error, fatal or silent. Logs are JSON on stderr." },
  { group: "Other", name: "help", type: "boolean", help: "Show this help." },
  { group: "Other", name: "version", type: "boolean", help: "Print the version." },
];

export function parseArgsOptions(): NonNullable<ParseArgsConfig["options"]> {
  const options: NonNullable<ParseArgsConfig["options"]> = {};
  for (const f of FLAGS) options[f.name] = f.multiple ? { type: f.type, multiple: true } : { type: f.type };
  options.help.short = "h";
  return options;
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
    "",
    "Flags take --name=value or --name value.",
  ];
  for (const group of ["Serving", "Checks", "Gateway mode", "Kubernetes node", "Other"] as const) {
    out.push("", `${group}:`);
    for (const f of FLAGS.filter((x) => x.group === group)) {
      out.push(`  --${f.name}${f.arg ? ` ${f.arg}` : ""}`);
      out.push(`      ${f.help}`);
      const extra = [f.default ? `default: ${f.default}` : "", f.env ? `env: ${f.env}` : ""].filter(Boolean).join("; ");
      if (extra) out.push(`      (${extra})`);
    }
  }
  out.push(
    "",
    "Exit codes: 0 clean shutdown, 1 runtime failure (e.g. port or socket in use), 2 bad flags.",
    "",
  );
  return out.join("\n");
}
