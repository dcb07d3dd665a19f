// The gateway-mode components for the FSx, GKE Managed Lustre, HPE and
// EXAScaler CSI drivers, each over stand-in manifests shaped like the driver's
// own (deploy/examples/<driver>/driver/, written for these tests) and rendered
// with a real kustomize from the example's kustomization, as an operator would.
// Only the node DaemonSet may change, and in it only the wiring the component
// exists for. The Helm path feeds the same manifests, as a chart's rendered
// output, through the examples' post-renderer script (stdin to stdout, as helm
// runs it) and must produce the same objects.
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { asHelmOutput, byName, expectHelmMatchesExample, cliAccepts, clone, exampleSources, expectDriverObjectsPlusPluginConfigMap, inspectConfig, key, mountOf, postRender, sortContainers, without } from "./lib/gateway.js";
import { BUILT, DEPLOY, DIST_PLUGINS, KUSTOMIZE_DIR, NOT_BUILT_MESSAGE } from "./lib/paths.js";
import { listedPlugins, renderDir, type K8sObject } from "./lib/render.js";
import { expectProbegateListeners } from "./lib/listeners.js";
import { expand, flagsOf } from "./lib/workloads.js";

interface Driver {
  example: string;
  component: string;
  namespace: string;
  daemonSet: string;
  driverContainer: string;
  driverName: string;
  /** How the driver is told its socket: an env var, or a literal argument at this index. */
  endpoint: { env: string; was: string } | { argIndex: number; was: string };
  registrar: string;
  livenessProbe?: string;
  hostNetwork: boolean;
  probePort: number;
  metricsPort: number;
  /** Where the Lustre tools are: the driver image (run in its process's namespace) or the host. */
  tools: { inProcess: string } | "host";
}

const DRIVERS: Driver[] = [
  {
    example: "fsx",
    component: "fsx-gateway",
    namespace: "kube-system",
    daemonSet: "fsx-csi-node",
    driverContainer: "fsx-plugin",
    driverName: "fsx.csi.aws.com",
    endpoint: { env: "CSI_ENDPOINT", was: "unix:/csi/csi.sock" },
    registrar: "node-driver-registrar",
    livenessProbe: "liveness-probe",
    hostNetwork: false,
    probePort: 29766,
    metricsPort: 29767,
    tools: { inProcess: "aws-fsx-csi-driver" },
  },
  {
    example: "gke-lustre",
    component: "gke-lustre-gateway",
    namespace: "lustre-csi-driver",
    daemonSet: "lustre-csi-node",
    driverContainer: "lustre-csi-driver",
    driverName: "lustre.csi.storage.gke.io",
    endpoint: { argIndex: 1, was: "--endpoint=unix:/csi/csi.sock" },
    registrar: "csi-driver-registrar",
    hostNetwork: true,
    probePort: 29768,
    metricsPort: 29769,
    tools: { inProcess: "lustre-csi-driver" },
  },
  {
    example: "hpe-lustre",
    component: "hpe-lustre-gateway",
    namespace: "lustre-csi-system",
    daemonSet: "lustre-csi-node",
    driverContainer: "csi-node-driver",
    driverName: "lustre-csi.hpe.com",
    endpoint: { env: "CSI_ENDPOINT", was: "unix:///csi/csi.sock" },
    registrar: "csi-node-driver-registrar",
    livenessProbe: "liveness-probe",
    hostNetwork: false,
    probePort: 29766,
    metricsPort: 29767,
    tools: "host",
  },
  {
    example: "exascaler",
    component: "exascaler-gateway",
    namespace: "default",
    daemonSet: "exascaler-csi-node",
    driverContainer: "driver",
    driverName: "exa.csi.ddn.com",
    endpoint: { argIndex: 1, was: "--endpoint=unix://csi/csi.sock" },
    registrar: "driver-registrar",
    hostNetwork: true,
    probePort: 29770,
    metricsPort: 29771,
    tools: "host",
  },
];

/** Ports other CSI drivers' node pods take on a host network (REFERENCE §9). */
const HOST_NETWORK_TAKEN = [9808, 9809, 29762, 29763, 29764, 29765];
/** The LNet checks whose configuration says when LNet comes up: the readiness ones and lnet-health (storage health). */
const LNET_PLUGINS = ["kernel-modules", "lnet-health", "lnet-nets", "lnet-nids", "lnet-self-ping"];

const driverSocketOf = (drv: any, d: Driver): string => {
  const raw = "env" in d.endpoint ? byName(drv.env, d.endpoint.env).value : drv.args[d.endpoint.argIndex].replace(/^--endpoint=/, "");
  return new URL(raw).pathname;
};

/** Every port a container listens on: containerPorts, and the port of its listen flags. */
function portsOf(c: any): number[] {
  const out = (c.ports ?? []).map((p: any) => p.containerPort as number);
  const f = flagsOf(c.args ?? []);
  for (const name of ["health-port", "http-endpoint", "metrics-address", "metrics-endpoint"]) {
    const v = f.get(name);
    if (v) out.push(Number(v.split(":").at(-1)));
  }
  return out;
}

for (const d of DRIVERS) {
  const EXAMPLE = path.join(DEPLOY, "examples", d.example);
  const COMPONENT = path.join(KUSTOMIZE_DIR, "components", d.component);

  describe(`components/${d.component} (deploy/examples/${d.example})`, () => {
    let rendered: K8sObject[];
    let original: Map<string, K8sObject>;
    let ds: K8sObject;
    let src: K8sObject;
    let spec: any;
    let pg: any;
    let drv: any;

    beforeAll(() => {
      rendered = renderDir(EXAMPLE).docs;
      original = new Map(exampleSources(EXAMPLE).map((o) => [key(o), o]));
      ds = rendered.find((o) => o.kind === "DaemonSet" && o.metadata.name === d.daemonSet)!;
      src = original.get(key(ds))!;
      spec = ds.spec.template.spec;
      pg = byName(spec.containers, "probegate");
      drv = byName(spec.containers, d.driverContainer);
    });

    it("is a kustomize Component that targets only the node DaemonSet by name", () => {
      const k = parse(readFileSync(path.join(COMPONENT, "kustomization.yaml"), "utf8"));
      expect(k.apiVersion).toBe("kustomize.config.k8s.io/v1alpha1");
      expect(k.kind).toBe("Component");
      for (const p of k.patches) expect(p.target).toEqual({ group: "apps", kind: "DaemonSet", name: d.daemonSet });
    });

    it("renders every driver object plus the plugin ConfigMap, and validates with no unknown field", async () => {
      await expectDriverObjectsPlusPluginConfigMap(rendered, original, d.namespace);
    });

    it("leaves every other object exactly as the driver ships it (CSIDriver, identities, controller)", () => {
      const others = rendered.filter((o) => original.has(key(o)) && o !== ds);
      expect(others.length).toBeGreaterThan(0);
      for (const o of others) expect(o, key(o)).toEqual(original.get(key(o)));
    });

    it("changes nothing in the node DaemonSet but probegate, its volumes and label, the driver's endpoint and the PID namespace setting", () => {
      // Undo exactly the documented changes; what remains must be the driver's object.
      const undone = clone(ds);
      const t = undone.spec.template;
      expect(t.metadata.labels["probegate.io/scrape"]).toBe("true");
      delete t.metadata.labels["probegate.io/scrape"];
      const pidSetting = d.tools === "host" ? "hostPID" : "shareProcessNamespace";
      expect(t.spec[pidSetting]).toBe(true);
      expect(src.spec.template.spec[pidSetting]).toBeUndefined();
      delete t.spec[pidSetting];
      t.spec.containers = without(t.spec.containers, "probegate");
      t.spec.volumes = t.spec.volumes.filter((v: any) => !v.name.startsWith("probegate-"));
      const c = byName(t.spec.containers, d.driverContainer);
      if ("env" in d.endpoint) byName(c.env, d.endpoint.env).value = d.endpoint.was;
      else c.args[d.endpoint.argIndex] = d.endpoint.was;
      c.volumeMounts = c.volumeMounts.filter((m: any) => m.name !== "probegate-driver-socket");
      expect(sortContainers(undone)).toEqual(sortContainers(clone(src)));
      // In particular: the driver keeps its image, args, probes, privileges and lifecycle.
      const was = byName(src.spec.template.spec.containers, d.driverContainer);
      for (const k of ["image", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle", "securityContext", "ports"]) expect(drv[k], k).toEqual(was[k]);
    });

    it("sockets: probegate serves the socket the registrar, the livenessprobe and kubelet use; the driver listens pod-privately and only probegate dials it", () => {
      const flags = flagsOf(pg.args);
      const socketVol = spec.volumes.find((v: any) => v.hostPath && mountOf(byName(spec.containers, d.registrar), v.name) === "/csi")!;
      const served = new URL(flags.get("csi-endpoint")!).pathname;
      expect(served).toBe(`${mountOf(pg, socketVol.name)}/csi.sock`);
      const reg = byName(spec.containers, d.registrar);
      const regFlags = flagsOf(reg.args);
      expect(expand(regFlags.get("csi-address")!, reg)).toBe(`${mountOf(reg, socketVol.name)}/csi.sock`);
      // kubelet dials the host path of the same file.
      expect(path.dirname(expand(regFlags.get("kubelet-registration-path")!, reg))).toBe(socketVol.hostPath.path.replace(/\/$/, ""));
      if (d.livenessProbe) {
        const lp = byName(spec.containers, d.livenessProbe);
        expect(flagsOf(lp.args).get("csi-address")).toBe(`${mountOf(lp, socketVol.name)}/csi.sock`);
      }

      const driverSock = driverSocketOf(drv, d);
      expect(new URL(flags.get("upstream")!).pathname).toBe(driverSock);
      expect(mountOf(drv, "probegate-driver-socket")).toBe(path.dirname(driverSock));
      expect(mountOf(pg, "probegate-driver-socket")).toBe(path.dirname(driverSock));
      expect(byName(spec.volumes, "probegate-driver-socket").emptyDir).toEqual({ medium: "Memory", sizeLimit: "1Mi" });
      for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
        if (c !== pg && c !== drv) expect(mountOf(c, "probegate-driver-socket"), c.name).toBeUndefined();
      }
      expect(driverSock).not.toBe(served);
      expect(flags.get("driver-name")).toBe(d.driverName);
    });

    it(`listeners: ${d.hostNetwork ? "host network, probes on 127.0.0.1" : "pod network, the pod's address"}; metrics on the pod IP; no port clash`, () => {
      expect(Boolean(spec.hostNetwork)).toBe(d.hostNetwork);
      // The conventions every probegate container follows (the base's and azurelustre's tests use the same check).
      expectProbegateListeners(ds.spec.template, pg, { probePort: d.probePort, metricsPort: d.metricsPort });
      expect(byName(pg.ports, "probegate").containerPort).toBe(d.probePort);
      const others = spec.containers.filter((c: any) => c !== pg).flatMap(portsOf);
      for (const p of [d.probePort, d.metricsPort]) {
        expect(others).not.toContain(p);
        if (d.hostNetwork) expect(HOST_NETWORK_TAKEN).not.toContain(p);
      }
    });

    it("probes: startup and liveness on /livez, readiness on /readyz (checked with the listeners); a readiness loss restarts nothing", () => {
      for (const k of ["startupProbe", "livenessProbe", "readinessProbe"]) expect(pg[k].httpGet.port, k).toBe("probegate");
      expect(flagsOf(pg.args).get("probe-ready")).toBe("upstream");
      expect(flagsOf(pg.args).get("gate")).toBe("node-stage,node-publish");
    });

    it(d.tools === "host" ? "runs the host's Lustre tools in the host's mount namespace, host paths read-only" : "runs the driver image's Lustre tools in the driver's process, host paths read-only", () => {
      const flags = flagsOf(pg.args);
      const hostMount = (flag: string, hostPath: string) => {
        const dir = flags.get(flag)!;
        const m = pg.volumeMounts.find((x: any) => x.mountPath === dir);
        expect(m, flag).toBeTruthy();
        expect(m.readOnly, flag).toBe(true);
        expect(byName(spec.volumes, m.name).hostPath.path, flag).toBe(hostPath);
      };
      if (d.tools === "host") {
        expect(spec.hostPID).toBe(true);
        expect(flags.get("command-prefix")).toBe("nsenter --target 1 --mount --");
        expect(flags.has("exec-in-process")).toBe(false);
        hostMount("path.procfs", "/proc");
        hostMount("path.sysfs", "/sys");
      } else {
        expect(spec.shareProcessNamespace).toBe(true);
        expect(spec.hostPID).toBeUndefined();
        expect(flags.get("exec-in-process")).toBe(d.tools.inProcess);
        expect(flags.has("command-prefix")).toBe(false);
        expect(flags.get("path.procfs")).toBe("/proc");
        // A pod-network /sys shows the pod's interfaces: the host's is mounted instead.
        if (d.hostNetwork) expect(flags.get("path.sysfs")).toBe("/sys");
        else hostMount("path.sysfs", "/sys");
      }
      hostMount("path.modules", "/lib/modules");
      hostMount("path.modprobe", "/etc/modprobe.d");
      expect(pg.securityContext).toMatchObject({ privileged: true, readOnlyRootFilesystem: true });
      expect(flags.get("require-checks")!.split(",").sort()).toEqual(listedPlugins().map((f) => f.replace(/\.wasm$/, "")).sort());
      expect(pg.image).toBe("registry.example.com/storage/probegate:0.1.0");
    });

    it("plugins.d: the LNet checks wait for the first mount (lnetConfiguredAt: mount), from the hash-named ConfigMap", () => {
      const cm = rendered.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("probegate-plugins-"))!;
      expect(byName(spec.volumes, "probegate-plugins").configMap).toEqual({ name: cm.metadata.name, optional: true });
      expect(mountOf(pg, "probegate-plugins")).toBe("/etc/probegate/plugins.d");
      expect(pg.args.filter((a: string) => a.startsWith("--plugins-dir="))).toEqual(["--plugins-dir=/etc/probegate/plugins", "--plugins-dir=/etc/probegate/plugins.d"]);
      expect(Object.keys((cm as any).data).sort()).toEqual(LNET_PLUGINS.map((p) => `${p}.yaml`));
      expect(readdirSync(path.join(EXAMPLE, "plugins.d")).sort()).toEqual(LNET_PLUGINS.map((p) => `${p}.yaml`));
      for (const p of LNET_PLUGINS) expect(parse((cm as any).data[`${p}.yaml`]).lnetConfiguredAt, p).toBe("mount");
    });

    it("Helm: the post-renderer turns the chart's output into the same objects as the example", () => {
      expectHelmMatchesExample(d.example, EXAMPLE, rendered);
    });

    it("Helm: the post-renderer fails with a message and no output on bad input, and leaves no temporary files", () => {
      const bad = postRender("../fsx", "");
      expect([bad.status, bad.stdout]).toEqual([2, ""]);
      expect(bad.stderr).toMatch(/usage/);
      const garbled = postRender(d.example, `${asHelmOutput(d.example, EXAMPLE)}\n---\n{`);
      expect(garbled.status).not.toBe(0);
      expect(garbled.stdout).toBe("");
      if ("argIndex" in d.endpoint) {
        // A release whose endpoint argument moved is not patched blindly: the JSON patch's test fails.
        const moved = postRender(d.example, asHelmOutput(d.example, EXAMPLE).replaceAll(`- ${d.endpoint.was}`, `- --endpoint=unix:/elsewhere/csi.sock`));
        expect(moved.status).not.toBe(0);
        expect(moved.stdout).toBe("");
        expect(moved.stderr).toMatch(/test/i);
        expect(moved.leftovers).toEqual([]);
      }
      expect(garbled.leftovers).toEqual([]);
    });

    it.skipIf(!BUILT)("plugins.d: each configuration is valid for the bundled plugin of that name (needs #23's lnetConfiguredAt)", () => {
      if (!BUILT) return console.warn(NOT_BUILT_MESSAGE);
      for (const p of LNET_PLUGINS) {
        const file = path.join(EXAMPLE, "plugins.d", `${p}.yaml`);
        // The same validation the gateway applies when it loads the directory.
        const r = inspectConfig(path.join(DIST_PLUGINS, `${p}.wasm`), file);
        expect(r.status, `${file}: ${r.stdout}${r.stderr}`).toBe(0);
      }
    });

    it.skipIf(!BUILT)("the real CLI accepts probegate's argument list", () => {
      if (!BUILT) return console.warn(NOT_BUILT_MESSAGE);
      const args = (pg.args as string[]).map((a) => expand(a, pg));
      const r = cliAccepts(args);
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
    });
  });
}
