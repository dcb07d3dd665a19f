// Validates the real Kustomize tree: every source file, every rendered object
// (base and the example overlay) against the Kubernetes schemas of
// kubernetes-models, plus cross-checks between the objects.
import { readFileSync, readdirSync, existsSync, statSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { BUILT, DEPLOY, DIST_PLUGINS, KUSTOMIZE_DIR, NOT_BUILT_MESSAGE } from "./lib/paths.js";
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { listedPluginFiles, listedPlugins, render, renderDeploy, renderEdited, renderer, type K8sObject, type Rendered } from "./lib/render.js";
import { unknownFields, validateModel } from "./lib/strict.js";
import { containersOf, expand, flagsOf, isProbegate, pods } from "./lib/workloads.js";
import { expectLoopbackHealthPorts, expectProbegateListeners } from "./lib/listeners.js";
import { inspectConfig } from "./lib/gateway.js";

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

const RBAC = new Set(["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"]);
const ONE_MIB = 1024 * 1024;

describe("kustomize sources", () => {
  const yamlFiles = walk(KUSTOMIZE_DIR).filter((f) => f.endsWith(".yaml"));

  it("every YAML file parses", () => {
    expect(yamlFiles.length).toBeGreaterThan(5);
    for (const f of yamlFiles) {
      for (const d of parseAllDocuments(readFileSync(f, "utf8"))) expect(d.errors, f).toEqual([]);
    }
  });

  it("every kustomization's references exist", () => {
    for (const f of yamlFiles.filter((f) => path.basename(f) === "kustomization.yaml")) {
      const k = parse(readFileSync(f, "utf8"));
      const dir = path.dirname(f);
      for (const r of [...(k.resources ?? []), ...(k.components ?? [])]) {
        expect(existsSync(path.join(dir, r)), `${f}: ${r}`).toBe(true);
      }
      for (const g of k.configMapGenerator ?? []) {
        for (const file of g.files ?? []) {
          expect(existsSync(path.join(dir, file)), `${f}: ${file}`).toBe(true);
        }
      }
    }
  });

  it("every base resource file validates on its own", async () => {
    const k = parse(readFileSync(path.join(KUSTOMIZE_DIR, "base/kustomization.yaml"), "utf8"));
    for (const r of k.resources as string[]) {
      for (const d of parseAllDocuments(readFileSync(path.join(KUSTOMIZE_DIR, "base", r), "utf8"))) {
        const obj = d.toJS() as K8sObject;
        await validateModel(obj);
        expect(unknownFields(obj), r).toEqual([]);
      }
    }
  });

  it("every plugin configuration the manifests ship is valid for the bundled plugin of that name", () => {
    if (!BUILT) return console.warn(NOT_BUILT_MESSAGE);
    const files = [
      ...listedPluginFiles().map((f) => path.join(KUSTOMIZE_DIR, "base/plugins.d", f)),
      ...readdirSync(path.join(KUSTOMIZE_DIR, "overlays/example/plugins.d")).map((f) => path.join(KUSTOMIZE_DIR, "overlays/example/plugins.d", f)),
    ];
    expect(files.length).toBeGreaterThan(3);
    for (const f of files) {
      const name = path.basename(f).replace(/\.(yaml|json)$/, "");
      const wasm = path.join(DIST_PLUGINS, `${name}.wasm`);
      expect(existsSync(wasm), `${f}: no bundled plugin ${name}`).toBe(true);
      // The same validation the gateway applies (`plugin inspect --config`).
      const r = inspectConfig(wasm, f);
      expect(r.status, `${f}: ${r.stdout}${r.stderr}`).toBe(0);
      expect(JSON.parse(r.stdout).config.file).toBe(f);
    }
  });

  it("nothing needs staging: no kustomization lists a build output", () => {
    for (const f of yamlFiles.filter((f) => path.basename(f) === "kustomization.yaml")) {
      const k = parse(readFileSync(f, "utf8"));
      for (const g of k.configMapGenerator ?? []) for (const file of g.files ?? []) expect(existsSync(path.join(path.dirname(f), file)), `${f}: ${file}`).toBe(true);
    }
  });
});

/** A temporary overlay of the base (in a copy of deploy/) with `components`. */
function renderWithComponents(components: string[], edit?: (deployCopy: string) => void): Rendered {
  return renderEdited("kustomize/overlays/test-components", (copy) => {
    const dir = path.join(copy, "kustomize/overlays/test-components");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      path.join(dir, "kustomization.yaml"),
      `resources: [../../base]\ncomponents:\n${components.map((c) => `  - ../../components/${c}\n`).join("")}`,
    );
    edit?.(copy);
  });
}

const nodeTemplate = (r: Rendered) => r.docs.find((d) => d.kind === "DaemonSet" && d.metadata.name === "probegate-node")!.spec.template;

describe("every overlay and component renders from a clean checkout", () => {
  it("the gateway-mode overlay renders with no staging step and adds nothing to the plugin ConfigMap", () => {
    const docs = renderDeploy("gateway-mode").docs;
    const ds = docs.find((d) => d.kind === "DaemonSet")!;
    const c = ds.spec.template.spec.containers.find(isProbegate);
    expectProbegateListeners(ds.spec.template, c, { probePort: 29763, metricsPort: 29767 });
    expectLoopbackHealthPorts(ds.spec.template.spec);
    expect(c.args.filter((a: string) => a.startsWith("--plugins-dir="))).toEqual(["--plugins-dir=/etc/probegate/plugins", "--plugins-dir=/etc/probegate/plugins.d"]);
    const cm = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name.startsWith("probegate-plugins"))!;
    expect(Object.keys(cm.data ?? {}).sort()).toEqual(listedPluginFiles().sort());
  });

  for (const component of readdirSync(path.join(KUSTOMIZE_DIR, "components"))) {
    it(`component ${component} renders on the base, and every object validates with no unknown field`, async () => {
      const docs = renderWithComponents([component]).docs;
      expect(docs.some((d) => d.kind === "DaemonSet")).toBe(true);
      // Whatever the component changes, the listeners keep the conventions.
      for (const p of pods(docs)) {
        const c = p.spec.containers.find(isProbegate);
        const probePort = flagsOf(c.args).get("mode") === "node" ? 29763 : 29762;
        expectProbegateListeners(p.owner.spec.template, c, { probePort, metricsPort: 29767 });
        expectLoopbackHealthPorts(p.spec);
      }
      for (const d of docs) {
        await validateModel(d);
        expect(unknownFields(d), `${d.kind}/${d.metadata.name}`).toEqual([]);
      }
    });
  }

  it("plugins-image mounts an image volume, pinned by digest, read-only as the last --plugins-dir", () => {
    const t = nodeTemplate(renderWithComponents(["plugins-image"]));
    const vol = t.spec.volumes.find((v: any) => v.image);
    expect(vol.image).toEqual({ reference: expect.stringMatching(/\/probegate-plugins@sha256:[0-9a-f]{64}$/), pullPolicy: "IfNotPresent" });
    const c = t.spec.containers.find(isProbegate);
    const mount = c.volumeMounts.find((m: any) => m.name === vol.name);
    expect(mount.readOnly).toBe(true);
    const dirs = c.args.filter((a: string) => a.startsWith("--plugins-dir=")).map((a: string) => a.slice("--plugins-dir=".length));
    expect(dirs).toEqual(["/etc/probegate/plugins", "/etc/probegate/plugins.d", mount.mountPath]);
    const dockerfile = readFileSync(path.join(DEPLOY, "Dockerfile.plugins"), "utf8");
    expect(dockerfile).toMatch(/^FROM scratch$/m);
  });

  // Every gateway-mode component (the generator's table), on its worked example.
  const GATEWAY_COMPONENTS = readdirSync(path.join(KUSTOMIZE_DIR, "components")).filter((c) => c.endsWith("-gateway")).sort();
  it("plugins-image covers every gateway-mode component: one per worked example", () => {
    expect(GATEWAY_COMPONENTS).toEqual(["azurelustre-gateway", "exascaler-gateway", "fsx-gateway", "gke-lustre-gateway", "hpe-lustre-gateway"]);
  });
  for (const component of GATEWAY_COMPONENTS) {
    const example = component.replace(/-gateway$/, "");
    it(`plugins-image on ${component} (examples/${example}): the probegate container of each node DaemonSet mounts the pack by digest after the bundled plugins and the ConfigMap`, () => {
      const plain = renderDeploy(`examples/${example}`).docs.filter((d) => d.kind === "DaemonSet");
      const docs = renderEdited(`examples/${example}`, (copy) => {
        const k = path.join(copy, `examples/${example}/kustomization.yaml`);
        const text = readFileSync(k, "utf8");
        const line = `  - ../../kustomize/components/${component}\n`;
        expect(text).toContain(line);
        writeFileSync(k, text.replace(line, `${line}  - ../../kustomize/components/plugins-image\n`));
      }).docs;
      const sets = docs.filter((d) => d.kind === "DaemonSet");
      expect(sets.map((d) => d.metadata.name)).toEqual(plain.map((d) => d.metadata.name));
      expect(sets.length).toBeGreaterThan(0);
      for (const ds of sets) {
        const t = ds.spec.template;
        const before = plain.find((d) => d.metadata.name === ds.metadata.name)!.spec.template;
        const vols = t.spec.volumes.filter((v: any) => v.image);
        expect(vols, ds.metadata.name).toEqual([
          { name: "probegate-plugins-image", image: { reference: expect.stringMatching(/@sha256:[0-9a-f]{64}$/), pullPolicy: "IfNotPresent" } },
        ]);
        const c = t.spec.containers.find(isProbegate);
        expect(c.volumeMounts.find((m: any) => m.name === "probegate-plugins-image"), ds.metadata.name).toEqual({ name: "probegate-plugins-image", mountPath: "/etc/probegate/plugins-image", readOnly: true });
        const dirs = c.args.filter((a: string) => a.startsWith("--plugins-dir=")).map((a: string) => a.slice("--plugins-dir=".length));
        expect(dirs, ds.metadata.name).toEqual(["/etc/probegate/plugins", "/etc/probegate/plugins.d", "/etc/probegate/plugins-image"]);
        // Nothing else moved: no other container gained the volume or an argument.
        for (const other of t.spec.containers.filter((x: any) => !isProbegate(x))) {
          expect(other, `${ds.metadata.name}/${other.name}`).toEqual(before.spec.containers.find((x: any) => x.name === other.name));
        }
      }
    });
  }

  it("plugins-in-place keeps the ConfigMap's name fixed (the opt-in for in-place hot reload)", () => {
    const docs = renderWithComponents(["plugins-in-place"]).docs;
    expect(docs.filter((d) => d.kind === "ConfigMap").map((d) => d.metadata.name)).toContain("probegate-plugins");
    const vol = nodeTemplate({ docs }).spec.volumes.find((v: any) => v.name === "plugins");
    expect(vol.configMap.name).toBe("probegate-plugins");
  });
});

describe("plugin changes roll out through the DaemonSet", () => {
  const base = () => renderEdited("kustomize/overlays/example", () => {});
  it("a change of a plugin configuration changes the node DaemonSet's pod template (so maxUnavailable applies)", () => {
    const before = nodeTemplate(base());
    const after = nodeTemplate(renderEdited("kustomize/overlays/example", (copy) => appendFileSync(path.join(copy, "kustomize/overlays/example/plugins.d/lnet-nets.yaml"), "ignoreNids: [10.0.0.9@tcp]\n")));
    expect(JSON.stringify(after)).not.toBe(JSON.stringify(before));
    const name = (t: any) => t.spec.volumes.find((v: any) => v.name === "plugins").configMap.name;
    expect(name(before)).toMatch(/^probegate-plugins-[a-z0-9]+$/);
    expect(name(after)).toMatch(/^probegate-plugins-[a-z0-9]+$/);
    expect(name(after)).not.toBe(name(before));
  });

  it("adding a plugin file to the ConfigMap changes the pod template too; an unchanged tree renders the same", () => {
    const before = nodeTemplate(base());
    expect(JSON.stringify(nodeTemplate(base()))).toBe(JSON.stringify(before));
    const after = nodeTemplate(
      renderEdited("kustomize/overlays/example", (copy) => {
        const k = path.join(copy, "kustomize/overlays/example/kustomization.yaml");
        writeFileSync(path.join(copy, "kustomize/overlays/example/plugins.d/site-check.wasm"), Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
        writeFileSync(k, readFileSync(k, "utf8").replace("      - plugins.d/kernel-modules.yaml\n", "      - plugins.d/kernel-modules.yaml\n      - plugins.d/site-check.wasm\n"));
      }),
    );
    expect(JSON.stringify(after)).not.toBe(JSON.stringify(before));
  });

  it("a new plugin image digest changes the pod template (the DaemonSet rolls it out)", () => {
    const before = nodeTemplate(renderWithComponents(["plugins-image"]));
    const after = nodeTemplate(
      renderWithComponents(["plugins-image"], (copy) => {
        const k = path.join(copy, "kustomize/components/plugins-image/kustomization.yaml");
        const text = readFileSync(k, "utf8");
        expect(text).toContain("@sha256:0000");
        writeFileSync(k, text.replaceAll(/@sha256:0{64}/g, `@sha256:${"1".repeat(64)}`));
      }),
    );
    expect(JSON.stringify(after)).not.toBe(JSON.stringify(before));
  });
});

for (const target of ["base", "overlays/example"]) {
  describe(`rendered ${target}`, () => {
    let r: Rendered;
    let docs: K8sObject[];
    const byKind = (kind: string) => docs.filter((d) => d.kind === kind);

    beforeAll(() => {
      r = render(target);
      docs = r.docs;
    });

    it("renders with a real kustomize", () => {
      expect(renderer().version).toMatch(/v?[4-9]\./);
      // The CSIDriver is an optional component (most drivers ship their own); the example overlay adds it.
      const csiDriver = target === "base" ? [] : ["CSIDriver"];
      expect(docs.map((d) => d.kind).sort()).toEqual(
        [...csiDriver, "ConfigMap", "ConfigMap", "DaemonSet", "Deployment", "Namespace", "ServiceAccount", "ServiceAccount"].sort(),
      );
    });

    it("every object validates against the Kubernetes schemas, with no unknown field", async () => {
      for (const d of docs) {
        await validateModel(d);
        expect(unknownFields(d), `${d.kind}/${d.metadata.name}`).toEqual([]);
      }
    });

    it("namespaced objects live in the Namespace it creates; no RBAC", () => {
      const ns = byKind("Namespace")[0]!;
      expect(ns.metadata.name).toBe("probegate");
      expect(ns.metadata.labels["pod-security.kubernetes.io/enforce"]).toBe("privileged");
      for (const d of docs) {
        if (["Namespace", "CSIDriver"].includes(d.kind)) expect(d.metadata.namespace).toBeUndefined();
        else expect(d.metadata.namespace, d.kind).toBe(ns.metadata.name);
        expect(RBAC.has(d.kind), d.kind).toBe(false);
      }
    });

    it("selectors match pod labels; service accounts exist; no pod-level token opt-out (the driver containers need one)", () => {
      const sas = new Set(byKind("ServiceAccount").map((s) => s.metadata.name));
      for (const p of pods(docs)) {
        for (const [k, v] of Object.entries(p.owner.spec.selector.matchLabels)) {
          expect(p.owner.spec.template.metadata.labels[k]).toBe(v);
        }
        expect(sas.has(p.spec.serviceAccountName), p.spec.serviceAccountName).toBe(true);
        expect(p.spec.automountServiceAccountToken).toBeUndefined();
        const sa = byKind("ServiceAccount").find((x) => x.metadata.name === p.spec.serviceAccountName)!;
        expect(sa.automountServiceAccountToken).toBeUndefined();
      }
    });

    it("each volumeMount has a volume, and ConfigMap volumes name a rendered ConfigMap", () => {
      const cms = new Set(byKind("ConfigMap").map((c) => c.metadata.name));
      for (const p of pods(docs)) {
        const volumes = new Map<string, any>(p.spec.volumes.map((v: any) => [v.name, v]));
        expect(volumes.size).toBe(p.spec.volumes.length);
        for (const c of containersOf(p.spec)) {
          for (const m of c.volumeMounts ?? []) expect(volumes.has(m.name), `${c.name}: ${m.name}`).toBe(true);
        }
        for (const v of volumes.values()) if (v.configMap) expect(cms.has(v.configMap.name), v.configMap.name).toBe(true);
      }
    });

    it("each probe's port exists on its container", () => {
      for (const p of pods(docs)) {
        for (const c of containersOf(p.spec)) {
          const ports = c.ports ?? [];
          for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"]) {
            const probe = c[kind];
            if (!probe) continue;
            const port = probe.httpGet?.port ?? probe.tcpSocket?.port ?? probe.grpc?.port;
            if (port === undefined) continue; // exec
            const found =
              typeof port === "number" ? ports.some((q: any) => q.containerPort === port) : ports.some((q: any) => q.name === port);
            expect(found, `${p.owner.kind}/${c.name} ${kind} port ${port}`).toBe(true);
          }
          for (const q of ports) expect(q.name?.length ?? 0).toBeLessThanOrEqual(15);
        }
      }
    });

    it("every container has requests and a memory limit; every $(VAR) in args is defined", () => {
      for (const p of pods(docs)) {
        for (const c of containersOf(p.spec)) {
          expect(c.resources?.requests?.cpu, c.name).toBeTruthy();
          expect(c.resources?.requests?.memory, c.name).toBeTruthy();
          expect(c.resources?.limits?.memory, c.name).toBeTruthy();
          for (const a of [...(c.command ?? []), ...(c.args ?? [])]) {
            for (const m of a.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
              expect((c.env ?? []).some((e: any) => e.name === m[1]), `${c.name}: ${a}`).toBe(true);
            }
          }
        }
      }
    });

    it("probegate containers: ports, probes and paths agree with their flags", () => {
      const pg = pods(docs).flatMap((p) => containersOf(p.spec).filter(isProbegate).map((c) => ({ p, c })));
      expect(pg.map(({ p }) => p.owner.kind).sort()).toEqual(["DaemonSet", "Deployment"]);
      for (const { p, c } of pg) {
        const flags = flagsOf(c.args);
        const mode = flags.get("mode");
        const wantPort = mode === "node" ? 29763 : 29762;
        expect(p.owner.kind).toBe(mode === "node" ? "DaemonSet" : "Deployment");
        // The probe listener (loopback on the host network, the pod IP otherwise) is where every
        // probe points; /metrics has a listener of its own. Startup and liveness are probegate's own
        // liveness: a node whose Lustre is slow or broken must not get it killed or restarted in a loop.
        expectProbegateListeners(p.owner.spec.template, c, { probePort: wantPort, metricsPort: 29767 });
        expect(c.ports.map((q: any) => q.containerPort)).toEqual([wantPort, 29767]);
        expect(p.owner.spec.template.metadata.annotations["prometheus.io/port"]).toBe("29767");
        expect(c.startupProbe.periodSeconds).toBe(5);
        // The socket probegate serves sits in a mounted directory.
        const sock = new URL(flags.get("csi-endpoint")!).pathname;
        expect(c.volumeMounts.some((m: any) => path.dirname(sock) === m.mountPath)).toBe(true);
        expect(c.image).not.toBe("probegate"); // the kustomization's images: applied
        expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
      }
    });

    it("node: host procfs/sysfs are mounted where --path.* point; nsenter has hostPID and privilege", () => {
      const ds = byKind("DaemonSet")[0]!;
      const spec = ds.spec.template.spec;
      const c = spec.containers.find(isProbegate);
      const flags = flagsOf(c.args);
      const hostPathAt = (dir: string) => {
        const m = c.volumeMounts.find((m: any) => m.mountPath === dir);
        expect(m, dir).toBeTruthy();
        expect(m.readOnly).toBe(true);
        return spec.volumes.find((v: any) => v.name === m.name).hostPath?.path;
      };
      // Fail closed on the shipped set: --require-checks names exactly the plugins the ConfigMap carries.
      expect(flags.get("require-checks")!.split(",").sort()).toEqual(listedPlugins().map((f) => f.replace(/\.wasm$/, "")).sort());
      expect(hostPathAt(flags.get("path.procfs")!)).toBe("/proc");
      expect(hostPathAt(flags.get("path.sysfs")!)).toBe("/sys");
      const prefix = flags.get("command-prefix")!.split(/\s+/);
      expect(prefix[0]).toBe("nsenter");
      expect(prefix.slice(1, 3)).toEqual(["--target", "1"]);
      expect(prefix).toContain("--mount");
      expect(prefix.at(-1)).toBe("--");
      expect(spec.hostPID).toBe(true);
      expect(c.securityContext.privileged).toBe(true);
      expect(spec.hostNetwork).toBe(true);
      expect(spec.dnsPolicy).toBe("ClusterFirstWithHostNet");
      expect(spec.tolerations).toContainEqual({ operator: "Exists" });
    });

    it("controller: probegate runs as non-root with no privilege", () => {
      const dep = byKind("Deployment")[0]!;
      const spec = dep.spec.template.spec;
      const c = spec.containers.find(isProbegate);
      expect(spec.hostPID ?? false).toBe(false);
      expect(spec.hostNetwork ?? false).toBe(false);
      expect(spec.securityContext.runAsNonRoot).toBe(true);
      expect(spec.securityContext.runAsUser).toBeGreaterThan(0);
      expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
      expect(c.securityContext.capabilities.drop).toEqual(["ALL"]);
      expect(flagsOf(c.args).has("command-prefix")).toBe(false);
    });

    it("one driver name and one kubelet root everywhere: CSIDriver, settings, env, kubelet plugin dir, registrar", () => {
      const settings = byKind("ConfigMap").find((c) => c.metadata.name === "probegate-settings")!;
      const name = settings.data.driverName;
      const kubeletDir = settings.data.kubeletDir;
      expect(kubeletDir).toBe("/var/lib/kubelet");
      const drivers = byKind("CSIDriver");
      expect(drivers).toHaveLength(target === "base" ? 0 : 1);
      for (const d of drivers) {
        expect(d.metadata.name).toBe(name);
        // The Azure Lustre driver's own values.
        expect(d.spec).toMatchObject({ attachRequired: false, podInfoOnMount: true, fsGroupPolicy: "File" });
      }
      if (target !== "base") expect(name).not.toBe("azurelustre.csi.azure.com"); // the overlay's value won
      for (const p of pods(docs)) {
        for (const c of containersOf(p.spec)) {
          const env = (c.env ?? []).find((e: any) => e.name === "DRIVER_NAME");
          if (env) expect(env.value, c.name).toBe(name);
          if (isProbegate(c)) expect(expand(flagsOf(c.args).get("driver-name")!, c)).toBe(name);
        }
      }
      const spec = byKind("DaemonSet")[0]!.spec.template.spec;
      const sockDir = spec.volumes.find((v: any) => v.name === "socket-dir").hostPath.path;
      expect(sockDir).toBe(`${kubeletDir}/plugins/${name}`);
      expect(spec.volumes.find((v: any) => v.name === "registration-dir").hostPath.path).toBe(`${kubeletDir}/plugins_registry`);
      expect(spec.volumes.find((v: any) => v.name === "mountpoint-dir").hostPath.path).toBe(`${kubeletDir}/pods`);
      const reg = spec.containers.find((c: any) => c.name === "node-driver-registrar");
      const regFlags = flagsOf(reg.args);
      expect(expand(regFlags.get("kubelet-registration-path")!, reg)).toBe(`${sockDir}/csi.sock`);
      const csiMount = reg.volumeMounts.find((m: any) => m.name === "socket-dir").mountPath;
      expect(regFlags.get("csi-address")).toBe(`${csiMount}/csi.sock`);
      expect(reg.volumeMounts.find((m: any) => m.name === "registration-dir").mountPath).toBe("/registration");
      const driverSock = new URL(spec.containers.find((c: any) => c.name === "lustre-csi-driver").env.find((e: any) => e.name === "CSI_ENDPOINT").value).pathname;
      expect(driverSock).toBe(`${csiMount}/csi.sock`);
      const lp = spec.containers.find((c: any) => c.name === "liveness-probe");
      expect(flagsOf(lp.args).get("csi-address")).toBe(driverSock);
      // The livenessprobe sidecar's port is declared on the driver container, whose livenessProbe uses it.
      const lpPort = Number(flagsOf(lp.args).get("http-endpoint")!.split(":").at(-1));
      const drv = spec.containers.find((c: any) => c.name === "lustre-csi-driver");
      expect(drv.ports.find((q: any) => q.name === drv.livenessProbe.httpGet.port).containerPort).toBe(lpPort);
      const pgPorts = spec.containers.find(isProbegate).ports.map((q: any) => q.containerPort);
      expect(pgPorts).not.toContain(lpPort); // hostNetwork: two listeners on one node port would clash
      // kubelet is the sidecar's only caller: it listens on loopback, like probegate's probe port.
      expectLoopbackHealthPorts(spec);
    });

    it("the plugin ConfigMap, its volume, its mount and --plugins-dir agree", () => {
      const cm = byKind("ConfigMap").find((c) => c.metadata.name.startsWith("probegate-plugins"))!;
      expect(cm.metadata.name, "hash-suffixed, so a change rolls out through the pod template").toMatch(/^probegate-plugins-[a-z0-9]{10}$/);
      expect(Object.keys(cm.data ?? {})).toEqual(expect.arrayContaining(listedPluginFiles()));
      const dockerfile = readFileSync(path.join(DEPLOY, "Dockerfile"), "utf8");
      for (const p of pods(docs)) {
        const vol = p.spec.volumes.find((v: any) => v.configMap?.name === cm.metadata.name);
        expect(vol, p.owner.kind).toBeTruthy();
        const c = p.spec.containers.find(isProbegate);
        const mount = c.volumeMounts.find((m: any) => m.name === vol.name);
        const dirs = c.args.filter((a: string) => a.startsWith("--plugins-dir=")).map((a: string) => a.slice("--plugins-dir=".length));
        // The image's bundled set first, the ConfigMap after it (it adds to and overrides the image's).
        expect(dirs).toEqual(["/etc/probegate/plugins", mount.mountPath]);
        expect(dockerfile).toContain(`COPY --from=build /src/dist/plugins/*.wasm ${dirs[0]}/`);
        expect(c.volumeMounts.some((m: any) => m.mountPath === dirs[0]), "nothing hides the image's plugins").toBe(false);
        expect(mount.subPath).toBeUndefined(); // subPath mounts never see ConfigMap updates
        expect(mount.readOnly).toBe(true);
      }
    });

    it("the plugin ConfigMap fits the 1 MiB object limit and client-side apply's 256 KiB annotation", () => {
      const cm = byKind("ConfigMap").find((c) => c.metadata.name.startsWith("probegate-plugins"))!;
      const json = JSON.stringify(cm).length;
      expect(json).toBeLessThan(256 * 1024 - 4096);
    });
  });
}

describe("kubelet root directory", () => {
  it("an overlay that moves kubelet's root moves every host path under it and the registration path", () => {
    const root = "/var/lib/k0s/kubelet";
    const { docs } = render("overlays/k0s", {
      "overlays/k0s/kustomization.yaml": [
        "apiVersion: kustomize.config.k8s.io/v1beta1",
        "kind: Kustomization",
        "resources: [../../base]",
        "configMapGenerator:",
        "  - name: probegate-settings",
        "    behavior: merge",
        `    literals: [kubeletDir=${root}, driverName=lustre.csi.example.com]`,
        "components: [../../components/driver-name, ../../components/kubelet-dir]",
        "",
      ].join("\n"),
    });
    const spec = docs.find((d) => d.kind === "DaemonSet")!.spec.template.spec;
    const hostPath = (n: string) => spec.volumes.find((v: any) => v.name === n).hostPath.path;
    expect(hostPath("socket-dir")).toBe(`${root}/plugins/lustre.csi.example.com`);
    expect(hostPath("registration-dir")).toBe(`${root}/plugins_registry`);
    expect(hostPath("mountpoint-dir")).toBe(`${root}/pods`);
    const reg = spec.containers.find((c: any) => c.name === "node-driver-registrar");
    expect(expand(flagsOf(reg.args).get("kubelet-registration-path")!, reg)).toBe(`${root}/plugins/lustre.csi.example.com/csi.sock`);
    // Nothing else under the default root is left behind.
    expect(JSON.stringify(docs)).not.toContain("/var/lib/kubelet");
  });
});
