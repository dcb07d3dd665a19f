#!/usr/bin/env node
// Writes components/<driver>-gateway/node-daemonset-patch.yaml for every
// gateway-mode component from one definition of the probegate sidecar
// (SIDECAR: image, flags, probes, resources, security, volumes, scrape label)
// and one row of data per driver (DRIVERS: the DaemonSet, the driver's
// container and how it learns its socket, where the Lustre tools are, the PID
// namespace, host mounts, listeners and ports). kustomize cannot share one
// strategic-merge patch between components whose targets, argument lists and
// volume lists differ, so the patches are generated and checked in, like
// components/prometheus-rules. A probe, resource or flag change is one edit here.
// `--check` exits 1 (naming the files) when a checked-in patch is stale;
// deploy/test/gateway-components.test.ts runs it.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** What every gateway-mode probegate container has, whatever the driver. */
export const SIDECAR = {
  image: "probegate",
  driverSocket: "unix:///driver/driver.sock",
  csiSocket: "unix:///csi/csi.sock",
  requireChecks: "kernel-modules,lnet-nets,lnet-nids,lnet-self-ping,net-interfaces",
  checkInterval: "5s",
  upstreamTimeoutCap: "2m",
  logLevel: "info",
  resources: { requests: { cpu: "20m", memory: "128Mi" }, limits: { cpu: "200m", memory: "256Mi" } },
  startupProbe: { path: "/livez", periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 24 },
  livenessProbe: { path: "/livez", periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 },
  readinessProbe: { path: "/readyz", periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 },
};

/**
 * One row per driver. `tools`: the driver image carries the Lustre tools
 * (run in its container's mount namespace, found through a shared PID
 * namespace: `{ inProcess: "<process name>" }`) or the host does (hostPID and
 * nsenter into PID 1's mount namespace: "host"). `listen`: "pod" binds the probe
 * listener to the pod's address (pod network), "loopback" to 127.0.0.1 (host
 * network; kubelet probes it there). `hostSys`: read the host's /sys (a pod
 * network's /sys shows the pod's interfaces). `lnetAtMount`: LNet comes up at the
 * first mount, so the checks read the host's module tree and modprobe options.
 * `notes`: the driver's own reasons, written as comments beside the line they explain.
 * Optional `extraArgs` (strings, before --log-level) and `extraEnv` ({ name, value },
 * after POD_IP) carry a driver's own probegate settings.
 */
export const DRIVERS = [
  {
    component: "fsx-gateway",
    daemonSet: "fsx-csi-node",
    driverContainer: "fsx-plugin",
    driverName: "fsx.csi.aws.com",
    endpointEnv: "CSI_ENDPOINT",
    socketVolume: "plugin-dir",
    tools: { inProcess: "aws-fsx-csi-driver" },
    listen: "pod",
    probePort: 29766,
    metricsPort: 29767,
    hostSys: true,
    lnetAtMount: true,
    notes: {
      pid: [
        "The driver image carries the Lustre client tools (lustre-client package):",
        "probegate runs them in the driver container's mount namespace, found",
        "through the pod's shared PID namespace.",
      ],
      endpoint: ["Private: only probegate dials it. kubelet, node-driver-registrar and", "the liveness-probe sidecar keep using /csi/csi.sock, now probegate's."],
      driverName: ["Answered while the driver is not up yet, so the sidecars start."],
      gate: ["The driver implements NodePublishVolume only; both are gated anyway."],
      probeReady: [
        "Probe = the driver's own answer + probegate's liveness: the",
        "liveness-probe sidecar is the driver's livenessProbe, and a readiness",
        "loss must never restart the driver.",
      ],
      listen: ["Pod network: listen on the pod's address only. The driver's", "liveness-probe sidecar has 9810 in this pod."],
      paths: [
        "The pod's own procfs (shared PID namespace: the driver's process);",
        "the host's sysfs, because a pod-network /sys shows the pod's",
        "interfaces, not the ones LNet uses.",
      ],
    },
  },
  {
    component: "gke-lustre-gateway",
    daemonSet: "lustre-csi-node",
    driverContainer: "lustre-csi-driver",
    driverName: "lustre.csi.storage.gke.io",
    // A literal argument: driver-endpoint-patch.yaml (a JSON patch) moves it.
    endpointEnv: null,
    socketVolume: "socket-dir",
    tools: { inProcess: "lustre-csi-driver" },
    listen: "loopback",
    probePort: 29768,
    metricsPort: 29769,
    hostSys: false,
    lnetAtMount: true,
    notes: {
      pid: ["The driver image carries the Lustre client utilities (/usr/sbin/lctl,", "lnetctl): probegate runs them in the driver container's mount namespace."],
      probeReady: ["Probe = the driver's own answer; a readiness loss restarts nothing."],
      listen: [
        "Host network: the probe listener on loopback only (kubelet probes",
        "it there); not 9808/9809/29762-29765, which other CSI drivers'",
        "node pods take on the same host network.",
      ],
      paths: ["The pod's procfs (the driver's process) and, with hostNetwork, a", "sysfs that shows the host's interfaces."],
    },
  },
  {
    component: "hpe-lustre-gateway",
    daemonSet: "lustre-csi-node",
    driverContainer: "csi-node-driver",
    driverName: "lustre-csi.hpe.com",
    endpointEnv: "CSI_ENDPOINT",
    socketVolume: "socket-dir",
    tools: "host",
    listen: "pod",
    probePort: 29766,
    metricsPort: 29767,
    hostSys: true,
    lnetAtMount: true,
    notes: {
      pid: [
        "The kernel client and its tools are the host's (the driver image carries",
        "none): PID 1 is the host's init, so `nsenter --target 1 --mount` runs the",
        "host's lnetctl/lctl against the host's kernel.",
      ],
      endpoint: ["Private: only probegate dials it. kubelet and the sidecars keep", "using /csi/csi.sock, now probegate's."],
      listen: ["Pod network: the pod's address only. 29763 is the liveness-probe", "sidecar's in this pod."],
      paths: ["lnetctl talks to the kernel through /dev/lnet, so the host's mount", "namespace is enough; the pod keeps its own network namespace."],
    },
  },
  {
    component: "exascaler-gateway",
    daemonSet: "exascaler-csi-node",
    driverContainer: "driver",
    driverName: "exa.csi.ddn.com",
    // A literal argument: driver-endpoint-patch.yaml (a JSON patch) moves it.
    endpointEnv: null,
    socketVolume: "socket-dir",
    tools: "host",
    listen: "loopback",
    probePort: 29770,
    metricsPort: 29771,
    hostSys: true,
    lnetAtMount: true,
    notes: {
      pid: [
        "The EXAScaler client (kernel modules and lnetctl/lctl) is the host's:",
        "PID 1 is the host's init, so `nsenter --target 1 --mount` runs the",
        "host's tools against the host's kernel.",
      ],
      listen: [
        "Host network: the probe listener on loopback only; not",
        "9808/9809/29762-29765 (other CSI drivers' node pods on the same",
        "host network) nor 29768/29769 (gke-lustre-gateway).",
      ],
      lnet: ["LNet comes up at the first mount or when the host configures it", "(plugins.d: lnetConfiguredAt: mount)."],
    },
  },
  {
    component: "azurelustre-gateway",
    // The component's target matches both csi-azurelustre-node-jammy and -noble;
    // a targeted strategic-merge patch takes each target's name.
    daemonSet: "csi-azurelustre-node",
    daemonSetNote: ["Strategic merge patch for csi-azurelustre-node-jammy and -noble (the name", "below is replaced by each target's). Containers and volumes merge by name."],
    driverContainer: "azurelustre",
    driverName: "azurelustre.csi.azure.com",
    endpointEnv: "CSI_ENDPOINT",
    socketVolume: "socket-dir",
    tools: { inProcess: "azurelustreplugin" },
    listen: "loopback",
    probePort: 29766,
    metricsPort: 29767,
    hostSys: false,
    // The driver installs the client and configures LNet itself at start.
    lnetAtMount: false,
    pluginsNote: [
      "In the driver's namespace. Generate it with a hash suffix in your",
      "kustomization (deploy/examples/azurelustre does), so a change rolls out",
      "node by node; without one the directory is simply empty.",
    ],
    notes: {
      pid: [
        "The driver installs lnetctl/lctl into its own container at start (the AKS",
        "host has none). With one PID namespace per pod, probegate sees the",
        "driver's process in its own /proc and runs each command in that",
        "container's mount namespace: --exec-in-process=azurelustreplugin.",
      ],
      endpoint: ["Private: only probegate dials it. kubelet, node-driver-registrar and", "the livenessprobe sidecar keep using /csi/csi.sock, now probegate's."],
      driverName: ["Until the driver answers (it installs the Lustre client for minutes),", "GetPluginInfo is answered with this name so the sidecars start."],
      gate: ["Mounts wait (UNAVAILABLE, kubelet retries) while LNet is not ready."],
      probeReady: [
        "Probe = the driver's own answer + probegate's liveness checks only.",
        "The livenessprobe sidecar is the driver's livenessProbe: a readiness",
        "loss must never restart the driver (each restart reinstalls Lustre).",
      ],
      listen: [
        "Not 29763 (the livenessprobe sidecar's --health-port on this host",
        "network), nor 29762/29764/29765 (the driver's controller health and",
        "reserved metrics ports). Loopback only: kubelet probes it over",
        "127.0.0.1, and nobody who reaches the node's IP can flood or read it.",
      ],
      paths: ["This container's own procfs and sysfs: the pod's processes", "(shareProcessNamespace) and, with hostNetwork, the host's interfaces."],
      startup: [
        "probegate itself starts in seconds; the driver's Lustre install does not",
        "count against it.",
      ],
    },
  },
];

const hostTools = (d) => d.tools === "host";

/** The probegate arguments for a driver, each with the comment lines above it. */
function argsOf(d) {
  const n = d.notes;
  const probeHost = d.listen === "loopback" ? "127.0.0.1" : "$(POD_IP)";
  const a = [
    [null, "--mode=node"],
    [null, `--csi-endpoint=${SIDECAR.csiSocket}`],
    [null, `--upstream=${SIDECAR.driverSocket}`],
    [n.driverName, `--driver-name=${d.driverName}`],
    [n.gate, "--gate=node-stage,node-publish"],
    [n.probeReady, "--probe-ready=upstream"],
    [null, `--upstream-timeout-cap=${SIDECAR.upstreamTimeoutCap}`],
    [n.listen, `--http-endpoint=${probeHost}:${d.probePort}`],
    [["/metrics alone, on the pod's address (the node's, on a host network), for Prometheus."], `--metrics-endpoint=$(POD_IP):${d.metricsPort}`],
    [
      [
        "The plugins in the image, then the probegate-plugins ConfigMap (plugin",
        "configurations NAME.yaml and any added plugins; a later directory wins",
        "by plugin name). Fail closed if one of the node set is missing.",
      ],
      "--plugins-dir=/etc/probegate/plugins",
    ],
    [null, "--plugins-dir=/etc/probegate/plugins.d"],
    [null, `--require-checks=${SIDECAR.requireChecks}`],
    [null, `--check-interval=${SIDECAR.checkInterval}`],
  ];
  if (!hostTools(d)) a.push([null, `--exec-in-process=${d.tools.inProcess}`]);
  a.push([hostTools(d) ? null : n.paths, `--path.procfs=${hostTools(d) ? "/host/proc" : "/proc"}`]);
  a.push([null, `--path.sysfs=${d.hostSys ? "/host/sys" : "/sys"}`]);
  if (hostTools(d)) a.push([n.paths, "--command-prefix=nsenter --target 1 --mount --"]);
  if (d.lnetAtMount) {
    a.push([
      n.lnet ?? ["LNet comes up at the first mount (plugins.d: lnetConfiguredAt: mount);", "until then the checks read the host's module tree and modprobe options."],
      "--path.modules=/host/lib/modules",
    ]);
    a.push([null, "--path.modprobe=/host/etc/modprobe.d"]);
  }
  for (const x of d.extraArgs ?? []) a.push([null, x]);
  a.push([null, `--log-level=${SIDECAR.logLevel}`]);
  return a;
}

/** The host paths probegate reads, each a read-only hostPath volume. */
function hostMountsOf(d) {
  const m = [];
  if (hostTools(d)) m.push({ name: "probegate-host-proc", host: "/proc", at: "/host/proc", type: "Directory" });
  if (d.hostSys) m.push({ name: "probegate-host-sys", host: "/sys", at: "/host/sys", type: "Directory" });
  if (d.lnetAtMount) {
    m.push({ name: "probegate-host-modules", host: "/lib/modules", at: "/host/lib/modules", type: "Directory" });
    m.push({
      name: "probegate-host-modprobe",
      host: "/etc/modprobe.d",
      at: "/host/etc/modprobe.d",
      note: ["No type check: a node without the directory has no LNet module options,", "which the checks report instead of the pod failing to start."],
    });
  }
  return m;
}

const comment = (indent, lines) => (lines ?? []).map((l) => `${indent}# ${l}\n`).join("");

function probe(kind, spec, host, note) {
  return (
    comment("          ", note) +
    `          ${kind}:\n` +
    "            httpGet:\n" +
    (host ? `              host: ${host}\n` : "") +
    `              path: ${spec.path}\n` +
    "              port: probegate\n" +
    `            periodSeconds: ${spec.periodSeconds}\n` +
    `            timeoutSeconds: ${spec.timeoutSeconds}\n` +
    `            failureThreshold: ${spec.failureThreshold}\n`
  );
}

/** The strategic-merge patch text for one driver. */
export function renderPatch(d) {
  const n = d.notes;
  const pid = hostTools(d) ? "hostPID" : "shareProcessNamespace";
  const probeHost = d.listen === "loopback" ? "127.0.0.1" : null;
  const hostMounts = hostMountsOf(d);
  const r = SIDECAR.resources;
  let t =
    "# GENERATED by `node deploy/kustomize/generate-gateway-components.mjs` from its\n" +
    "# SIDECAR definition and DRIVERS table; edit those, not this file.\n" +
    comment("", d.daemonSetNote ?? [`Strategic merge patch for ${d.daemonSet}. Containers, env and volumes merge by name.`]) +
    "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n" +
    `  name: ${d.daemonSet}\n` +
    "spec:\n  template:\n    metadata:\n      labels:\n" +
    "        # What the PodMonitor selects (deploy/README.md, Metrics).\n" +
    '        probegate.io/scrape: "true"\n' +
    "    spec:\n" +
    comment("      ", n.pid) +
    `      ${pid}: true\n` +
    "      containers:\n" +
    `        - name: ${d.driverContainer}\n`;
  if (d.endpointEnv) {
    t += "          env:\n" + comment("            ", n.endpoint) + `            - name: ${d.endpointEnv}\n              value: ${SIDECAR.driverSocket}\n`;
  }
  t += "          volumeMounts:\n            - name: probegate-driver-socket\n              mountPath: /driver\n\n";
  t +=
    "        - name: probegate\n" +
    `          image: ${SIDECAR.image}\n` +
    "          imagePullPolicy: IfNotPresent\n" +
    "          args:\n" +
    argsOf(d)
      .map(([note, arg]) => comment("            ", note) + `            - ${arg}\n`)
      .join("") +
    "          env:\n            - name: POD_IP\n              valueFrom:\n                fieldRef:\n                  apiVersion: v1\n                  fieldPath: status.podIP\n" +
    (d.extraEnv ?? []).map((e) => `            - name: ${e.name}\n              value: ${JSON.stringify(e.value)}\n`).join("") +
    "          ports:\n" +
    `            - name: probegate\n              containerPort: ${d.probePort}\n              protocol: TCP\n` +
    `            - name: pg-metrics\n              containerPort: ${d.metricsPort}\n              protocol: TCP\n` +
    probe("startupProbe", SIDECAR.startupProbe, probeHost, [
      ...(n.startup ?? []),
      "Liveness follows probegate's own health only: a node whose Lustre is",
      "not ready never restarts probegate (and the socket kubelet needs).",
    ]) +
    probe("livenessProbe", SIDECAR.livenessProbe, probeHost) +
    probe("readinessProbe", SIDECAR.readinessProbe, probeHost, ["NotReady while the Lustre checks fail."]) +
    "          resources:\n" +
    "            # From bench/ (deploy/README.md): on the image's Node 24, RSS 91 MiB at start, 107-109 MiB flat under load.\n" +
    `            requests:\n              cpu: ${r.requests.cpu}\n              memory: ${r.requests.memory}\n` +
    `            limits:\n              cpu: ${r.limits.cpu}\n              memory: ${r.limits.memory}\n` +
    "          securityContext:\n" +
    comment(
      "            ",
      hostTools(d)
        ? ["nsenter into PID 1's mount namespace needs CAP_SYS_ADMIN and ptrace", "access to PID 1, as the driver container's own privilege allows; lnetctl opens /dev/lnet."]
        : ["Entering the driver container's mount namespace needs CAP_SYS_ADMIN", "and ptrace access to a privileged process; lnetctl opens /dev/lnet."],
    ) +
    "            privileged: true\n            runAsUser: 0\n            readOnlyRootFilesystem: true\n" +
    "          volumeMounts:\n" +
    `            - name: ${d.socketVolume}\n              mountPath: /csi\n` +
    "            - name: probegate-driver-socket\n              mountPath: /driver\n" +
    "            - name: probegate-tmp\n              mountPath: /tmp\n" +
    "            - name: probegate-plugins\n              mountPath: /etc/probegate/plugins.d\n              readOnly: true\n" +
    hostMounts.map((m) => `            - name: ${m.name}\n              mountPath: ${m.at}\n              readOnly: true\n`).join("") +
    "\n      volumes:\n" +
    "        # Pod-local, so nothing else on the node can reach the driver around probegate.\n" +
    "        - name: probegate-driver-socket\n          emptyDir:\n            medium: Memory\n            sizeLimit: 1Mi\n" +
    "        - name: probegate-tmp\n          emptyDir:\n            medium: Memory\n            sizeLimit: 16Mi\n" +
    comment(
      "        ",
      d.pluginsNote ?? [
        "Generate it in your kustomization with a hash suffix (the driver's example",
        "under deploy/examples does), so an edit rolls out node by node; without it the directory is empty.",
      ],
    ) +
    "        - name: probegate-plugins\n          configMap:\n            name: probegate-plugins\n            optional: true\n" +
    hostMounts
      .map((m) => comment("        ", m.note) + `        - name: ${m.name}\n          hostPath:\n            path: ${m.host}\n` + (m.type ? `            type: ${m.type}\n` : ""))
      .join("");
  return t;
}

export const patchFile = (d) => path.join(here, "components", d.component, "node-daemonset-patch.yaml");

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const stale = [];
  for (const d of DRIVERS) {
    const text = renderPatch(d);
    if (process.argv.includes("--check")) {
      if (readFileSync(patchFile(d), "utf8") !== text) stale.push(path.relative(process.cwd(), patchFile(d)));
    } else writeFileSync(patchFile(d), text);
  }
  if (stale.length) {
    process.stderr.write(`stale, run node deploy/kustomize/generate-gateway-components.mjs: ${stale.join(", ")}\n`);
    process.exit(1);
  }
}
