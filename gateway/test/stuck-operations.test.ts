// Stuck volume operations (issue 41) through a running gateway in front of a
// stand-in driver that really runs `umount` under a per-volume lock (a retry
// while one runs is ABORTED, as the Lustre drivers answer), on a fake node whose
// umount blocks while the mount hangs. Durations are short; nothing asserts timing.

import { afterEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  NodeGetStorageHealthRequestSchema,
  NodeGetStorageHealthResponseSchema,
  NodeGetVolumeHealthRequestSchema,
  NodeGetVolumeHealthResponseSchema,
  NodeUnpublishVolumeRequestSchema,
} from "../gen/csi/v1/csi_pb.js";
import { ProcessRoom } from "../src/exec/room.js";
import { Metrics } from "../src/observability/metrics.js";
import { trackOperations, type TrackedOperations } from "../src/storage-health/operations-view.js";
import { Unsticker } from "../src/storage-health/unstick.js";
import { OperationTable } from "../src/storage-health/operations.js";
import { ScriptedHealth } from "./helpers/scripted-health.js";
import { FakeNode } from "./helpers/fake-umount.js";
import { unmountUnderLock } from "./helpers/unmounting-driver.js";
import { rawCall } from "./helpers/fake-csi-driver.js";
import { eventually, probe, startHarness, type Harness } from "./gateway-mode-harness.js";
import { createKubeApi } from "../src/kube/client/api.js";
import { loadClientConfig } from "../src/kube/client/kubeconfig.js";
import { KubeMetrics } from "../src/kube/metrics.js";
import { NodeReporter } from "../src/kube/reporter.js";
import { createLogger } from "../src/observability/logger.js";
import { FakeKubeApi } from "./helpers/fake-kube-api.js";
import { FakeCsiDriver, FaultyCsiDriver, unixClient, type DriverFault } from "./helpers/fake-csi-driver.js";
import { startGatewayProcess } from "./helpers/gateway-process.js";
import { mkdirSync, writeFileSync } from "node:fs";
import { describeProcess, findUnmounting } from "../src/storage-health/unmounting-process.js";

const UNPUBLISH = "/csi.v1.Node/NodeUnpublishVolume";

interface Setup {
  h: Harness;
  node: FakeNode;
  kubelet: string;
  tracked: TrackedOperations;
  unsticker?: Unsticker;
  room?: ProcessRoom;
}

let s: Setup | undefined;
let faulty: FaultyCsiDriver | undefined;
afterEach(async () => {
  await faulty?.stop();
  faulty = undefined;
  s?.unsticker?.stop();
  s?.tracked.stop();
  await s?.room?.stop();
  await s?.h.close();
  if (s) rmSync(s.node.dir, { recursive: true, force: true });
  s = undefined;
});

/** The stand-in driver: NodeUnpublishVolume runs `umount PATH`, one per volume at a time. */
function driveUnmounts(h: Pick<Harness, "driver">, node: FakeNode): void {
  h.driver.script(UNPUBLISH, unmountUnderLock(node));
}

async function setUp(opts: { unstick?: boolean; maxPathsPerWindow?: number; forceTimeoutMs?: number; roomPath?: string; timeoutCapMs?: number } = {}): Promise<Setup> {
  const node = new FakeNode(mkdtempSync(join(tmpdir(), "pg-stuck-")));
  const kubelet = join(node.dir, "kubelet");
  const inner = new ScriptedHealth();
  const metrics = new Metrics({ processMetrics: false });
  const tracked = trackOperations({ health: { view: inner.view, registry: inner.registry }, metrics, stuckAfterMs: 300, procfs: node.procfs });
  const h = await startHarness({ health: tracked.health, observe: tracked.observe, metrics, timeoutCapMs: opts.timeoutCapMs });
  driveUnmounts(h, node);
  const setup: Setup = { h, node, kubelet, tracked };
  if (opts.unstick) {
    setup.room = new ProcessRoom({ procfs: node.procfs, env: opts.roomPath ? { ...node.env, PATH: opts.roomPath } : node.env });
    setup.unsticker = new Unsticker({
      table: tracked.table,
      room: setup.room,
      readMounts: async () => ({ text: node.mounts(), at: Date.now() }),
      kubeletDir: kubelet,
      unstickAfterMs: 600,
      forceTimeoutMs: opts.forceTimeoutMs ?? 2000,
      lazyTimeoutMs: 2000,
      maxPathsPerWindow: opts.maxPathsPerWindow,
      logger: h.logs.logger,
      metrics: h.metrics,
    });
  }
  return (s = setup);
}

/** One kubelet attempt: a short deadline, as the kubelet's is shorter than a hang. */
function unpublish(h: Harness, volumeId: string, targetPath: string) {
  const req = toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId, targetPath }));
  return rawCall(h.client, UNPUBLISH, req, { deadline: Date.now() + 500 });
}

async function volumeHealth(h: Harness, volumeId: string, path: string) {
  const r = await rawCall(h.client, "/csi.v1.Node/NodeGetVolumeHealth", toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId, volumePublishPath: path })));
  if (!r.response) throw new Error(`NodeGetVolumeHealth: ${r.error?.code} ${r.error?.details}`);
  return fromBinary(NodeGetVolumeHealthResponseSchema, r.response!).volumeHealth!.healthStatuses.map((e) => ({ status: e.status as number, reason: e.reason, message: e.message }));
}

async function storageHealth(h: Harness) {
  const r = await rawCall(h.client, "/csi.v1.Node/NodeGetStorageHealth", toBinary(NodeGetStorageHealthRequestSchema, create(NodeGetStorageHealthRequestSchema)));
  return fromBinary(NodeGetStorageHealthResponseSchema, r.response!).backendHealth.map((e) => ({ status: e.status as number, reason: e.reason, message: e.message }));
}

/** Retries like the kubelet until the volume reports `until`. */
async function retryUntil<T>(h: Harness, vol: string, path: string, read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  return eventually(
    async () => {
      await unpublish(h, vol, path);
      return read();
    },
    ok,
    what,
  );
}

const INACCESSIBLE = 2;
const STORAGE_DEGRADED = 1;

describe("stuck volume operations: tracked and reported", () => {
  it("reports a hung unmount on the volume and the node after --operation-stuck-after, runs nothing itself, and clears when an attempt succeeds", async () => {
    const { h, node, kubelet } = await setUp();
    const target = join(kubelet, "pods", "p1", "volumes", "kubernetes.io~csi", "pv 1", "mount");
    node.mount(target);
    node.hang(target);

    // The first attempt runs the driver's umount, which hangs; the retries meet its lock.
    await eventually(async () => (await unpublish(h, "vol-1", target)).error?.code, (c) => c === grpc.status.ABORTED, "a retry refused");

    const entries = await retryUntil(h, "vol-1", target, () => volumeHealth(h, "vol-1", target), (e) => e.length > 0, "stuck report");
    expect(entries[0]).toMatchObject({ status: INACCESSIBLE, reason: "UnpublishStuck" });
    expect(entries[0]!.message).toContain(`NodeUnpublishVolume of ${target} pending for`);
    expect(entries[0]!.message).toMatch(/\d+ attempts, \d+ refused \(ABORTED\) or timed out, last ABORTED/);
    // The driver's own umount, blocked in the kernel, as procfs shows it (read by the operations' timer, not by this call).
    node.advance(720);
    const told = await retryUntil(h, "vol-1", target, () => volumeHealth(h, "vol-1", target), (e) => /for 1[23]m/.test(e[0]?.message ?? ""), "the unmounting process");
    expect(told[0]!.message).toMatch(/the unmounting process: umount \(pid \d+\) in D state \(uninterruptible: waiting in the kernel\) for 12m\d+s/);
    const storage = await eventually(() => storageHealth(h), (e) => e.length > 0, "storage entry");
    expect(storage[0]).toMatchObject({ status: STORAGE_DEGRADED, reason: "VolumeOperationsStuck" });
    expect(storage[0]!.message).toMatch(/^1 volume operation stuck; the oldest: NodeUnpublishVolume/);
    const metrics = await h.metrics.registry.metrics();
    expect(metrics).toMatch(/probegate_volume_operations_stuck\{method="NodeUnpublishVolume"\} 1/);
    expect(metrics).toMatch(/probegate_volume_operations_pending\{method="NodeUnpublishVolume"\} 1/);
    // Readiness and Probe are not a stuck operation's business.
    expect(await probe(h.client)).toEqual({ ready: true });

    // Without --unstick nothing but the driver's own umount ran, however long it stays stuck.
    const tracked = s!.tracked;
    await retryUntil(h, "vol-1", target, async () => tracked.table.all()[0]?.attempts ?? 0, (n) => n >= 8, "more attempts");
    expect(node.calls().every((argv) => argv.length === 1 && argv[0] === target)).toBe(true);
    expect(node.mounts()).toContain("pv\\0401");

    // The servers come back: the driver's umount returns, the next retry succeeds, the report goes.
    node.recover(target);
    await eventually(async () => (await unpublish(h, "vol-1", target)).error?.code ?? 0, (c) => c === 0, "retry succeeds");
    expect(await volumeHealth(h, "vol-1", target)).toEqual([]);
    expect(await storageHealth(h)).toEqual([]);
    expect(await h.metrics.registry.metrics()).toMatch(/probegate_volume_operations_pending\{method="NodeUnpublishVolume"\} 0/);
  });
});

describe("stuck volume operations: --unstick=unmount", () => {
  const stepsOf = (node: FakeNode) => node.calls().filter((argv) => argv[0] === "-f" || argv[0] === "-l");

  it("ends a hung unmount with umount -f, after which the driver's own umount returns and the retry succeeds", async () => {
    const { h, node, kubelet } = await setUp({ unstick: true });
    const target = join(kubelet, "pods", "p1", "volumes", "kubernetes.io~csi", "pv 1", "mount");
    node.mount(target);
    node.hang(target, "force");
    await eventually(async () => (await unpublish(h, "vol-1", target)).error?.code ?? 0, (c) => c === 0, "a retry succeeds once probegate unmounted");
    expect(stepsOf(node)).toEqual([["-f", target]]);
    expect(node.mounts()).not.toContain("pv\\0401");
    expect(await volumeHealth(h, "vol-1", target)).toEqual([]);
    const metrics = await h.metrics.registry.metrics();
    expect(metrics).toMatch(/probegate_unstick_steps_total\{step="force",outcome="unmounted"\} 1/);
    expect(h.logs.text).toContain("stuck unmount ended by probegate");
  });

  it("goes on to umount -l when -f leaves the path mounted, one step at a time, once per path per --unstick-after", async () => {
    const { h, node, kubelet } = await setUp({ unstick: true });
    const target = join(kubelet, "pods", "p2", "volumes", "kubernetes.io~csi", "pv-2", "mount");
    node.mount(target);
    node.hang(target, "lazy-only");
    await eventually(async () => (await unpublish(h, "vol-2", target)).error?.code ?? 0, (c) => c === 0, "a retry succeeds after the lazy unmount");
    expect(stepsOf(node)).toEqual([
      ["-f", target],
      ["-l", target],
    ]);
    const metrics = await h.metrics.registry.metrics();
    expect(metrics).toMatch(/probegate_unstick_steps_total\{step="force",outcome="failed"\} 1/);
    expect(metrics).toMatch(/probegate_unstick_steps_total\{step="lazy",outcome="unmounted"\} 1/);
    // Nothing left running: the hung step was killed at its deadline (a later window's check of a path already gone ends at once).
    await eventually(async () => s!.unsticker!.running(), (n) => n === 0, "no step in flight");
  });

  it("never touches a tmpfs path or a Lustre mount outside the kubelet directory, and says why", async () => {
    const { h, node, kubelet } = await setUp({ unstick: true });
    const tmpfs = join(kubelet, "pods", "p3", "volumes", "kubernetes.io~csi", "pv-3", "mount");
    const outside = join(node.dir, "elsewhere", "mnt");
    node.mount(tmpfs, "tmpfs", "tmpfs");
    node.mount(outside);
    node.hang(tmpfs);
    node.hang(outside);
    const refused = () => h.metrics.registry.metrics().then((m) => /probegate_unstick_steps_total\{step="none",outcome="refused"\} 2/.test(m));
    await eventually(
      async () => {
        await Promise.all([unpublish(h, "vol-3", tmpfs), unpublish(h, "vol-4", outside)]);
        return refused();
      },
      (ok) => ok,
      "both refused",
    );
    expect(stepsOf(node)).toEqual([]);
    expect(node.mounts()).toContain(tmpfs);
    expect(node.mounts()).toContain(outside);
    expect(h.logs.text).toContain("is a tmpfs mount, not lustre");
    expect(h.logs.text).toContain("is not under the kubelet directory");
    // Still reported: refusing to end it does not make it less stuck.
    expect((await volumeHealth(h, "vol-3", tmpfs))[0]?.reason).toBe("UnpublishStuck");
  });

  it("starts at most the node-wide limit of paths per window", async () => {
    const { h, node, kubelet } = await setUp({ unstick: true, maxPathsPerWindow: 1 });
    const a = join(kubelet, "pods", "a", "volumes", "kubernetes.io~csi", "pv-a", "mount");
    const b = join(kubelet, "pods", "b", "volumes", "kubernetes.io~csi", "pv-b", "mount");
    for (const p of [a, b]) {
      node.mount(p);
      node.hang(p, "lazy-only");
    }
    const limited = () => h.metrics.registry.metrics().then((m) => /outcome="rate_limited"\} [1-9]/.test(m));
    await eventually(
      async () => {
        await Promise.all([unpublish(h, "vol-a", a), unpublish(h, "vol-b", b)]);
        return limited();
      },
      (ok) => ok,
      "the second path waits for the next window",
    );
    // The invariant, by probegate's own clock: two paths' escalations start at least a window apart.
    const starts = h.logs.lines
      .map((l) => JSON.parse(l) as { msg: string; time: number })
      .filter((l) => l.msg === "stuck unmount escalation started")
      .map((l) => l.time);
    expect(starts.length).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(595);
  });
});

const OPS_CONDITION = "lustre.csi.example.com/NoStuckVolumeOperations";

describe("stuck volume operations: Events and the opt-in Node condition", () => {
  it("a Warning on the Node and on the PV when an unmount gets stuck, a Normal on both when it ends, repeats aggregated", async () => {
    const { h, node, kubelet, tracked } = await setUp();
    const { api, close } = await reportTo(h, node, tracked);
    try {
      const target = join(kubelet, "pods", "p1", "volumes", "kubernetes.io~csi", "pv-stuck", "mount");
      const events = () => [...api.eventsV1.values()];
      for (const round of [1, 2]) {
        node.mount(target);
        node.hang(target);
        await retryUntil(h, "vol-1", target, async () => events().find((e) => e.reason === "UnpublishStuck" && (e.series?.count ?? 1) >= round), (e) => e !== undefined, `PV Warning, round ${round}`);
        // The opt-in condition says so, for an operator or the Node Readiness Controller; readiness does not.
        await eventually(async () => api.condition("node-a", OPS_CONDITION)?.status, (st) => st === "False", "operations condition False");
        expect(api.condition("node-a", OPS_CONDITION)).toMatchObject({ reason: "VolumeOperationsStuck" });
        expect(api.condition("node-a", "lustre.csi.example.com/NodeReady")?.status).toBe("True");
        node.recover(target);
        await eventually(async () => (await unpublish(h, "vol-1", target)).error?.code ?? 0, (c) => c === 0, "retry succeeds");
        await eventually(async () => api.condition("node-a", OPS_CONDITION)?.status, (st) => st === "True", "operations condition True again");
        await eventually(async () => events().find((e) => e.reason === "StorageHealthRecovered" && (e.series?.count ?? 1) >= round), (e) => e !== undefined, `Node Normal, round ${round}`);
        // The PV's own "ended": told before the successful unpublish makes the registry forget the volume.
        await eventually(async () => events().find((e) => e.regarding?.kind === "PersistentVolume" && e.reason === "VolumeHealthRecovered" && (e.series?.count ?? 1) >= round), (e) => e !== undefined, `PV Normal, round ${round}`);
      }
      const onNode = events().filter((e) => e.regarding?.kind === "Node" && e.reason === "VolumeOperationsStuck");
      expect(onNode).toHaveLength(1);
      expect(onNode[0]).toMatchObject({ type: "Warning", series: { count: 2 } });
      expect(onNode[0]!.note).toContain("NodeUnpublishVolume");
      const onPv = events().filter((e) => e.regarding?.kind === "PersistentVolume");
      expect(onPv.map((e) => [e.type, e.reason, e.regarding.name, e.series?.count]).sort()).toEqual([
        ["Normal", "VolumeHealthRecovered", "pv-stuck", 2],
        ["Warning", "UnpublishStuck", "pv-stuck", 2],
      ]);
      expect(onPv.find((e) => e.type === "Warning")!.note).toContain(target);
      expect(onPv.find((e) => e.type === "Normal")!.note).toContain("UnpublishStuck cleared");
    } finally {
      await close();
    }
  });

  it("each --unstick step is an Event on the Node and the PV", async () => {
    const { h, node, kubelet, tracked, unsticker } = await setUp({ unstick: true });
    const { api, close } = await reportTo(h, node, tracked, unsticker);
    try {
      const target = join(kubelet, "pods", "p7", "volumes", "kubernetes.io~csi", "pv-seven", "mount");
      node.mount(target);
      node.hang(target, "lazy-only");
      await eventually(async () => (await unpublish(h, "vol-7", target)).error?.code ?? 0, (c) => c === 0, "a retry succeeds after the lazy unmount");
      // (A later window may find the path gone before the retry lands: UnmountNotAttempted, not counted here.)
      const events = () => [...api.eventsV1.values()].filter((e) => e.action === "Unstick" && e.reason !== "UnmountNotAttempted");
      await eventually(async () => events().length, (n) => n === 4, "two steps, each on the Node and the PV");
      expect(events().map((e) => [e.reason, e.regarding.kind, e.type]).sort()).toEqual([
        ["UnmountForced", "Node", "Warning"],
        ["UnmountForced", "PersistentVolume", "Warning"],
        ["UnmountLazy", "Node", "Warning"],
        ["UnmountLazy", "PersistentVolume", "Warning"],
      ]);
      expect(events().find((e) => e.reason === "UnmountLazy")!.note).toContain(`unmounted: umount -l ${target}: exit 0; no longer mounted`);
    } finally {
      await close();
    }
  });
});

/** probegate's node reporter in this process, against the fake API server (its validation as the real one's). */
async function reportTo(h: Harness, node: FakeNode, tracked: TrackedOperations, unstick?: Unsticker) {
  const api = await new FakeKubeApi({ tokens: { "token-a": "node-a" } }).start();
  api.addNode("node-a");
  const file = join(node.dir, "kubeconfig");
  writeFileSync(file, api.kubeconfig("token-a"));
  const km = new KubeMetrics(h.metrics);
  const client = createKubeApi({ nodeName: "node-a", config: loadClientConfig({ files: [file], env: {} }), impersonateNode: false, requestTimeoutMs: 5000, onRequest: (r) => km.requests.inc(r), userAgent: "test" });
  const reporter = new NodeReporter({
    api: client,
    spec: {
      nodeName: "node-a",
      condition: "lustre.csi.example.com/NodeReady",
      operationsCondition: OPS_CONDITION,
      conditionPerCheck: false,
      taintMode: "bootstrap-only",
      waitForCSINode: false,
      impersonateNode: false,
      timings: { heartbeatMs: 300_000, backoffCapMs: 1000, resyncMs: 60_000, writeIntervalMs: 20, requestTimeoutMs: 5000 },
    },
    readiness: h.readiness,
    storageHealth: tracked.health.view,
    unstick,
    driverName: () => "probegate.test",
    logger: createLogger("silent"),
    metrics: km,
  });
  reporter.start();
  return {
    api,
    close: async () => {
      await reporter.stop();
      client.close();
      await api.close();
    },
  };
}

describe("stuck volume operations: faults and bad input", () => {
  it("an umount -f that hangs itself is ended at its deadline, then umount -l", async () => {
    const { h, node, kubelet } = await setUp({ unstick: true, forceTimeoutMs: 500 });
    const target = join(kubelet, "pods", "p5", "volumes", "kubernetes.io~csi", "pv-5", "mount");
    node.mount(target);
    node.hang(target, "force-hangs");
    await eventually(async () => (await unpublish(h, "vol-5", target)).error?.code ?? 0, (c) => c === 0, "a retry succeeds after the lazy unmount");
    const metrics = await h.metrics.registry.metrics();
    expect(metrics).toMatch(/probegate_unstick_steps_total\{step="force",outcome="timeout"\} 1/);
    expect(metrics).toMatch(/probegate_unstick_steps_total\{step="lazy",outcome="unmounted"\} 1/);
    // Nothing left running: the hung step was killed at its deadline (a later window's check of a path already gone ends at once).
    await eventually(async () => s!.unsticker!.running(), (n) => n === 0, "no step in flight");
  });

  it("a missing umount is a failed step with a clear reason; the report stays and Probe answers", async () => {
    const { h, node, kubelet } = await setUp({ unstick: true, roomPath: join(tmpdir(), "pg-no-such-dir") });
    const target = join(kubelet, "pods", "p6", "volumes", "kubernetes.io~csi", "pv-6", "mount");
    node.mount(target);
    node.hang(target);
    await retryUntil(h, "vol-6", target, () => h.metrics.registry.metrics(), (m) => /step="lazy",outcome="failed"\} [1-9]/.test(m), "both steps failed");
    expect(h.logs.text).toMatch(/umount -f [^"]*: [^"]*(ENOENT|not found)/);
    expect(node.mounts()).toContain("pv-6");
    expect((await volumeHealth(h, "vol-6", target))[0]?.reason).toBe("UnpublishStuck");
    expect(await probe(h.client)).toEqual({ ready: true });
    node.recover(target);
  });

  it("garbage and hostile requests are forwarded and not tracked; Probe answers", async () => {
    const { h, tracked } = await setUp();
    h.driver.script(UNPUBLISH, { error: { code: grpc.status.INVALID_ARGUMENT, details: "bad request" } });
    const garbage = await rawCall(h.client, UNPUBLISH, Buffer.from([0xff, 0xff, 0xff, 0x01]));
    expect(garbage.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const nul = toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: "a\0b", targetPath: "/x" }));
    const long = toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: "v".repeat(2000), targetPath: "/x" }));
    const dots = toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: "v", targetPath: "/a/../b" }));
    for (const r of [nul, long, dots]) expect((await rawCall(h.client, UNPUBLISH, r)).error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(tracked.table.size()).toBe(0);
    expect(tracked.table.untracked).toBe(4);
    expect(await probe(h.client)).toEqual({ ready: true });
  });
});

describe("stuck volume operations: faults from the driver", () => {
  it("a driver that resets the stream, never answers (the caller's deadline passes) or answers garbage: tracked with that last result, reported stuck, Probe answering throughout", async () => {
    // The gateway's own bound on an upstream wait (300 ms) ends a silent call before the caller's 500 ms deadline: DEADLINE_EXCEEDED, not the caller's cancel.
    const { h, tracked } = await setUp({ timeoutCapMs: 300 });
    const faults: Record<string, DriverFault> = { "vol-reset": "reset", "vol-silent": "silent", "vol-garbage": "garbage" };
    await h.driver.stop();
    faulty = await new FaultyCsiDriver(h.driverSocket, (path, request) => (path === UNPUBLISH ? faults[fromBinary(NodeUnpublishVolumeRequestSchema, request).volumeId] : undefined)).start();
    const target = (vol: string) => `/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/pv-${vol.slice(4)}/mount`;
    // What probegate answered the caller and recorded as the last result. (An answer that is not gRPC reaches
    // the caller with the driver's own content-type; its client names that failure itself, so only "not OK" is asserted there.)
    const want: Record<string, { code?: grpc.status; last: string }> = {
      // The gateway's relay reads a reset without a status as the connection's failure: UNAVAILABLE.
      "vol-reset": { code: grpc.status.UNAVAILABLE, last: "UNAVAILABLE" },
      "vol-silent": { code: grpc.status.DEADLINE_EXCEEDED, last: "DEADLINE_EXCEEDED" },
      "vol-garbage": { last: "INTERNAL" },
    };
    // The gateway's connection to the new driver is up (Probe goes through to it).
    await eventually(() => probe(h.client), (p) => "ready" in p && p.ready, "Probe through the faulty driver");
    const codes = new Map<string, number>();
    const probes: unknown[] = [];
    const reported = await eventually(
      async () => {
        const [answers] = await Promise.all([
          Promise.all(Object.keys(faults).map(async (vol) => [vol, (await unpublish(h, vol, target(vol))).error?.code ?? 0] as const)),
          probe(h.client).then((p) => probes.push(p)),
        ]);
        for (const [vol, code] of answers) codes.set(vol, code);
        return Promise.all(Object.keys(faults).map(async (vol) => [vol, await volumeHealth(h, vol, target(vol))] as const));
      },
      (all) => all.every(([, e]) => e.some((x) => x.reason === "UnpublishStuck")),
      "each faulty unmount reported stuck",
    );
    for (const [vol, entries] of reported) {
      expect(codes.get(vol), vol).not.toBe(0);
      if (want[vol]!.code !== undefined) expect(codes.get(vol), vol).toBe(want[vol]!.code);
      const op = tracked.table.all().find((o) => o.volumeId === vol)!;
      expect(op, vol).toMatchObject({ method: "NodeUnpublishVolume", last: want[vol]!.last, stuck: true });
      expect(entries[0]!.message, vol).toContain(`last ${want[vol]!.last}`);
    }
    // The timed-out attempts are counted as such; a reset or garbage is a failure, not a refusal.
    expect(tracked.table.all().find((o) => o.volumeId === "vol-silent")!.refusedOrTimedOut).toBeGreaterThan(0);
    expect(tracked.table.all().find((o) => o.volumeId === "vol-reset")!.refusedOrTimedOut).toBe(0);
    expect(faulty.calls.filter((c) => c.fault).map((c) => c.fault)).toEqual(expect.arrayContaining(["reset", "silent", "garbage"]));
    expect(probes.length).toBeGreaterThan(0);
    for (const p of [...probes, await probe(h.client)]) expect(p).toEqual({ ready: true });
    expect((await storageHealth(h))[0]).toMatchObject({ reason: "VolumeOperationsStuck" });
    expect((await storageHealth(h))[0]!.message).toMatch(/^3 volume operations stuck/);
  });
});

describe("the unmounting process (procfs scan)", () => {
  const tree = () => {
    const procfs = mkdtempSync(join(tmpdir(), "pg-procfs-"));
    const proc = (pid: string, files: Record<string, string>) => {
      mkdirSync(join(procfs, pid), { recursive: true });
      for (const [f, text] of Object.entries(files)) writeFileSync(join(procfs, pid, f), text);
    };
    const stat = (pid: number, comm: string, state: string, startTicks: number) => `${pid} (${comm}) ${state} 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 ${startTicks} 9000000 200\n`;
    writeFileSync(join(procfs, "uptime"), "5000.00 9000.00\n");
    return { procfs, proc, stat };
  };

  it("finds the umount of a stuck path with its state and age; skips garbage, vanished and kernel entries; prefers umount to others naming the path", async () => {
    const { procfs, proc, stat } = tree();
    try {
      proc("4242", { cmdline: "umount\0/k/p one\0", stat: stat(4242, "umount", "D", (5000 - 720) * 100) });
      // Older, and naming the path, but not an umount.
      proc("50", { cmdline: "/usr/bin/watcher\0--dir\0/k/p one/\0", stat: stat(50, "watcher", "S", 100) });
      proc("77", { cmdline: "umount\0/k/q\0", stat: "garbage with no parens" });
      proc("78", {});
      proc("2", { cmdline: "", stat: stat(2, "kthreadd", "S", 0) });
      proc("91", { cmdline: "umount\0-f\0/k/r/\0", stat: stat(91, "umount", "R", 4999 * 100) });
      mkdirSync(join(procfs, "self"));
      const r = await findUnmounting(procfs, ["/k/p one", "/k/q", "/k/r", "/k/none"], { now: () => 1_000_000 });
      expect(r.read).toBe(6);
      expect([...r.found.keys()].sort()).toEqual(["/k/p one", "/k/r"]);
      const p = r.found.get("/k/p one")!;
      expect(p).toMatchObject({ pid: 4242, name: "umount", state: "D" });
      expect(describeProcess(p, 1_000_000)).toBe("umount (pid 4242) in D state (uninterruptible: waiting in the kernel) for 12m0s");
      expect(describeProcess(r.found.get("/k/r")!, 1_000_000)).toBe("umount (pid 91) in R state (running) for 1s");
    } finally {
      rmSync(procfs, { recursive: true, force: true });
    }
  });

  it("reads at most its cap of process entries, and nothing without a stuck path; an unreadable procfs finds nothing", async () => {
    const { procfs, proc, stat } = tree();
    try {
      for (let pid = 100; pid < 140; pid++) proc(String(pid), { cmdline: `umount\0/k/${pid}\0`, stat: stat(pid, "umount", "D", 1) });
      expect((await findUnmounting(procfs, ["/k/100"], { maxProcesses: 10 })).read).toBe(10);
      expect((await findUnmounting(procfs, [])).read).toBe(0);
      expect((await findUnmounting(join(procfs, "missing"), ["/k/100"])).found.size).toBe(0);
      // No uptime: the state without an age.
      rmSync(join(procfs, "uptime"));
      const r = await findUnmounting(procfs, ["/k/120"]);
      expect(describeProcess(r.found.get("/k/120")!, Date.now())).toBe("umount (pid 120) in D state (uninterruptible: waiting in the kernel)");
    } finally {
      rmSync(procfs, { recursive: true, force: true });
    }
  });
});

describe("the operation table (bounds)", () => {
  const call = (volumeId: string, status: number, path = `/k/${volumeId}`) => ({
    path: UNPUBLISH,
    request: toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId, targetPath: path })),
    status,
    durationMs: 10,
  });

  it("holds at most its cap (thousands of volumes): new operations are counted, never an old one evicted; success frees room", () => {
    const t = new OperationTable({ maxOperations: 100, stuckAfterMs: 0 });
    for (let i = 0; i < 5000; i++) t.observe(call(`vol-${i}`, grpc.status.DEADLINE_EXCEEDED));
    expect(t.size()).toBe(100);
    expect(t.untracked).toBe(4900);
    expect(t.all()[0]!.volumeId).toBe("vol-0");
    t.observe(call("vol-0", grpc.status.OK));
    t.observe(call("vol-new", grpc.status.ABORTED));
    expect(t.size()).toBe(100);
    expect(t.all().some((op) => op.volumeId === "vol-new")).toBe(true);
  });

  it("counts attempts per operation and forgets every operation on a volume and path when one succeeds", () => {
    const t = new OperationTable({ stuckAfterMs: 0 });
    t.observe(call("v", grpc.status.DEADLINE_EXCEEDED));
    t.observe(call("v", grpc.status.ABORTED));
    t.observe(call("v", grpc.status.INTERNAL));
    expect(t.all()).toMatchObject([{ method: "NodeUnpublishVolume", attempts: 3, refusedOrTimedOut: 2, last: "INTERNAL" }]);
    const ended: string[] = [];
    t.subscribe((ts) => ended.push(...ts.map((x) => x.kind)));
    t.tick();
    t.observe(call("v", grpc.status.OK));
    expect(t.size()).toBe(0);
    expect(ended).toEqual(["stuck", "ended"]);
  });
});

describe("stuck volume operations: the probegate command", () => {
  it("--path.procfs: the stuck report names the driver's umount blocked in the kernel, from the procfs the checks read", async () => {
    const node = new FakeNode(mkdtempSync(join(tmpdir(), "pg-stuck-cli-")));
    const kubelet = join(node.dir, "kubelet");
    const driver = await new FakeCsiDriver(join(node.dir, "driver.sock")).start();
    driveUnmounts({ driver }, node);
    const gw = await startGatewayProcess(
      ["--mode=node", `--plugins-dir=${mkdtempSync(join(node.dir, "plugins-"))}`, `--upstream=unix://${driver.socketPath}`, "--operation-stuck-after=300ms", `--kubelet-dir=${kubelet}`, `--path.procfs=${node.procfs}`],
      { env: node.env },
    );
    const client = unixClient(gw.socket);
    try {
      const target = join(kubelet, "pods", "p8", "volumes", "kubernetes.io~csi", "pv-8", "mount");
      node.mount(target);
      node.hang(target);
      const h = { client } as Harness;
      const told = await retryUntil(h, "vol-8", target, () => volumeHealth(h, "vol-8", target), (e) => /the unmounting process/.test(e[0]?.message ?? ""), "the unmounting process named");
      expect(told[0]!.reason).toBe("UnpublishStuck");
      expect(told[0]!.message).toMatch(/the unmounting process: umount \(pid \d+\) in D state \(uninterruptible: waiting in the kernel\) for \d+s/);
      node.recover(target);
      await eventually(async () => (await unpublish(h, "vol-8", target)).error?.code ?? 0, (c) => c === 0, "retry succeeds");
      expect(await volumeHealth(h, "vol-8", target)).toEqual([]);
    } finally {
      client.close();
      await gw.stop();
      await driver.stop();
      rmSync(node.dir, { recursive: true, force: true });
    }
  });

  it("--upstream with --operation-stuck-after and --unstick=unmount: reported, ended, counted", async () => {
    const node = new FakeNode(mkdtempSync(join(tmpdir(), "pg-stuck-cli-")));
    const kubelet = join(node.dir, "kubelet");
    const driver = await new FakeCsiDriver(join(node.dir, "driver.sock")).start();
    driveUnmounts({ driver }, node);
    const gw = await startGatewayProcess(
      ["--mode=node", `--plugins-dir=${mkdtempSync(join(node.dir, "plugins-"))}`, `--upstream=unix://${driver.socketPath}`, "--operation-stuck-after=300ms", "--unstick=unmount", "--unstick-after=1s", `--kubelet-dir=${kubelet}`, `--path.procfs=${node.procfs}`],
      { env: node.env },
    );
    const client = unixClient(gw.socket);
    try {
      const target = join(kubelet, "pods", "p9", "volumes", "kubernetes.io~csi", "pv 9", "mount");
      node.mount(target);
      node.hang(target);
      const h = { client } as Harness;
      const stuck = await retryUntil(h, "vol-9", target, () => volumeHealth(h, "vol-9", target), (e) => e.some((x) => x.reason === "UnpublishStuck") || node.calls().some((a) => a[0] === "-f"), "reported (or already ended)");
      expect(stuck.length + node.calls().length).toBeGreaterThan(0);
      await eventually(async () => (await unpublish(h, "vol-9", target)).error?.code ?? 0, (c) => c === 0, "a retry succeeds once probegate unmounted");
      expect(node.calls().filter((a) => a[0] === "-f" || a[0] === "-l")).toEqual([["-f", target]]);
      // The step is counted once the mount table, read again after it, shows the path gone.
      const steps = await eventually(
        async () => (await (await fetch(`http://${gw.http}/metrics`)).text()).split("\n").filter((l) => l.startsWith("probegate_unstick_steps_total")),
        (l) => l.length > 0,
        "the step counted",
      );
      expect(steps).toEqual(['probegate_unstick_steps_total{step="force",outcome="unmounted"} 1']);
      await eventually(async () => gw.logs().some((l) => l.msg === "stuck unmount ended by probegate"), (x) => x, "the step logged");

    } finally {
      client.close();
      await gw.stop();
      await driver.stop();
      rmSync(node.dir, { recursive: true, force: true });
    }
  });
});
