// The operators' kit (deploy/monitoring/README.md): the alerting rules pass
// promtool's checks and unit tests; the PrometheusRule component is the plain
// rules file, generated and rendered identical; the scrape configurations keep
// exactly the pods and port the conventions name; and every metric a rule or a
// dashboard panel names is one a running gateway exports, each mode run for
// real (the demo node, gateway mode before a fake CSI driver, Node reporting
// against a fake API server).
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { GetPluginInfoResponseSchema, NodeGetVolumeHealthRequestSchema } from "../../gateway/gen/csi/v1/csi_pb.js";
import { FakeCsiDriver, rawCall, unixClient } from "../../gateway/test/helpers/fake-csi-driver.js";
import { FakeKubeApi } from "../../gateway/test/helpers/fake-kube-api.js";
import { startGatewayProcess, tempDir, type GatewayProcess } from "../../gateway/test/helpers/gateway-process.js";
import { storagePlugin, volumePlugin } from "../../gateway/test/helpers/health-plugins.js";
import { BUILT, DEPLOY, NOT_BUILT_MESSAGE, REPO } from "./lib/paths.js";
import { render, type K8sObject } from "./lib/render.js";

const PROM = path.join(DEPLOY, "prometheus");
const STORAGE_OUTPUT = JSON.stringify({
  status: "fail",
  reason: "MdtUnreachable",
  message: "lustrefs: every MDT down",
  facts: {},
  health: [{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", message: "lustrefs: MDT0000 not FULL/IDLE for 95 s (DISCONN)", fs: "lustrefs" }],
  events: [{ reason: "Evicted", fs: "lustrefs", target: "lustrefs-MDT0000", at: 1764100000 }],
});
const RULES = path.join(PROM, "probegate-rules.yaml");
const rulesDoc = parse(readFileSync(RULES, "utf8"));
const rules: Array<{ alert: string; expr: string; for: string; labels: Record<string, string>; annotations: Record<string, string> }> =
  rulesDoc.groups.flatMap((g: any) => g.rules);
const dashboard = JSON.parse(readFileSync(path.join(DEPLOY, "grafana/probegate-dashboard.json"), "utf8"));

const PROMTOOL = spawnSync("promtool", ["--version"], { encoding: "utf8" }).status === 0;
const PROMTOOL_MISSING =
  "skipped: promtool is not installed. It comes with Debian's `prometheus` package " +
  "(`apt-get install prometheus`; .ci/run installs it); the alerting rules' checks and unit tests need it";
if (!PROMTOOL) console.warn(PROMTOOL_MISSING);

function promtool(...args: string[]): string {
  const r = spawnSync("promtool", args, { cwd: PROM, encoding: "utf8" });
  expect(r.status, `promtool ${args.join(" ")}:\n${r.stdout}${r.stderr}`).toBe(0);
  return r.stdout;
}

describe.skipIf(!PROMTOOL)("alerting rules under promtool", () => {
  it("pass `promtool check rules`", () => {
    expect(promtool("check", "rules", "probegate-rules.yaml")).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
  });

  it("pass their unit tests (`promtool test rules`): each alert fires when it should, and only then", () => {
    expect(promtool("test", "rules", "probegate-rules.test.yaml")).toMatch(/SUCCESS/);
    // Every alert has a test that expects it to fire.
    const tests = parse(readFileSync(path.join(PROM, "probegate-rules.test.yaml"), "utf8")).tests as any[];
    const firing = new Set(tests.flatMap((t) => t.alert_rule_test.filter((a: any) => a.exp_alerts.length > 0).map((a: any) => a.alertname)));
    expect([...firing].sort()).toEqual(rules.map((r) => r.alert).sort());
  });

  it("the unit tests can fail: a rule whose `for:` is shortened fails them", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "probegate-rules-"));
    try {
      writeFileSync(path.join(dir, "probegate-rules.yaml"), readFileSync(RULES, "utf8").replace("for: 15m", "for: 1m"));
      writeFileSync(path.join(dir, "probegate-rules.test.yaml"), readFileSync(path.join(PROM, "probegate-rules.test.yaml")));
      const r = spawnSync("promtool", ["test", "rules", "probegate-rules.test.yaml"], { cwd: dir, encoding: "utf8" });
      expect(r.status).not.toBe(0);
      expect(r.stdout + r.stderr).toMatch(/ProbegateNodeNotReady/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the promtool commands prometheus.yml's header gives work as written, from the repository's root", () => {
    const header = readFileSync(path.join(PROM, "prometheus.yml"), "utf8").split("\n").filter((l) => l.startsWith("#"));
    const commands = header.map((l) => /^#   (promtool .*)$/.exec(l)?.[1]).filter((c): c is string => Boolean(c));
    expect(commands.length).toBeGreaterThan(0);
    for (const c of commands) {
      const r = spawnSync("promtool", c.split(" ").slice(1), { cwd: REPO, encoding: "utf8" });
      expect(r.status, `${c}:\n${r.stdout}${r.stderr}`).toBe(0);
    }
  });

  it("prometheus.yml passes `promtool check config` (its rules included)", () => {
    // Debian's promtool is built without Kubernetes service discovery, so the
    // check runs on a copy whose kubernetes_sd_configs is a static target;
    // the relabelling that needs the discovery is tested below.
    const dir = mkdtempSync(path.join(os.tmpdir(), "probegate-promcfg-"));
    try {
      const cfg = parse(readFileSync(path.join(PROM, "prometheus.yml"), "utf8"));
      for (const job of cfg.scrape_configs) {
        delete job.kubernetes_sd_configs;
        job.static_configs = [{ targets: ["127.0.0.1:29767"] }];
      }
      cfg.rule_files = [RULES];
      writeFileSync(path.join(dir, "prometheus.yml"), JSON.stringify(cfg));
      const r = spawnSync("promtool", ["check", "config", path.join(dir, "prometheus.yml")], { encoding: "utf8" });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/SUCCESS: \d+ rules found/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("every alert", () => {
  it("the runbook's relative links point at files in the tree", () => {
    const dir = path.join(DEPLOY, "monitoring");
    const links = [...readFileSync(path.join(dir, "README.md"), "utf8").matchAll(/\]\(([^)#]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(5);
    for (const l of links) expect(existsSync(path.join(dir, l)), l).toBe(true);
  });

  it("has a severity, a `for:`, a summary, a description naming the node, and a runbook section that exists", () => {
    const runbook = readFileSync(path.join(DEPLOY, "monitoring/README.md"), "utf8");
    const anchors = new Set([...runbook.matchAll(/^#+ (.+)$/gm)].map((m) => m[1]!.toLowerCase().replace(/[^a-z0-9 -]/g, "").replace(/ /g, "-")));
    for (const r of rules) {
      expect(["warning", "critical"], r.alert).toContain(r.labels.severity);
      expect(r.for, r.alert).toMatch(/^\d+m$/);
      expect(r.annotations.summary, r.alert).toBeTruthy();
      // The cluster-wide ones have no node of their own: they list them or have none.
      if (!["ProbegateNotScraped", "ProbegateCheckFailingFleetWide"].includes(r.alert)) expect(r.annotations.description, r.alert).toContain("$labels.node");
      const [file, anchor] = r.annotations.runbook_url!.split("#");
      expect(file).toBe("deploy/monitoring/README.md");
      expect(anchors, `${r.alert}: runbook section #${anchor}`).toContain(anchor);
      expect(runbook, `${r.alert}: severity and for: explained`).toMatch(new RegExp(`${r.alert}\\b[^\\n]*\\| ${r.labels.severity} \\| ${r.for} \\|`));
    }
  });
});

describe("components/prometheus-rules and components/podmonitor", () => {
  let docs: K8sObject[];
  beforeAll(() => {
    docs = render("overlays/test-monitoring", {
      "overlays/test-monitoring/kustomization.yaml":
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base]\n" +
        "components: [../../components/prometheus-rules, ../../components/podmonitor]\n",
    }).docs;
  });

  it("the checked-in PrometheusRule is what the generator makes of the plain rules file", () => {
    const r = spawnSync(process.execPath, [path.join(PROM, "generate-prometheusrule.mjs"), "--check"], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
  });

  it("renders a PrometheusRule whose groups equal the plain rules file's, in the overlay's namespace", () => {
    const rule = docs.find((d) => d.kind === "PrometheusRule")!;
    expect(rule.metadata.namespace).toBe("probegate");
    expect(docs.find((d) => d.kind === "PodMonitor")!.metadata.namespace).toBe("probegate");
    expect(rule.spec.groups).toEqual(rulesDoc.groups);
  });

  it("renders a PodMonitor for the label probegate.io/scrape and the port pg-metrics, in any namespace, with job and node labels", () => {
    const pm = docs.find((d) => d.kind === "PodMonitor")!;
    expect(pm.spec.namespaceSelector).toEqual({ any: true });
    expect(pm.spec.selector).toEqual({ matchLabels: { "probegate.io/scrape": "true" } });
    expect(pm.spec.podMetricsEndpoints).toHaveLength(1);
    const ep = pm.spec.podMetricsEndpoints[0];
    expect(ep.port).toBe("pg-metrics");
    expect(ep.path).toBe("/metrics");
    expect(ep.relabelings).toContainEqual({ action: "replace", targetLabel: "job", replacement: "probegate" });
    expect(ep.relabelings).toContainEqual({ action: "replace", sourceLabels: ["__meta_kubernetes_pod_node_name"], targetLabel: "node" });
  });

  it("the runbook's patch changes ProbegateNodeNotReady's `for:`", () => {
    const runbook = readFileSync(path.join(DEPLOY, "monitoring/README.md"), "utf8");
    const patch = /<!-- for-patch -->\n```yaml\n([\s\S]*?)```/.exec(runbook)?.[1];
    expect(patch, "the runbook shows the patch after <!-- for-patch -->").toBeTruthy();
    const overlay = (extra: string) => ({
      "overlays/test-for/kustomization.yaml":
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base]\n" +
        "components: [../../components/prometheus-rules]\n" + patch + extra,
    });
    const rule = render("overlays/test-for", overlay("")).docs.find((d) => d.kind === "PrometheusRule")!;
    expect(rule.spec.groups[0].rules[0]).toMatchObject({ alert: "ProbegateNodeNotReady", for: "30m" });
  });
});

// Prometheus's relabelling for the actions the scrape job uses: source label
// values joined with ";", the regex anchored at both ends.
function relabel(labels: Record<string, string>, configs: any[]): Record<string, string> | undefined {
  const out = { ...labels };
  for (const c of configs) {
    const value = (c.source_labels ?? []).map((l: string) => out[l] ?? "").join(c.separator ?? ";");
    const re = new RegExp(`^(?:${c.regex ?? "(.*)"})$`);
    const m = re.exec(value);
    if (c.action === "keep") {
      if (!m) return undefined;
    } else if (c.action === "replace") {
      if (m) out[c.target_label] = (c.replacement ?? "$1").replace(/\$(\d)/g, (_: string, i: string) => m[Number(i)] ?? "");
    } else throw new Error(`relabel action ${c.action} not modelled`);
  }
  return out;
}

describe("deploy/prometheus/prometheus.yml (Prometheus without the Operator)", () => {
  const job = parse(readFileSync(path.join(PROM, "prometheus.yml"), "utf8")).scrape_configs.find((j: any) => j.job_name === "probegate");
  // What role: pod discovery yields: one target per container port.
  const target = (label: string | undefined, port: string, extra: Record<string, string> = {}) => ({
    __address__: "10.0.0.7:29767",
    __meta_kubernetes_namespace: "kube-system",
    __meta_kubernetes_pod_name: "csi-azurelustre-node-abcde",
    __meta_kubernetes_pod_node_name: "node-a",
    __meta_kubernetes_pod_container_name: "probegate",
    __meta_kubernetes_pod_container_port_name: port,
    ...(label === undefined ? {} : { __meta_kubernetes_pod_label_probegate_io_scrape: label }),
    ...extra,
  });

  it("discovers pods in every namespace", () => {
    expect(job.kubernetes_sd_configs).toEqual([{ role: "pod" }]);
  });

  it("keeps the labelled pods' pg-metrics port only, and labels it with namespace, pod, container and node", () => {
    const kept = relabel(target("true", "pg-metrics"), job.relabel_configs);
    expect(kept).toMatchObject({ namespace: "kube-system", pod: "csi-azurelustre-node-abcde", container: "probegate", node: "node-a" });
    expect(relabel(target("true", "pg-probe"), job.relabel_configs)).toBeUndefined();
    expect(relabel(target("true", "healthz"), job.relabel_configs)).toBeUndefined();
    expect(relabel(target(undefined, "pg-metrics"), job.relabel_configs)).toBeUndefined();
    expect(relabel(target("false", "pg-metrics"), job.relabel_configs)).toBeUndefined();
  });
});

// ---- every metric named is exported ----

/** Metric names in a PromQL expression (series selectors, not functions or labels). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/\b((?:probegate|process|nodejs)_[a-z0-9_]+|up)\b(?=\s*[{[)\s]|$)/g)].map((m) => m[1]!);
}
/** Label matchers per metric in an expression: `name{a="x", b!~"y"}` → [name, [a, b]]. */
function matchers(expr: string): Array<[string, string[]]> {
  return [...expr.matchAll(/\b([a-z_:][a-z0-9_:]*)\{([^}]*)\}/g)].map((m) => [m[1]!, [...m[2]!.matchAll(/([a-z_]+)\s*(?:=~|!~|!=|=)/g)].map((x) => x[1]!)]);
}
// Labels the scrape adds to every series (prometheus.yml, the PodMonitor).
const TARGET_LABELS = new Set(["job", "instance", "namespace", "pod", "container", "node"]);

interface Scrape {
  samples: Map<string, Array<Record<string, string>>>;
  types: Set<string>;
  text: string;
}
function parseScrape(text: string): Scrape {
  const samples = new Map<string, Array<Record<string, string>>>();
  const types = new Set<string>();
  for (const line of text.split("\n")) {
    const t = /^# TYPE (\S+) (\S+)/.exec(line);
    if (t) {
      types.add(t[1]!);
      if (t[2] === "histogram") for (const s of ["_bucket", "_sum", "_count"]) types.add(t[1] + s);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? "").matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
    samples.set(m[1]!, [...(samples.get(m[1]!) ?? []), labels]);
  }
  return { samples, types, text };
}

describe.skipIf(!BUILT)("metrics the rules and the dashboard name, scraped from running gateways", () => {
  if (!BUILT) console.warn(NOT_BUILT_MESSAGE);
  const scrapes: Record<"demo" | "gateway" | "kube" | "storage", Scrape> = {} as any;
  const gateways: GatewayProcess[] = [];
  let driver: FakeCsiDriver | undefined;
  let api: FakeKubeApi | undefined;

  const exportedIn = (name: string, s: Scrape) => (s.samples.get(name)?.length ?? 0) > 0;
  const scrape = async (gw: GatewayProcess) => parseScrape(await (await fetch(`http://${gw.http}/metrics`)).text());
  const until = async (what: string, f: () => Promise<boolean>) => {
    for (const start = Date.now(); Date.now() - start < 30_000; await new Promise((r) => setTimeout(r, 100))) if (await f()) return;
    throw new Error(`timed out waiting for ${what}`);
  };

  beforeAll(async () => {
    // The demo node, as `npm start` runs it, after kubelet-like traffic on every transport.
    const demo = await startGatewayProcess(["--demo=healthy"]);
    gateways.push(demo);
    await until("the demo's first check round", async () => (await fetch(`http://${demo.http}/readyz`)).status === 200);
    await fetch(`http://${demo.http}/csi.v1.Identity/Probe`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    const c = unixClient(demo.socket);
    await rawCall(c, "/csi.v1.Identity/Probe", new Uint8Array());
    c.close();
    scrapes.demo = await scrape(demo);

    // Gateway mode before a fake driver that calls itself by another name, on a
    // demo node with an NI down: a stage call is gated, an unstage forwarded.
    const dir = tempDir("probegate-monitoring-driver-");
    driver = await new FakeCsiDriver(path.join(dir, "driver.sock")).start();
    driver.script("/csi.v1.Identity/GetPluginInfo", {
      message: toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: "other.csi.example.com", vendorVersion: "v1" })),
    });
    const gw = await startGatewayProcess([`--upstream=unix://${driver.socketPath}`, "--demo=ni-down", "--driver-name=lustre.csi.example.com"]);
    gateways.push(gw);
    await until("the driver's name", async () => (await scrape(gw)).samples.has("probegate_upstream_driver_name_match"));
    await until("the not-ready verdict", async () => (await fetch(`http://${gw.http}/readyz`)).status === 503);
    const g = unixClient(gw.socket);
    await rawCall(g, "/csi.v1.Node/NodeStageVolume", new Uint8Array());
    await rawCall(g, "/csi.v1.Node/NodeUnstageVolume", new Uint8Array());
    await rawCall(g, "/csi.v1.Identity/Probe", new Uint8Array());
    g.close();
    scrapes.gateway = await scrape(gw);

    // Node reporting against a fake API server.
    api = await new FakeKubeApi({ tokens: { "token-a": "node-a" } }).start();
    api.addNode("node-a");
    const kubeconfig = path.join(tempDir("probegate-monitoring-kube-"), "kubeconfig");
    writeFileSync(kubeconfig, api.kubeconfig("token-a"));
    const kube = await startGatewayProcess(
      ["--demo=healthy", `--kubeconfig=${kubeconfig}`, "--node-condition=lustre.csi.example.com/NodeReady", "--node-taint=lustre.csi.example.com/agent-not-ready:NoSchedule", "--node-taint-wait-csinode=false"],
      { env: { NODE_NAME: "node-a" } },
    );
    gateways.push(kube);
    await until("the condition written", async () => api!.condition("node-a", "lustre.csi.example.com/NodeReady")?.status === "True");
    scrapes.kube = await scrape(kube);

    // Storage and volume health: a storage check that
    // reports an unreachable MDT and an eviction every round, and a volume
    // check over the host's statfs prober (a fake stat that fails like an
    // evicted client), for a volume kubelet-like asks about.
    const node = tempDir("probegate-monitoring-storage-");
    const plugins = path.join(node, "plugins");
    mkdirSync(plugins);
    writeFileSync(path.join(plugins, "st.wasm"), await storagePlugin("st", "kernel.release", { unreachable: STORAGE_OUTPUT }));
    writeFileSync(path.join(plugins, "vol.wasm"), await volumePlugin("vol"));
    const bin = path.join(node, "bin");
    mkdirSync(bin);
    writeFileSync(path.join(bin, "stat"), "#!/bin/sh\nfor p; do :; done\necho \"stat: cannot read file system information for '$p': Cannot send after transport endpoint shutdown\" >&2\nexit 1\n");
    chmodSync(path.join(bin, "stat"), 0o755);
    const procfs = path.join(node, "proc");
    mkdirSync(path.join(procfs, "sys", "kernel"), { recursive: true });
    mkdirSync(path.join(procfs, "1"));
    writeFileSync(path.join(procfs, "sys", "kernel", "osrelease"), "unreachable\n");
    writeFileSync(path.join(procfs, "1", "mounts"), "");
    writeFileSync(path.join(procfs, "mounts"), "");
    const st = await startGatewayProcess(
      [`--plugins-dir=${plugins}`, `--path.procfs=${procfs}`, `--path.sysfs=${node}`, "--check-interval=1s", `--kubelet-dir=${path.join(node, "kubelet")}`],
      { env: { PATH: `${bin}:${process.env.PATH ?? ""}` } },
    );
    gateways.push(st);
    const volumeRequest = toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, {
      volumeId: "vol-1",
      volumePublishPath: path.join(node, "kubelet/pods/p1/volumes/kubernetes.io~csi/pv-one/mount"),
    }));
    const sc = unixClient(st.socket);
    await rawCall(sc, "/csi.v1.Node/NodeGetVolumeHealth", volumeRequest);
    await until("storage and volume entries, and an eviction counted", async () => {
      const s = await scrape(st);
      return ["probegate_storage_health", "probegate_volume_health_entries", "probegate_storage_events_total"].every((n) => exportedIn(n, s));
    });
    sc.close();
    scrapes.storage = await scrape(st);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(gateways.map((g) => g.stop()));
    await driver?.stop();
    await api?.close();
  });


  it("the build info carries version, Node.js version and plugin ABI", () => {
    const [info] = scrapes.demo.samples.get("probegate_build_info") ?? [];
    expect(info).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), node_version: process.version, abi: "1,2" });
  });

  it("every panel has data in the demo (gateway-mode, Node reporting and storage health panels: in that mode), and names only exported metrics", () => {
    const panels = dashboard.panels.filter((p: any) => p.type !== "row");
    expect(panels.length).toBeGreaterThan(25);
    const empty: string[] = [];
    for (const p of panels) {
      const names: string[] = p.targets.flatMap((t: any) => metricNames(t.expr));
      expect(names.length, p.title).toBeGreaterThan(0);
      const mode = names.some((n) => n.startsWith("probegate_upstream_"))
        ? "gateway"
        : names.some((n) => n.startsWith("probegate_kube_"))
          ? "kube"
          : names.some((n) => /^probegate_(storage|volume)_/.test(n))
            ? "storage"
            : "demo";
      for (const n of names) expect(scrapes[mode].types.has(n), `${p.title}: ${n} is exported in ${mode} mode`).toBe(true);
      if (!names.some((n) => exportedIn(n, scrapes[mode]))) empty.push(`${p.title} (${mode})`);
    }
    expect(empty, "panels without data").toEqual([]);
  });

  it("every metric a rule names is exported (up is Prometheus's own), with the labels the rule matches on", () => {
    for (const r of rules) {
      for (const n of metricNames(r.expr).filter((x) => x !== "up")) {
        expect(Object.values(scrapes).some((s) => s.types.has(n)), `${r.alert}: ${n} is exported`).toBe(true);
      }
      for (const [n, labels] of matchers(r.expr)) {
        if (n === "up") continue;
        const seen = Object.values(scrapes).flatMap((s) => s.samples.get(n) ?? []);
        for (const l of labels.filter((x) => !TARGET_LABELS.has(x))) {
          expect(seen.some((s) => l in s), `${r.alert}: ${n} carries the label ${l}`).toBe(true);
        }
      }
    }
  });

  it("the gateway-mode and kube series say what the alerts look for", () => {
    expect(scrapes.gateway.samples.get("probegate_upstream_driver_name_match")).toEqual([
      { upstream_name: "other.csi.example.com", driver_name: "lustre.csi.example.com" },
    ]);
    // 0: the driver's name differs from --driver-name (what ProbegateUpstreamDriverNameMismatch looks for).
    expect(scrapes.gateway.text).toMatch(/^probegate_upstream_driver_name_match\{[^}]*\} 0$/m);
    expect(scrapes.gateway.samples.get("probegate_upstream_gated_total")).toEqual([{ method: expect.stringContaining("NodeStageVolume") }]);
    expect(scrapes.demo.samples.get("probegate_edge_rejected_total")!.map((l) => l.reason)).toEqual(expect.arrayContaining(["inflight", "idle_timeout", "connections"]));
    expect(scrapes.demo.samples.get("probegate_check_status")!.every((l) => l.severity === "required")).toBe(true);
  });
});
