// The azurelustre-gateway component over manifests shaped like the Azure Lustre
// CSI driver's (deploy/examples/azurelustre/driver/, written for these tests),
// rendered with a real kustomize from the example kustomization, as an operator
// would. The driver's objects must come out unchanged but for the wiring the
// component exists for.
import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { asHelmOutput, byName, expectHelmMatchesExample, cliAccepts, clone, exampleSources, expectDriverObjectsPlusPluginConfigMap, key, postRender, sortContainers, without } from "./lib/gateway.js";
import { BUILT, DEPLOY, KUSTOMIZE_DIR, NOT_BUILT_MESSAGE } from "./lib/paths.js";
import { listedPlugins, renderDir, type K8sObject } from "./lib/render.js";
import { expand, flagsOf } from "./lib/workloads.js";
import { expectProbegateListeners } from "./lib/listeners.js";

const EXAMPLE = path.join(DEPLOY, "examples/azurelustre");
const COMPONENT = path.join(KUSTOMIZE_DIR, "components/azurelustre-gateway");
const FLAVORS = ["jammy", "noble"];
const PG_PORT = 29766;
const PG_METRICS_PORT = 29767;

describe("components/azurelustre-gateway", () => {
  let rendered: K8sObject[];
  let original: Map<string, K8sObject>;

  beforeAll(() => {
    rendered = renderDir(EXAMPLE).docs;
    original = new Map(exampleSources(EXAMPLE).map((o) => [key(o), o]));
  });

  it("is a kustomize Component", () => {
    const k = parse(readFileSync(path.join(COMPONENT, "kustomization.yaml"), "utf8"));
    expect(k.apiVersion).toBe("kustomize.config.k8s.io/v1alpha1");
    expect(k.kind).toBe("Component");
  });

  it("renders every driver object plus probegate's plugin ConfigMap, and validates with no unknown field", async () => {
    await expectDriverObjectsPlusPluginConfigMap(rendered, original, "kube-system");
  });

  it("leaves every object but the two node DaemonSets exactly as the driver ships it (CSIDriver, RBAC, controller)", () => {
    const others = rendered.filter(
      (o) => original.has(key(o)) && !(o.kind === "DaemonSet" && FLAVORS.some((f) => o.metadata.name === `csi-azurelustre-node-${f}`)),
    );
    expect(others.map((o) => o.kind).sort()).toEqual(["CSIDriver", "ClusterRole", "ClusterRoleBinding", "Deployment", "ServiceAccount"]);
    for (const o of others) expect(o, key(o)).toEqual(original.get(key(o)));
  });

  it("Helm: the post-renderer turns the chart's output into the same objects as the example, leaving no temporary files", () => {
    expectHelmMatchesExample("azurelustre", EXAMPLE, rendered);
  });

  it("Helm: garbled chart output fails with no output and no temporary files", () => {
    const garbled = postRender("azurelustre", `${asHelmOutput("azurelustre", EXAMPLE)}\n---\n{`);
    expect(garbled.status).not.toBe(0);
    expect(garbled.stdout).toBe("");
    expect(garbled.leftovers).toEqual([]);
  });

  for (const flavor of FLAVORS) {
    describe(`csi-azurelustre-node-${flavor}`, () => {
      let ds: K8sObject;
      let src: K8sObject;
      let spec: any;
      let pg: any;
      beforeAll(() => {
        ds = rendered.find((o) => o.kind === "DaemonSet" && o.metadata.name === `csi-azurelustre-node-${flavor}`)!;
        src = original.get(key(ds))!;
        spec = ds.spec.template.spec;
        pg = byName(spec.containers, "probegate");
      });

      it("changes nothing but the probegate container, the driver's endpoint, probegate's volumes, shareProcessNamespace and the scrape label", () => {
        // Undo exactly the documented changes; what remains must be the driver's object.
        const undone = clone(ds);
        expect(undone.spec.template.metadata.labels["probegate.io/scrape"]).toBe("true");
        expect(src.spec.template.metadata.labels["probegate.io/scrape"]).toBeUndefined();
        delete undone.spec.template.metadata.labels["probegate.io/scrape"];
        const s = undone.spec.template.spec;
        expect(s.shareProcessNamespace).toBe(true);
        expect(src.spec.template.spec.shareProcessNamespace).toBeUndefined();
        delete s.shareProcessNamespace;
        s.containers = without(s.containers, "probegate");
        s.volumes = s.volumes.filter((v: any) => !["probegate-driver-socket", "probegate-tmp", "probegate-plugins"].includes(v.name));
        const drv = byName(s.containers, "azurelustre");
        byName(drv.env, "CSI_ENDPOINT").value = "unix:///csi/csi.sock";
        drv.volumeMounts = drv.volumeMounts.filter((m: any) => m.name !== "probegate-driver-socket");
        expect(sortContainers(undone)).toEqual(sortContainers(clone(src)));
        // In particular: no token, RBAC, probe, preStop, privilege or env change on the driver.
        expect(spec.serviceAccountName).toBe("csi-azurelustre-node-sa");
        expect(spec.automountServiceAccountToken).toBeUndefined();
      });

      it("sockets: probegate serves /csi/csi.sock (registrar, livenessprobe, kubelet); the driver listens pod-privately and only probegate dials it", () => {
        const flags = flagsOf(pg.args);
        const mountOf = (c: any, vol: string) => c.volumeMounts.find((m: any) => m.name === vol)?.mountPath;
        const served = new URL(flags.get("csi-endpoint")!).pathname;
        expect(served).toBe(`${mountOf(pg, "socket-dir")}/csi.sock`);
        const reg = byName(spec.containers, "node-driver-registrar");
        expect(expand(flagsOf(reg.args).get("csi-address")!, reg)).toBe(`${mountOf(reg, "socket-dir")}/csi.sock`);
        expect(expand(flagsOf(reg.args).get("kubelet-registration-path")!, reg)).toBe(
          `${byName(spec.volumes, "socket-dir").hostPath.path}/csi.sock`,
        );
        const lp = byName(spec.containers, "liveness-probe");
        expect(flagsOf(lp.args).get("csi-address")).toBe(`${mountOf(lp, "socket-dir")}/csi.sock`);

        const drv = byName(spec.containers, "azurelustre");
        const driverSock = new URL(byName(drv.env, "CSI_ENDPOINT").value).pathname;
        expect(flags.get("upstream")).toBe(`unix://${driverSock}`);
        const vol = drv.volumeMounts.find((m: any) => path.dirname(driverSock) === m.mountPath);
        expect(vol.name).toBe("probegate-driver-socket");
        expect(mountOf(pg, vol.name)).toBe(path.dirname(driverSock));
        expect(byName(spec.volumes, vol.name).emptyDir).toBeTruthy(); // pod-local
        for (const c of spec.containers) if (!["azurelustre", "probegate"].includes(c.name)) expect(mountOf(c, vol.name), c.name).toBeUndefined();
        expect(expand(flags.get("driver-name")!, pg)).toBe("azurelustre.csi.azure.com");
      });

      it("ports: probegate's does not collide with any port or health port in the pod (host network)", () => {
        expect(spec.hostNetwork).toBe(true);
        expectProbegateListeners(ds.spec.template, pg, { probePort: PG_PORT, metricsPort: PG_METRICS_PORT });
        expect(pg.ports.map((p: any) => p.containerPort)).toEqual([PG_PORT, PG_METRICS_PORT]);
        const others: number[] = [];
        for (const c of spec.containers.filter((c: any) => c.name !== "probegate")) {
          for (const p of c.ports ?? []) others.push(p.containerPort);
          const f = flagsOf(c.args ?? []);
          for (const name of ["health-port", "http-endpoint", "metrics-address"]) {
            const v = f.get(name);
            if (v) others.push(Number(v.split(":").at(-1)));
          }
        }
        expect(others).toContain(29763); // the livenessprobe sidecar's --health-port
        expect(others).not.toContain(PG_PORT);
        expect(others).not.toContain(PG_METRICS_PORT);
        // The driver's controller (29762) and reserved metrics ports (29764, 29765) share the host network too.
        expect([29762, 29763, 29764, 29765]).not.toContain(PG_PORT);
        expect([29762, 29763, 29764, 29765]).not.toContain(PG_METRICS_PORT);
      });

      it("probegate's own probes: startup and liveness on /livez, readiness on /readyz, all on its port", () => {
        // Over loopback: the probe port listens on 127.0.0.1 only (host network).
        for (const k of ["startupProbe", "livenessProbe"]) expect(pg[k].httpGet, k).toEqual({ host: "127.0.0.1", path: "/livez", port: "probegate" });
        expect(pg.readinessProbe.httpGet).toEqual({ host: "127.0.0.1", path: "/readyz", port: "probegate" });
        expect(byName(pg.ports, "probegate").containerPort).toBe(PG_PORT);
      });

      it("runs the driver's lnetctl in its container, never restarts it for readiness, and fails closed", () => {
        const flags = flagsOf(pg.args);
        expect(flags.get("exec-in-process")).toBe("azurelustreplugin");
        expect(flags.has("command-prefix")).toBe(false);
        expect(spec.shareProcessNamespace).toBe(true);
        expect(flags.get("path.procfs")).toBe("/proc");
        expect(flags.get("probe-ready")).toBe("upstream");
        expect(flags.get("gate")).toBe("node-stage,node-publish");
        expect(flags.get("require-checks")!.split(",").sort()).toEqual(listedPlugins().map((f) => f.replace(/\.wasm$/, "")).sort());
        expect(pg.securityContext).toMatchObject({ privileged: true, readOnlyRootFilesystem: true });
        expect(pg.image).toBe("registry.example.com/storage/probegate:0.1.0");
        // The driver's liveness still goes through the livenessprobe sidecar (now Probe through probegate).
        expect(byName(spec.containers, "azurelustre").livenessProbe).toEqual(byName(src.spec.template.spec.containers, "azurelustre").livenessProbe);
      });

      it("plugins come from the image, then the hash-named probegate-plugins ConfigMap in the driver's namespace", () => {
        expect(pg.args.filter((a: string) => a.startsWith("--plugins-dir="))).toEqual([
          "--plugins-dir=/etc/probegate/plugins",
          "--plugins-dir=/etc/probegate/plugins.d",
        ]);
        expect(pg.volumeMounts.find((m: any) => m.name === "probegate-plugins")).toEqual({
          name: "probegate-plugins",
          mountPath: "/etc/probegate/plugins.d",
          readOnly: true,
        });
        const cm = rendered.find((o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("probegate-plugins-"))!;
        expect(byName(spec.volumes, "probegate-plugins").configMap).toEqual({ name: cm.metadata.name, optional: true });
        expect(cm.metadata.namespace).toBe(ds.metadata.namespace);
        expect(Object.keys((cm as any).data)).toEqual(["lnet-nets.yaml"]);
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
});
