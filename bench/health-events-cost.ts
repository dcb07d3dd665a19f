// Storage and volume health's cost to the API server (issue #30): the Events
// probegate writes for health transitions, per node, extrapolated to 5,000
// nodes with 10 volumes each. The node reporter runs in this process on
// probegate's own client against the tests' fake API server (same semantics,
// plain HTTP), with --node-condition on; the health view is the tests' one,
// changed the way the engine changes it: every round notifies for the node's
// storage and every volume (the engine notifies after a change; here every
// round does, the worst case for a consumer that must not write without one).
//
// Phases (ROUNDS rounds each, a round every ROUND_MS):
//   steady       10 published volumes and one degraded file system, nothing changes;
//   eviction     once: every volume and the node go adverse, then recover;
//   flapping     the same eviction and recovery every 4 rounds (joined to the first Events).
// Run: `npm run build && node dist/bench/health-events-cost.js`.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { FakeKubeApi, type RequestRecord } from "../gateway/test/helpers/fake-kube-api.js";
import { TestHealthView } from "../gateway/test/helpers/test-health-view.js";
import type { ReadinessSnapshot } from "../gateway/src/engine/readiness.js";
import { createKubeApi } from "../gateway/src/kube/client/api.js";
import { loadClientConfig } from "../gateway/src/kube/client/kubeconfig.js";
import { KubeMetrics } from "../gateway/src/kube/metrics.js";
import { NodeReporter } from "../gateway/src/kube/reporter.js";
import { createLogger } from "../gateway/src/observability/logger.js";
import { Metrics } from "../gateway/src/observability/metrics.js";
import { isMain } from "./lib/main.js";

const VOLUMES = 10;
const NODES = 5000;
const ROUND_MS = Number(process.env.HEALTH_BENCH_ROUND_MS ?? 100);
const ROUNDS = Number(process.env.HEALTH_BENCH_ROUNDS ?? 60);
/** The engine's default round is 5 s: per-hour figures scale the rounds run to a real hour of them. */
const REAL_ROUND_S = 5;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const target = (pv: string) => `/var/lib/kubelet/pods/7d0c0e62-0000-4000-8000-00000000000${pv.slice(-1)}/volumes/kubernetes.io~csi/${pv}/mount`;

export interface HealthCostRow {
  phase: string;
  rounds: number;
  writes: number;
  creates: number;
  patches: number;
  /** Writes per node per hour of 5 s rounds, and for 5,000 nodes per second. */
  perNodeHour: number;
  fleetPerSecond: number;
}

export async function healthEventsCost(): Promise<HealthCostRow[]> {
  const api = await new FakeKubeApi({ tokens: { t: "node-a" } }).start();
  api.addNode("node-a");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-health-bench-"));
  const kubeconfig = path.join(dir, "kubeconfig");
  fs.writeFileSync(kubeconfig, api.kubeconfig("t"));
  const km = new KubeMetrics(new Metrics({ processMetrics: false }));
  const client = createKubeApi({ nodeName: "node-a", config: loadClientConfig({ files: [kubeconfig], env: {} }), impersonateNode: false, requestTimeoutMs: 5000, onRequest: (r) => km.requests.inc(r), userAgent: "bench" });
  const view = new TestHealthView();
  const snap = { phase: "ready", ready: true, live: true, conditions: [], refusals: [], generation: 1 } as unknown as ReadinessSnapshot;
  const reporter = new NodeReporter({
    api: client,
    spec: {
      nodeName: "node-a", condition: "lustre.csi.example.com/NodeReady", conditionPerCheck: false, taintMode: "bootstrap-only", waitForCSINode: false, impersonateNode: false,
      // The default write budget (burst 5, then one per 10 s) scaled to the bench's rounds.
      timings: { heartbeatMs: 3_600_000, backoffCapMs: 1000, resyncMs: 3_600_000, writeIntervalMs: (10_000 * ROUND_MS) / (REAL_ROUND_S * 1000), requestTimeoutMs: 5000 },
    },
    readiness: { snapshot: () => snap, subscribe: () => () => {} },
    storageHealth: view,
    driverName: () => "lustre.csi.example.com",
    logger: createLogger("silent"),
    metrics: km,
  });
  const ids = Array.from({ length: VOLUMES }, (_, i) => `vol-${i}`);
  const healthy = () => {
    view.setStorage([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable", fs: "scratch" }]);
    for (const id of ids) view.setVolume({ volumeId: id, targetPath: target(`pv-${id}`), origin: "publish" }, []);
  };
  const evicted = () => {
    view.setStorage([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable", fs: "scratch" }, { status: "STORAGE_UNREACHABLE", reason: "Evicted", fs: "lustrefs" }]);
    for (const id of ids) view.setVolume({ volumeId: id, targetPath: target(`pv-${id}`), origin: "publish" }, [{ status: "INACCESSIBLE", reason: "Evicted", fs: "lustrefs" }]);
  };
  const round = () => view.notify({ storage: true, volumes: ids });

  healthy();
  reporter.start();
  // Start-up: the condition, the degraded fs's Event. Not counted.
  await sleep(20 * ROUND_MS);
  const rows: HealthCostRow[] = [];
  const phase = async (name: string, step: (i: number) => void) => {
    const from = api.requests.length;
    for (let i = 0; i < ROUNDS; i++) {
      step(i);
      round();
      await sleep(ROUND_MS);
    }
    // Let the write budget drain what the phase queued.
    for (let i = 0; i < 200 && (await drained()) === false; i++) await sleep(ROUND_MS);
    const recs: RequestRecord[] = api.requests.slice(from).filter((r) => r.method !== "GET" && r.path.includes("/events"));
    const perNodeHour = (recs.length * 3600) / (ROUNDS * REAL_ROUND_S);
    rows.push({
      phase: name,
      rounds: ROUNDS,
      writes: recs.length,
      creates: recs.filter((r) => r.method === "POST").length,
      patches: recs.filter((r) => r.method === "PATCH").length,
      perNodeHour,
      fleetPerSecond: (perNodeHour * NODES) / 3600,
    });
  };
  let last = -1;
  const drained = async () => {
    const n = api.requests.length;
    const done = n === last;
    last = n;
    return done;
  };
  await phase("steady: 10 volumes, one degraded fs, nothing changes", () => {});
  await phase("one eviction of the fs (node + 10 PVs), then recovery", (i) => (i === 0 ? evicted() : i === 4 ? healthy() : undefined));
  await phase("flapping: eviction and recovery every 4 rounds", (i) => (i % 4 === 0 ? evicted() : i % 4 === 2 ? healthy() : undefined));
  await reporter.stop();
  client.close();
  await api.close();
  fs.rmSync(dir, { recursive: true, force: true });
  return rows;
}

export function healthCostTable(rows: HealthCostRow[]): string {
  const out = [
    `| one node (${VOLUMES} volumes), ${ROUNDS} rounds | Event writes | creates | patches | per node per hour (5 s rounds) | ${NODES.toLocaleString("en")} nodes: writes/s |`,
    "|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    // A one-off transition is a count per occurrence, not a rate.
    if (r.phase.startsWith("one ")) out.push(`| ${r.phase} | ${r.writes} | ${r.creates} | ${r.patches} | ${r.writes} per occurrence | ${(r.writes * NODES).toLocaleString("en")} per fleet-wide occurrence, at most 5 then 0.1/s per node |`);
    else out.push(`| ${r.phase} | ${r.writes} | ${r.creates} | ${r.patches} | ${r.perNodeHour.toFixed(0)} | ${r.fleetPerSecond.toFixed(1)} |`);
  }
  return out.join("\n");
}

if (isMain(import.meta.url)) {
  healthEventsCost().then(
    (rows) => {
      console.log(healthCostTable(rows));
      process.exit(0);
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
