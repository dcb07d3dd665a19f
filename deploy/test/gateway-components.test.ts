// The gateway-mode components' node DaemonSet patches are generated from one
// sidecar definition and a table of per-driver facts
// (deploy/kustomize/generate-gateway-components.mjs). The checked-in patches
// must be what the generator writes, a hand edit must be caught, and the base
// node DaemonSet's probegate container (written by hand: its argument order and
// volume names are the standalone layout's) must keep the sidecar's probes,
// resources and check settings.
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { byName } from "./lib/gateway.js";
import { KUSTOMIZE_DIR } from "./lib/paths.js";
import { render, renderDeploy, type K8sObject } from "./lib/render.js";
import { flagsOf } from "./lib/workloads.js";

const GENERATOR = path.join(KUSTOMIZE_DIR, "generate-gateway-components.mjs");
// A plain ES module: imported by path, so its exports are untyped.
const { SIDECAR, DRIVERS } = (await import(GENERATOR)) as { SIDECAR: any; DRIVERS: any[] };

const check = (script: string) => spawnSync(process.execPath, [script, "--check"], { encoding: "utf8" });

describe("generate-gateway-components.mjs", () => {
  it("the checked-in patches are what the generator writes from its table", () => {
    const r = check(GENERATOR);
    expect(r.status, r.stderr).toBe(0);
  });

  it("--check fails, naming the file, when a patch was edited by hand", () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), "probegate-gen-"));
    try {
      cpSync(KUSTOMIZE_DIR, tmp, { recursive: true });
      const file = path.join(tmp, "components/hpe-lustre-gateway/node-daemonset-patch.yaml");
      writeFileSync(file, readFileSync(file, "utf8").replace("failureThreshold: 24", "failureThreshold: 25"));
      const r = check(path.join(tmp, "generate-gateway-components.mjs"));
      expect(r.status).toBe(1);
      expect(r.stderr).toContain("hpe-lustre-gateway/node-daemonset-patch.yaml");
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it("has one row per gateway component directory, each a Component patching the DaemonSet it names", () => {
    for (const d of DRIVERS) {
      const k = parse(readFileSync(path.join(KUSTOMIZE_DIR, "components", d.component, "kustomization.yaml"), "utf8"));
      expect(k.kind, d.component).toBe("Component");
      expect(k.patches.map((p: any) => p.path)).toContain("node-daemonset-patch.yaml");
      const patch = parse(readFileSync(path.join(KUSTOMIZE_DIR, "components", d.component, "node-daemonset-patch.yaml"), "utf8"));
      expect(byName(patch.spec.template.spec.containers, "probegate").args).toContain(`--driver-name=${d.driverName}`);
    }
  });
});

describe("the base node DaemonSet and gateway-mode keep the sidecar's settings", () => {
  const probegateOf = (docs: K8sObject[]) =>
    byName(docs.find((o) => o.kind === "DaemonSet" && o.metadata.name === "probegate-node")!.spec.template.spec.containers, "probegate");
  let base: any;
  let gateway: any;
  beforeAll(() => {
    base = probegateOf(render("base").docs);
    gateway = probegateOf(renderDeploy("gateway-mode").docs);
  });

  it("probes, resources and the read-only privileged security context", () => {
    for (const kind of ["startupProbe", "livenessProbe", "readinessProbe"] as const) {
      const { path: p, ...timing } = SIDECAR[kind];
      expect(base[kind].httpGet.path, kind).toBe(p);
      expect({ ...base[kind], httpGet: undefined }, kind).toEqual({ ...timing, httpGet: undefined });
    }
    expect(base.resources).toEqual(SIDECAR.resources);
    expect(base.securityContext).toEqual({ privileged: true, runAsUser: 0, readOnlyRootFilesystem: true });
  });

  it("the required checks, the check interval and the log level; in gateway mode the upstream deadline cap too", () => {
    for (const c of [base, gateway]) {
      const f = flagsOf(c.args);
      expect(f.get("require-checks")).toBe(SIDECAR.requireChecks);
      expect(f.get("check-interval")).toBe(SIDECAR.checkInterval);
      expect(f.get("log-level")).toBe(SIDECAR.logLevel);
    }
    const f = flagsOf(gateway.args);
    expect(f.get("upstream-timeout-cap")).toBe(SIDECAR.upstreamTimeoutCap);
    expect(f.get("upstream")).toBe(SIDECAR.driverSocket);
    expect(f.get("csi-endpoint")).toBe(SIDECAR.csiSocket);
  });
});
