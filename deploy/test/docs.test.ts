// The deployment manual (docs/deploy.md; deploy/README.md keeps the map of
// the deploy/ tree and points to it) and the dashboard: links resolve, the required sections are
// there, and every metric they name is one probegate exports.
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { BUILT, DEPLOY, NOT_BUILT_MESSAGE, REPO } from "./lib/paths.js";

const DOC = path.join(REPO, "docs/deploy.md");
const readme = readFileSync(DOC, "utf8");
const dashboard = JSON.parse(readFileSync(path.join(DEPLOY, "grafana/probegate-dashboard.json"), "utf8"));

// The metric families probegate documents (prom-client; histograms add _bucket/_sum/_count).
const METRICS = [
  "probegate_probe_requests_total", "probegate_ready", "probegate_live", "probegate_check_status",
  "probegate_check_duration_seconds", "probegate_check_runs_total", "probegate_source_executions_total",
  "probegate_source_duration_seconds", "probegate_source_timeouts_total", "probegate_source_errors_total",
  "probegate_plugin_loads_total", "probegate_plugin_refusals_total", "probegate_plugin_quarantines_total",
  "probegate_plugins_loaded", "probegate_plugins_refused", "probegate_plugins_quarantined",
  "probegate_plugin_quarantine_retries_total", "probegate_plugin_quarantined", "probegate_plugin_refused", "probegate_build_info",
  "probegate_edge_rejected_total", "probegate_fast_path_requests_total",
  "probegate_upstream_requests_total", "probegate_upstream_errors_total", "probegate_upstream_request_duration_seconds",
  "probegate_upstream_gated_total", "probegate_upstream_probe_total", "probegate_upstream_connected",
  "probegate_upstream_driver_name_mismatch_total", "probegate_upstream_driver_name_match",
  "probegate_kube_requests_total", "probegate_kube_condition_status", "probegate_kube_taint_present",
  "probegate_kube_last_successful_write_timestamp_seconds", "probegate_kube_out_of_sync",
  "probegate_storage_health", "probegate_volume_health", "probegate_volume_health_entries",
  "probegate_volume_health_entries_dropped", "probegate_storage_events_total", "probegate_check_evaluations_total",
  "probegate_command_spawner_restarts_total", "probegate_command_spawner_state",
  "probegate_volume_operations_pending", "probegate_volume_operations_stuck", "probegate_volume_operation_oldest_pending_seconds",
  "probegate_volume_operations_untracked", "probegate_unstick_steps_total",
];
const family = (name: string) => name.replace(/_(bucket|sum|count)$/, "");
const exprs: string[] = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr));
// The alerting rules name metrics too; some (per-file refusals) only they use.
const ruleText = readFileSync(path.join(DEPLOY, "prometheus/probegate-rules.yaml"), "utf8");

function jsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    return statSync(p).isDirectory() ? jsFiles(p) : p.endsWith(".js") ? [p] : [];
  });
}

describe("docs/deploy.md", () => {
  it("covers install, verify, plugins (configuration, rollout, canary, image volume), metrics and uninstall", () => {
    for (const h of ["## Install", "## Verify", "## Plugins, configuration and plugin directories", "### Rolling out plugin changes",
      "### Add a plugin to a running cluster", "### Canary", "### Size limits, and plugins from an image", "## Metrics", "## Uninstall"]) {
      expect(readme).toContain(h);
    }
    for (const s of ["kubectl -n probegate get pods", "kubectl -n probegate port-forward", "/readyz?verbose", "grpcurl -plaintext -unix",
      "create configmap probegate-plugins --from-file=", "--dry-run=client -o yaml | kubectl apply", "emptyDir", "The probegate numbers come from `bench/`",
      "kubectl delete -k", "npx vitest run deploy/test", "ImageVolume", "1 MiB", "components/plugins-in-place", "Dockerfile.plugins"]) {
      expect(readme, s).toContain(s);
    }
  });

  it("every relative link points at a file in the tree", () => {
    const links = [...readme.matchAll(/\]\(([^)#]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
    expect(links.length).toBeGreaterThan(5);
    for (const l of links) expect(existsSync(path.join(path.dirname(DOC), l)), l).toBe(true);
  });

  it("names only metrics probegate exports", () => {
    const named = [...readme.matchAll(/\bprobegate_[a-z_]+/g)].map((m) => family(m[0]));
    expect(new Set(named).size).toBeGreaterThanOrEqual(12);
    for (const n of named) expect(METRICS, n).toContain(n);
  });
});

describe("deploy/grafana/probegate-dashboard.json", () => {
  it("is a dashboard whose queries use only exported metrics", () => {
    expect(dashboard.uid).toBe("probegate");
    expect(exprs.length).toBeGreaterThan(10);
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\bprobegate_[a-z_]+/g)].map((m) => family(m[0]))));
    for (const n of used) expect(METRICS, n).toContain(n);
    // Every family appears on the dashboard or in an alert.
    const inRules = new Set([...ruleText.matchAll(/\bprobegate_[a-z_]+/g)].map((m) => family(m[0])));
    expect(METRICS.filter((n) => !used.has(n) && !inRules.has(n))).toEqual([]);
    const ids = dashboard.panels.map((p: any) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("the metric names are the ones the built gateway registers", () => {
    if (!BUILT) return console.warn(NOT_BUILT_MESSAGE);
    const source = jsFiles(path.join(REPO, "dist/gateway/src")).map((f) => readFileSync(f, "utf8")).join("\n");
    for (const n of METRICS) expect(source, n).toContain(`"${n}"`);
    // Histograms, so the dashboard's histogram_quantile over _bucket works.
    for (const e of exprs.filter((e) => e.includes("_bucket"))) expect(e).toMatch(/histogram_quantile\(/);
  });
});
