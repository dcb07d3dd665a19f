// Storage and volume health reported to Kubernetes: Events on the Node and on
// PersistentVolumes, written on transitions only and aggregated, and the
// opt-in storage condition and taint. The node reporter runs in this process
// on probegate's own client, against the fake API server over HTTP (its RBAC
// and event validation as the real one's); the health view is a small
// in-test implementation of StorageHealthView (the engine's is another branch's).
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ReadinessSnapshot, ReadinessProvider } from "../src/engine/readiness.js";
import type { VolumeRef } from "../src/storage-health/view.js";
import { createKubeApi } from "../src/kube/client/api.js";
import { pvNameFromTargetPath } from "../src/kube/health-events.js";
import { loadClientConfig } from "../src/kube/client/kubeconfig.js";
import { KubeMetrics } from "../src/kube/metrics.js";
import { NodeReporter } from "../src/kube/reporter.js";
import type { KubeReportingSpec } from "../src/kube/spec.js";
import { createLogger } from "../src/observability/logger.js";
import { Metrics } from "../src/observability/metrics.js";
import { FakeKubeApi } from "./helpers/fake-kube-api.js";
import { startGatewayProcess, tempDir } from "./helpers/gateway-process.js";
import { storagePlugin } from "./helpers/health-plugins.js";
import { TestHealthView } from "./helpers/test-health-view.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function until<T>(what: string, f: () => T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    const v = f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}
const settle = (ms = 400) => new Promise((r) => setTimeout(r, ms));

const READY: ReadinessSnapshot = { phase: "ready", ready: true, live: true, conditions: [], refusals: [], generation: 1 } as unknown as ReadinessSnapshot;
const readiness: ReadinessProvider = { snapshot: () => READY, subscribe: () => () => {} };

const TARGET = (pv: string) => `/var/lib/kubelet/pods/0b6e4c1a-1111-2222-3333-444455556666/volumes/kubernetes.io~csi/${pv}/mount`;
const STAGING = "/var/lib/kubelet/plugins/kubernetes.io/csi/lustre.csi.example.com/6f1c1d0e2b9c8a7f/globalmount";

async function setup(spec: Partial<KubeReportingSpec> = {}, apiOpts: { eventsV1?: boolean } = {}) {
  const api = await new FakeKubeApi({ tokens: { "token-a": "node-a" }, ...apiOpts }).start();
  cleanups.push(() => api.close());
  api.addNode("node-a");
  const file = path.join(tempDir("probegate-health-events-"), "kubeconfig");
  fs.writeFileSync(file, api.kubeconfig("token-a"));
  const metrics = new Metrics({ processMetrics: false });
  const km = new KubeMetrics(metrics);
  const client = createKubeApi({ nodeName: "node-a", config: loadClientConfig({ files: [file], env: {} }), impersonateNode: false, requestTimeoutMs: 5000, onRequest: (r) => km.requests.inc(r), userAgent: "test" });
  cleanups.push(() => client.close());
  const view = new TestHealthView();
  const full: KubeReportingSpec = {
    nodeName: "node-a",
    conditionPerCheck: false,
    taintMode: "bootstrap-only",
    waitForCSINode: false,
    impersonateNode: false,
    timings: { heartbeatMs: 300_000, backoffCapMs: 1000, resyncMs: 60_000, writeIntervalMs: 20, requestTimeoutMs: 5000 },
    ...spec,
  };
  const reporter = new NodeReporter({ api: client, spec: full, readiness, storageHealth: view, driverName: () => "lustre.csi.example.com", logger: createLogger("silent"), metrics: km });
  return { api, view, reporter, start: () => { reporter.start(); cleanups.push(() => reporter.stop()); } };
}

const eventsOf = (api: FakeKubeApi, v1 = false) => [...(v1 ? api.coreEvents : api.eventsV1).values()];
const eventWrites = (api: FakeKubeApi) => api.writes((r) => r.path.includes("/events"));

describe("pvNameFromTargetPath", () => {
  it("takes the PV name from the kubelet's publish path only", () => {
    expect(pvNameFromTargetPath(TARGET("pv-lustre-01"))).toBe("pv-lustre-01");
    expect(pvNameFromTargetPath(STAGING)).toBeUndefined();
    expect(pvNameFromTargetPath(undefined)).toBeUndefined();
    expect(pvNameFromTargetPath("/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/../mount")).toBeUndefined();
    expect(pvNameFromTargetPath("/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/Not_A_Name/mount")).toBeUndefined();
  });
});

describe("storage health Events on the Node", () => {
  it("an entry that appears is one Warning naming node and fs; its clearing a Normal; repeats join them; nothing while nothing changes", async () => {
    const { api, view, start } = await setup({ condition: "lustre.csi.example.com/NodeReady" });
    start();
    await until("condition written", () => api.condition("node-a", "lustre.csi.example.com/NodeReady"));
    await settle();
    expect(eventWrites(api)).toHaveLength(0);

    view.setStorage([{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", fs: "lustrefs", message: "lustrefs: MDT0000 DISCONN for 95 s" }]);
    const warn = await until("Warning", () => eventsOf(api).find((e) => e.reason === "MdtUnreachable"));
    expect(warn).toMatchObject({ type: "Warning", action: "CheckStorage", regarding: { kind: "Node", name: "node-a" }, metadata: { namespace: "default" } });
    expect(warn.note).toContain("node-a");
    expect(warn.note).toContain("lustrefs");
    expect(warn.note).toContain("MDT0000 DISCONN");

    view.setStorage([]);
    const ok = await until("Normal", () => eventsOf(api).find((e) => e.reason === "StorageHealthRecovered"));
    expect(ok).toMatchObject({ type: "Normal", regarding: { kind: "Node", name: "node-a" } });
    expect(ok.note).toContain("lustrefs");

    // The same transitions again (a flapping MDT, a changing message): counts on the same two Events.
    view.setStorage([{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", fs: "lustrefs", message: "lustrefs: MDT0000 DISCONN for 120 s" }]);
    view.setStorage([]);
    await until("series counted", () => eventsOf(api).every((e) => e.series?.count === 2) && eventsOf(api).length === 2);
    expect(eventWrites(api).filter((r) => r.method === "POST")).toHaveLength(2);

    // Nothing changes (even a listener call without a change): no write at all.
    const before = api.writes().length;
    view.notify({ storage: true, volumes: [] });
    view.setStorage([]);
    await settle();
    expect(api.writes().length).toBe(before);
  });

  it("entries already there at start are reported (bad news after a restart); healthy ones are not", async () => {
    const { api, view, start } = await setup({ condition: "lustre.csi.example.com/NodeReady" });
    view.setStorage([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable", fs: "scratch" }]);
    start();
    const ev = await until("Warning", () => eventsOf(api).find((e) => e.reason === "OstUnreachable"));
    expect(ev.type).toBe("Warning");
    expect(eventsOf(api)).toHaveLength(1);
  });
});

describe("volume health Events on the PersistentVolume", () => {
  it("written on the PV named in the publish path; a staged-only volume gets none; forgotten volumes none", async () => {
    const { api, view, start } = await setup({ condition: "lustre.csi.example.com/NodeReady" });
    start();
    await until("condition written", () => api.condition("node-a", "lustre.csi.example.com/NodeReady"));
    view.setVolume({ volumeId: "vol-1", targetPath: TARGET("pv-lustre-01"), stagingPath: STAGING, origin: "publish" }, undefined);
    view.setVolume({ volumeId: "vol-2", stagingPath: STAGING, origin: "stage" }, [{ status: "INACCESSIBLE", reason: "MountHung" }]);
    view.setVolume({ volumeId: "vol-1", targetPath: TARGET("pv-lustre-01"), stagingPath: STAGING, origin: "publish" }, [
      { status: "DEGRADED", reason: "OstUnreachable", fs: "lustrefs", message: "lustrefs: OST0003 DISCONN" },
    ]);
    const ev = await until("PV Warning", () => eventsOf(api).find((e) => e.regarding?.kind === "PersistentVolume"));
    expect(ev).toMatchObject({ type: "Warning", reason: "OstUnreachable", action: "CheckVolume", regarding: { apiVersion: "v1", kind: "PersistentVolume", name: "pv-lustre-01" } });
    expect(ev.regarding.namespace).toBeUndefined();
    expect(ev.note).toContain("vol-1");
    expect(ev.note).toContain("node-a");
    view.setVolume({ volumeId: "vol-1", targetPath: TARGET("pv-lustre-01"), origin: "publish" }, []);
    await until("PV Normal", () => eventsOf(api).find((e) => e.reason === "VolumeHealthRecovered"));
    // The staged-only volume (no PV name known) wrote nothing; a forgotten volume writes nothing.
    view.forget("vol-1");
    await settle();
    expect(eventsOf(api).map((e) => `${e.regarding.kind}/${e.regarding.name}/${e.reason}`).sort()).toEqual([
      "PersistentVolume/pv-lustre-01/OstUnreachable",
      "PersistentVolume/pv-lustre-01/VolumeHealthRecovered",
    ]);
  });

  it("falls back to core v1 Events with involvedObject the PV, and PATCHes count and lastTimestamp on repeats", async () => {
    const { api, view, start } = await setup({ condition: "lustre.csi.example.com/NodeReady" }, { eventsV1: false });
    start();
    const ref: VolumeRef = { volumeId: "vol-9", targetPath: TARGET("pv-nine"), origin: "publish" };
    for (let i = 0; i < 3; i++) {
      view.setVolume(ref, [{ status: "INACCESSIBLE", reason: "Evicted", fs: "lustrefs" }]);
      await settle(150);
      view.setVolume(ref, []);
      await settle(150);
    }
    const warn = await until("count 3", () => eventsOf(api, true).find((e) => e.reason === "Evicted" && e.count === 3));
    expect(warn.involvedObject).toMatchObject({ kind: "PersistentVolume", name: "pv-nine" });
    expect(warn.metadata.namespace).toBe("default");
    expect(eventsOf(api, true).filter((e) => e.involvedObject.kind === "PersistentVolume")).toHaveLength(2);
    expect(api.writes((r) => r.path.includes("/events") && r.method === "PATCH" && r.contentType.startsWith("application/merge-patch+json")).length).toBeGreaterThanOrEqual(4);
  });
});

describe("the opt-in storage condition and taint", () => {
  it("a second condition follows storage; the readiness condition does not", async () => {
    const { api, view, start } = await setup({ condition: "lustre.csi.example.com/NodeReady", storageCondition: "lustre.csi.example.com/StorageReachable" });
    start();
    await until("storage condition True", () => api.condition("node-a", "lustre.csi.example.com/StorageReachable")?.status === "True");
    view.setStorage([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable", fs: "lustrefs" }]);
    await until("degraded named, still True", () => api.condition("node-a", "lustre.csi.example.com/StorageReachable")?.reason === "StorageDegraded");
    expect(api.condition("node-a", "lustre.csi.example.com/StorageReachable")!.status).toBe("True");
    view.setStorage([{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", fs: "lustrefs", message: "for 10 s" }]);
    const c = await until("False", () => {
      const x = api.condition("node-a", "lustre.csi.example.com/StorageReachable");
      return x?.status === "False" && x;
    });
    expect(c).toMatchObject({ reason: "MdtUnreachable" });
    expect(c.message).toContain("lustrefs");
    expect(api.condition("node-a", "lustre.csi.example.com/NodeReady")!.status).toBe("True");
    // A new message for the same entry (a growing duration) is no Node write.
    const writes = api.writes((r) => r.path.endsWith("/status")).length;
    view.setStorage([{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", fs: "lustrefs", message: "for 20 s" }]);
    await settle();
    expect(api.writes((r) => r.path.endsWith("/status")).length).toBe(writes);
    view.setStorage([]);
    await until("True again", () => api.condition("node-a", "lustre.csi.example.com/StorageReachable")?.reason === "StorageReachable");
  });

  it("--node-storage-taint: continuous mode taints the node while storage is unreachable, and only then", async () => {
    const taint = { key: "lustre.csi.example.com/storage-unreachable", effect: "NoSchedule" as const };
    const { api, view, start } = await setup({ taint, taintMode: "continuous", storageTaint: true });
    start();
    await settle();
    expect(api.taints("node-a").some((t) => t.key === taint.key)).toBe(false);
    view.setStorage([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable" }]);
    await settle();
    expect(api.taints("node-a").some((t) => t.key === taint.key)).toBe(false);
    view.setStorage([{ status: "STORAGE_UNREACHABLE", reason: "ClientLbug" }]);
    await until("taint added", () => api.taints("node-a").some((t) => t.key === taint.key));
    view.setStorage([]);
    await until("taint removed", () => !api.taints("node-a").some((t) => t.key === taint.key));
  });

  it("without the flags, storage health changes neither conditions nor taint", async () => {
    const taint = { key: "lustre.csi.example.com/agent-not-ready", effect: "NoSchedule" as const };
    const { api, view, start } = await setup({ condition: "lustre.csi.example.com/NodeReady", taint, taintMode: "continuous" });
    start();
    await until("condition", () => api.condition("node-a", "lustre.csi.example.com/NodeReady")?.status === "True");
    view.setStorage([{ status: "STORAGE_UNREACHABLE", reason: "ClientLbug" }]);
    await until("event", () => eventsOf(api).find((e) => e.reason === "ClientLbug"));
    await settle();
    expect(api.taints("node-a").some((t) => t.key === taint.key)).toBe(false);
    expect((api.node("node-a").status.conditions as Array<{ type: string }>).map((c) => c.type).filter((t) => t.includes("/"))).toEqual(["lustre.csi.example.com/NodeReady"]);
  });
});

describe("the fake API server validates Events as the real one", () => {
  it("refuses an Event outside namespace default (RBAC) and a namespace mismatch", async () => {
    const { api } = await setup();
    const post = (ns: string, body: object) =>
      fetch(`${api.url}/apis/events.k8s.io/v1/namespaces/${ns}/events`, { method: "POST", headers: { authorization: "Bearer token-a", "content-type": "application/json" }, body: JSON.stringify(body) });
    const ev = (regarding: object) => ({ metadata: { name: "x.1" }, eventTime: new Date().toISOString(), reportingController: "c", reportingInstance: "i", action: "a", reason: "R", type: "Normal", regarding });
    expect((await post("kube-public", ev({ kind: "PersistentVolume", name: "pv" }))).status).toBe(403);
    expect((await post("default", ev({ kind: "Pod", name: "p", namespace: "other" }))).status).toBe(422);
    expect((await post("default", ev({ kind: "PersistentVolume", name: "pv" }))).status).toBe(201);
  });
});

describe("through a running gateway (main.ts wiring, the engine's real health)", () => {
  it("a storage check's unreachable MDT becomes a Node Event and, opted in, a False storage condition; readiness untouched", async () => {
    const api = await new FakeKubeApi({ tokens: { "token-a": "node-a" } }).start();
    cleanups.push(() => api.close());
    api.addNode("node-a");
    const root = tempDir("probegate-health-events-gw-");
    const kubeconfig = path.join(root, "kubeconfig");
    fs.writeFileSync(kubeconfig, api.kubeconfig("token-a"));
    const procfs = path.join(root, "proc");
    fs.mkdirSync(path.join(procfs, "sys", "kernel"), { recursive: true });
    fs.mkdirSync(path.join(procfs, "1"));
    fs.writeFileSync(path.join(procfs, "sys", "kernel", "osrelease"), "unreachable\n");
    fs.writeFileSync(path.join(procfs, "1", "mounts"), "");
    fs.writeFileSync(path.join(procfs, "mounts"), "");
    const plugins = path.join(root, "plugins");
    fs.mkdirSync(plugins);
    const unreachable = JSON.stringify({
      status: "fail", reason: "MdtUnreachable", message: "lustrefs: every MDT down", facts: {},
      health: [{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", message: "lustrefs: MDT0000 not FULL/IDLE for 95 s (DISCONN)", fs: "lustrefs" }],
    });
    fs.writeFileSync(path.join(plugins, "st.wasm"), await storagePlugin("st", "kernel.release", { unreachable }));
    const gw = await startGatewayProcess(
      [`--plugins-dir=${plugins}`, `--path.procfs=${procfs}`, `--path.sysfs=${root}`, "--check-interval=1s", "--health-interval=1s", `--kubeconfig=${kubeconfig}`,
        "--node-storage-condition=lustre.csi.example.com/StorageReachable", "--node-write-interval=50ms", "--node-backoff-cap=1s"],
      { env: { NODE_NAME: "node-a" } },
    );
    cleanups.push(async () => void (await gw.stop()));
    const c = await until("False", () => {
      const x = api.condition("node-a", "lustre.csi.example.com/StorageReachable");
      return x?.status === "False" && x;
    });
    expect(c.reason).toBe("MdtUnreachable");
    const ev = await until("Node Event", () => eventsOf(api).find((e) => e.reason === "MdtUnreachable"));
    expect(ev).toMatchObject({ type: "Warning", regarding: { kind: "Node", name: "node-a" } });
    expect(ev.note).toContain("MDT0000 not FULL/IDLE");
    // The storage check is not a readiness check: the verdict (no readiness check at all here) is its own business.
    expect(api.condition("node-a", "lustre.csi.example.com/NodeReady")).toBeUndefined();
    // No readiness check here, so the node is not ready (NoChecks): that Event too, then nothing more.
    await until("NodeNotReady", () => eventsOf(api).find((e) => e.reason === "NodeNotReady"));
    await settle(300);
    // Rounds keep running; nothing changes, so no more Event writes.
    const n = eventWrites(api).length;
    await settle(1500);
    expect(eventWrites(api).length).toBe(n);
  }, 120_000);
});
