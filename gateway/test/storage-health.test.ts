// Storage and volume health through the real engine, plugin runtime and
// source catalog: AssemblyScript test plugins, a fake procfs (mount table,
// the storage check's input file), and a fake `stat` on PATH that can hang.
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { ReadinessEngine } from "../src/engine/readiness-engine.js";
import { createStorageHealth, VolumeRefError, type StorageHealth } from "../src/storage-health/index.js";
import { SourceCatalog } from "../src/engine/sources/index.js";
import type { HealthChange } from "../src/storage-health/view.js";
import { desiredState } from "../src/kube/desired.js";
import { Metrics } from "../src/observability/metrics.js";
import { pluginMetricHooks } from "../src/runtime/plugin-metrics.js";
import { PluginRuntime } from "../src/runtime/runtime.js";
import { storagePlugin, volumePlugin } from "./helpers/health-plugins.js";
import { compileEcho } from "./hostile/build.js";
import { silentLogger, tempDir, waitFor } from "./hostile/harness.js";
import { probe } from "./gateway-mode-harness.js";
import { unixClient } from "./helpers/fake-csi-driver.js";
import { startGateway } from "../src/gateway.js";
import { LocalProbeSource } from "../src/services/probe-source.js";
import { parseEndpoint } from "../src/transport/endpoint.js";
import { fakeStatScript } from "./helpers/fake-stat.js";

const DEGRADED = JSON.stringify({
  status: "fail",
  reason: "OstUnreachable",
  message: "fs1: OST0003 down",
  facts: {},
  health: [
    { status: "STORAGE_DEGRADED", reason: "OstUnreachable", message: "fs1: OST0003 not FULL/IDLE\nfor 95 s", fs: "fs1" },
    { status: "STORAGE_DEGRADED", reason: "OstUnreachable", message: "a duplicate, dropped" },
    { status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", message: "fs2: every MDT down", fs: "fs2" },
  ],
  events: [{ reason: "Evicted", fs: "fs1", target: "fs1-OST0003", at: 1764100000 }],
});
const WRONG_FAMILY = JSON.stringify({ status: "fail", reason: "X", message: "m", facts: {}, health: [{ status: "DEGRADED", reason: "X", message: "m" }] });

let bin: Record<string, Uint8Array>;
beforeAll(async () => {
  bin = {
    ready: await compileEcho({ name: "ready", modes: ["node"] }),
    st: await storagePlugin("st", "kernel.release", { degraded: DEGRADED, wrongfam: WRONG_FAMILY, garbage: "not json" }),
    vol: await volumePlugin("vol"),
  };
}, 120_000);

const FAKE_STAT = fakeStatScript({
  hang: "*hang*",
  failures: { "*missing*": "No such file or directory", "*shutdown*": "Cannot send after transport endpoint shutdown" },
});

interface Setup {
  root: string;
  engine: ReadinessEngine;
  health: StorageHealth;
  catalog: SourceCatalog;
  metrics: Metrics;
  setCase(word: string): void;
  statLog(): string[];
  round(): Promise<void>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(
  opts: {
    plugins: string[];
    mounts?: string;
    maxVolumes?: number;
    kubeletDir?: (root: string) => string;
    statfsBoundMs?: number;
    statfsIntervalMs?: number;
    statfsMaxOutstanding?: number;
    /** Program names in the test's bin directory to prefix every command with. */
    commandPrefix?: string[];
  } = { plugins: [] },
): Promise<Setup> {
  const dir = await tempDir("probegate-storage-health-");
  const root = dir.path;
  const procfs = join(root, "proc");
  mkdirSync(join(procfs, "1"), { recursive: true });
  mkdirSync(join(procfs, "sys", "kernel"), { recursive: true });
  writeFileSync(join(procfs, "sys", "kernel", "osrelease"), "ok\n");
  writeFileSync(join(procfs, "1", "mounts"), opts.mounts ?? "");
  const binDir = join(root, "bin");
  mkdirSync(binDir);
  writeFileSync(join(binDir, "stat"), FAKE_STAT);
  chmodSync(join(binDir, "stat"), 0o755);
  // A stand-in for nsenter: logs that it was used, then runs the command.
  writeFileSync(join(binDir, "enter"), `#!/bin/sh\necho "$*" >> "${join(root, "enter.log")}"\nwhile [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n`);
  chmodSync(join(binDir, "enter"), 0o755);
  const pluginsDir = join(root, "plugins");
  mkdirSync(pluginsDir);
  for (const name of opts.plugins) writeFileSync(join(pluginsDir, `${name}.wasm`), bin[name]!);
  const log = join(root, "stat.log");
  const env = { ...process.env, PATH: `${binDir}:${process.env.PATH ?? ""}`, FAKE_STAT_LOG: log, FAKE_STAT_HANG: join(root, "hang") };
  const catalog = await SourceCatalog.create({ procfs, sysfs: root, env, logger: silentLogger, defaults: { fileTtlMs: 0 }, statfsBoundMs: opts.statfsBoundMs ?? 3000,
    statfsIntervalMs: opts.statfsIntervalMs ?? 0,
    statfsMaxOutstanding: opts.statfsMaxOutstanding,
    commandPrefix: opts.commandPrefix,
  });
  const metrics = new Metrics({ processMetrics: false });
  const runtime = new PluginRuntime({
    dir: pluginsDir,
    isKnownSource: (n) => catalog.has(n),
    logger: silentLogger,
    quarantineAfter: 1000,
    ...pluginMetricHooks(metrics),
  });
  const engine = new ReadinessEngine({ mode: "node", catalog, runtime, checkIntervalMs: 3_600_000, logger: silentLogger, metrics });
  const health = createStorageHealth({
    mode: "node",
    engine,
    runtime,
    catalog,
    logger: silentLogger,
    metrics,
    maxVolumes: opts.maxVolumes,
    kubeletDir: opts.kubeletDir?.(root),
  });
  cleanups.push(dir.cleanup, () => catalog.stop(), () => engine.stop(), () => health.stop());
  health.start();
  await engine.start();
  await waitFor(() => engine.snapshot().phase !== "initializing", "first round");
  return {
    root,
    engine,
    health,
    catalog,
    metrics,
    setCase: (word) => writeFileSync(join(procfs, "sys", "kernel", "osrelease"), `${word}\n`),
    statLog: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : []),
    round: async () => {
      await engine.refresh();
      await health.refreshVolumes();
    },
  };
}

async function metricValue(m: Metrics, name: string, labels: Record<string, string>): Promise<number | undefined> {
  const metric = m.registry.getSingleMetric(name);
  const data = await metric?.get();
  const row = data?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return row?.value;
}

describe("storage checks", () => {
  it("run every round with round.epoch/previousEpoch, and never count for readiness or the Node condition", async () => {
    const s = await setup({ plugins: ["ready", "st"] });
    const first = s.engine.snapshot().conditions.find((c) => c.name === "st")!;
    expect(first).toMatchObject({ probe: "storage", status: "pass" });
    const [, epoch1, prev1] = /epoch=(\d+) prev=(\d+)/.exec(first.message)!;
    expect(Number(prev1)).toBe(0);
    await s.round();
    const second = s.engine.snapshot().conditions.find((c) => c.name === "st")!;
    const [, epoch2, prev2] = /epoch=(\d+) prev=(\d+)/.exec(second.message)!;
    expect(Number(prev2)).toBe(Number(epoch1));
    expect(Number(epoch2)).toBeGreaterThanOrEqual(Number(epoch1));
    expect(s.health.view.storage()).toEqual([]);
    expect(s.health.view.hasStorageChecks()).toBe(true);
    expect(s.health.view.hasVolumeChecks()).toBe(false);

    s.setCase("degraded");
    await s.round();
    const snap = s.engine.snapshot();
    expect(snap.conditions.find((c) => c.name === "st")).toMatchObject({ probe: "storage", status: "fail", reason: "OstUnreachable" });
    // A failing storage check leaves readiness, liveness and the Node condition alone.
    expect(snap).toMatchObject({ phase: "ready", ready: true, live: true });
    const desired = desiredState(snap, "example.com/LustreReady", true);
    expect(desired.ready).toBe(true);
    expect(desired.conditions.map((c) => c.type)).toEqual(["example.com/LustreReady", "example.com/ready"]);
    expect(desired.conditions[0]).toMatchObject({ status: "True", message: "1 check passed" });
  });

  it("keep entries de-duplicated by (status, reason), one line each, with a stable since, and count events", async () => {
    const s = await setup({ plugins: ["ready", "st"] });
    const changes: HealthChange[] = [];
    s.health.view.subscribe((c) => changes.push(c));
    s.setCase("degraded");
    await s.round();
    const entries = s.health.view.storage();
    expect(entries.map((e) => [e.status, e.reason, e.fs, e.check])).toEqual([
      ["STORAGE_DEGRADED", "OstUnreachable", "fs1", "st"],
      ["STORAGE_UNREACHABLE", "MdtUnreachable", "fs2", "st"],
    ]);
    expect(entries[0]!.message).toBe(String.raw`fs1: OST0003 not FULL/IDLE\nfor 95 s`);
    expect(changes).toEqual([{ storage: true, volumes: [] }]);
    const since = entries.map((e) => e.since);
    await new Promise((r) => setTimeout(r, 1100));
    await s.round();
    expect(s.health.view.storage().map((e) => e.since)).toEqual(since);
    // Unchanged entries: no new notification.
    expect(changes).toHaveLength(1);
    expect(await metricValue(s.metrics, "probegate_storage_events_total", { check: "st", reason: "Evicted" })).toBe(2);
    s.setCase("ok");
    await s.round();
    expect(s.health.view.storage()).toEqual([]);
    expect(changes).toHaveLength(2);
  });

  it("a status of the wrong family is PluginBadOutput; a fault keeps the last good entries 3 rounds, then HealthCheckFailed", async () => {
    const s = await setup({ plugins: ["ready", "st"] });
    s.setCase("degraded");
    await s.round();
    const good = s.health.view.storage().map((e) => [e.status, e.reason]);
    expect(good).toHaveLength(2);
    s.setCase("wrongfam");
    for (let i = 0; i < 3; i++) {
      await s.round();
      const c = s.engine.snapshot().conditions.find((x) => x.name === "st")!;
      expect(c).toMatchObject({ fault: true, reason: "PluginBadOutput" });
      expect(c.message).toContain('health status DEGRADED is not allowed for a probe "storage" plugin');
      expect(s.health.view.storage().map((e) => [e.status, e.reason])).toEqual(good);
    }
    s.setCase("garbage");
    await s.round();
    const failed = s.health.view.storage();
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ status: "STORAGE_DEGRADED", reason: "HealthCheckFailed", check: "st" });
    expect(failed[0]!.message).toMatch(/^st: the check could not run: PluginBadOutput: /);
    // Still no effect on readiness.
    expect(s.engine.snapshot().ready).toBe(true);
    s.setCase("degraded");
    await s.round();
    expect(s.health.view.storage().map((e) => [e.status, e.reason])).toEqual(good);
  });
});

describe("volume health", () => {
  it("evaluates a requested or published volume in the background, with its facts and statfs, and forgets it", async () => {
    const mounts = "10.0.0.1@tcp:/fs1 /mnt/b\\040b lustre ro,flock 0 0\n10.0.0.1@tcp:/fs1 /mnt/a lustre rw,flock 0 0\n";
    const s = await setup({ plugins: ["ready", "vol"], mounts });
    expect(s.health.view.hasVolumeChecks()).toBe(true);
    const changes: HealthChange[] = [];
    s.health.view.subscribe((c) => changes.push(c));
    s.health.registry.request({ volumeId: "v1", targetPath: "/mnt/a", origin: "request" });
    // Answered from memory: nothing was evaluated on the call.
    expect(s.health.view.volume("v1")).toBeUndefined();
    expect(s.health.view.volumeCondition("v1")).toBeUndefined();
    const entries = await waitFor(() => s.health.view.volume("v1"), "v1 evaluated");
    expect(entries).toEqual([]);
    expect(s.health.view.volumeCondition("v1")).toMatchObject({ abnormal: false });
    expect(s.health.view.volumeCondition("v1")!.message).toContain("id=v1 ro= staging= statfs=/mnt/a ok bd00bd0 rw");

    s.health.registry.remember({ volumeId: "v2", targetPath: "/mnt/b b", stagingPath: "/stage/v2", readOnly: false, origin: "publish" });
    await waitFor(() => s.health.view.volume("v2"), "v2 evaluated");
    const msg = s.health.view.volumeCondition("v2")!.message;
    // Staging path first, then the publish path escaped like /proc/mounts; ro from that mount's options.
    expect(msg).toMatch(/id=v2 ro=false staging=\/stage\/v2 statfs=\/stage\/v2 ok bd00bd0 rw\\n\/mnt\/b\\040b ok bd00bd0 ro/);
    expect(changes.flatMap((c) => c.volumes)).toEqual(expect.arrayContaining(["v1", "v2"]));
    expect(s.health.view.volumes().map((v) => [v.ref.volumeId, v.ref.origin, v.ref.readOnly])).toEqual([
      ["v1", "request", undefined],
      ["v2", "publish", false],
    ]);

    s.health.registry.remember({ volumeId: "v3", targetPath: "/mnt/missing", origin: "publish" });
    s.health.registry.remember({ volumeId: "v4", targetPath: "/mnt/shutdown", origin: "publish" });
    await s.round();
    expect(s.health.view.volume("v3")).toMatchObject([{ status: "INACCESSIBLE", reason: "StatfsFailed", check: "vol" }]);
    expect(s.health.view.volume("v3")![0]!.message).toContain("/mnt/missing error ENOENT");
    expect(s.health.view.volume("v4")![0]!.message).toContain("/mnt/shutdown error ESHUTDOWN");
    expect(s.health.view.volumeCondition("v3")).toMatchObject({ abnormal: true });

    s.health.registry.forget("v2", { targetPath: "/mnt/b b" });
    expect(s.health.view.volume("v2")).not.toBeUndefined(); // the staging path is still known
    s.health.registry.forget("v2", { stagingPath: "/stage/v2" });
    expect(s.health.view.volume("v2")).toBeUndefined();
    expect(s.health.view.volumes().map((v) => v.ref.volumeId)).toEqual(["v1", "v3", "v4"]);
    expect(changes.at(-1)).toEqual({ storage: false, volumes: ["v2"] });
  });

  it("refuses hostile ids and paths with the INVALID_ARGUMENT text, and stays bounded by --max-volumes", async () => {
    const s = await setup({ plugins: ["ready", "vol"], maxVolumes: 3 });
    const bad: Array<[Parameters<typeof s.health.registry.request>[0], RegExp]> = [
      [{ volumeId: "", targetPath: "/mnt/a", origin: "request" }, /^volume_id is empty$/],
      [{ volumeId: "x".repeat(1025), targetPath: "/mnt/a", origin: "request" }, /^volume_id is longer than 1024 bytes$/],
      [{ volumeId: "v", targetPath: "mnt/a", origin: "request" }, /^volume path is not an absolute path: "mnt\/a"$/],
      [{ volumeId: "v", targetPath: "/mnt/../etc", origin: "request" }, /^volume path has a "\.\." segment/],
      [{ volumeId: "v", stagingPath: "/mnt/a\0b", origin: "request" }, /^staging path contains a NUL byte$/],
      [{ volumeId: "v", targetPath: `/${"a".repeat(4096)}`, origin: "request" }, /^volume path is longer than 4096 bytes$/],
    ];
    for (const [ref, text] of bad) {
      let err: unknown;
      try {
        s.health.registry.request(ref);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(VolumeRefError);
      expect((err as VolumeRefError).kind).toBe("invalid");
      expect((err as Error).message).toMatch(text);
    }
    expect(s.health.view.volumes()).toEqual([]);
    expect(await metricValue(s.metrics, "probegate_volumes_refused_total", { reason: "invalid" })).toBe(bad.length);

    for (const id of ["a", "b", "c"]) s.health.registry.request({ volumeId: id, targetPath: `/mnt/${id}`, origin: "request" });
    expect(() => s.health.registry.remember({ volumeId: "d", targetPath: "/mnt/d", origin: "publish" })).toThrow(/already tracks 3 volumes \(--max-volumes 3\)/);
    expect(await metricValue(s.metrics, "probegate_volumes_refused_total", { reason: "limit" })).toBe(1);
    // A known volume still takes a new path.
    s.health.registry.remember({ volumeId: "a", targetPath: "/mnt/a2", readOnly: true, origin: "publish" });
    expect(s.health.view.volumes().find((v) => v.ref.volumeId === "a")!.ref).toMatchObject({ targetPath: "/mnt/a2", readOnly: true, origin: "publish" });
    // And the volume.statfs source refuses a hostile fact by itself, before anything runs.
    const r = await s.catalog.read("volume.statfs", { "volume.path": "/mnt/../x" });
    expect(r).toMatchObject({ ok: false, error: 'fact volume.path has a ".." segment: "/mnt/../x"' });
    expect(s.statLog().some((l) => l.includes("/mnt/../x"))).toBe(false);
  });

  it("a hanging statfs: the batch it stops and one probe of its own, never spawned again while it hangs, reported hung; the rest goes on", async () => {
    const s = await setup({ plugins: ["ready", "vol"], statfsBoundMs: 1000 });
    writeFileSync(join(s.root, "hang"), "");
    s.health.registry.remember({ volumeId: "vh", targetPath: "/mnt/hang1", origin: "publish" });
    s.health.registry.remember({ volumeId: "vok", targetPath: "/mnt/fine", origin: "publish" });
    for (let i = 0; i < 4; i++) {
      await s.round();
      await new Promise((r) => setTimeout(r, 1100));
    }
    // Both volumes' paths went to one stat, which stopped at hang1: past the
    // bound each path got a probe of its own, and nothing more was started.
    const hung = s.statLog().filter((l) => l.endsWith(" /mnt/hang1"));
    expect(hung).toHaveLength(2);
    expect(new Set(hung.map((l) => l.split(" ")[0])).size).toBe(2);
    expect(s.catalog.statfsOutstanding()).toBe(2);
    const entries = s.health.view.volume("vh")!;
    expect(entries).toMatchObject([{ status: "INACCESSIBLE", reason: "MountHung" }]);
    const ms = Number(/\/mnt\/hang1 hung (\d+)/.exec(entries[0]!.message)![1]);
    expect(ms).toBeGreaterThanOrEqual(1000);
    expect(s.health.view.volume("vok")).toEqual([]);
    expect(s.statLog().filter((l) => l.endsWith(" /mnt/fine")).length).toBeGreaterThanOrEqual(2);
    // The engine's rounds and snapshot are untouched.
    expect(s.engine.snapshot()).toMatchObject({ ready: true });

    // The hang ends: the probe is reaped, and the next one runs anew.
    rmSync(join(s.root, "hang"));
    await waitFor(() => s.catalog.statfsOutstanding() === 0, "hung probe reaped");
    await waitFor(async () => {
      await s.round();
      return s.health.view.volume("vh")!.length === 0;
    }, "vh healthy again");
    expect(s.statLog().filter((l) => l.endsWith(" /mnt/hang1")).length).toBeGreaterThanOrEqual(2);
  });

  it("Probe keeps answering through a running gateway while every volume's statfs hangs", async () => {
    const s = await setup({ plugins: ["ready", "vol"], statfsBoundMs: 200 });
    const socket = join(s.root, "csi.sock");
    const gw = await startGateway({
      csiEndpoint: parseEndpoint(`unix://${socket}`),
      identity: { driverName: "probegate.test", vendorVersion: "0.0.0", manifest: {}, capabilities: [] },
      readiness: s.engine,
      probe: new LocalProbeSource(s.engine, "readiness"),
      logger: silentLogger,
      metrics: s.metrics,
    });
    const client = unixClient(socket);
    cleanups.push(async () => {
      client.close();
      await gw.close(1000);
    });
    writeFileSync(join(s.root, "hang"), "");
    for (let i = 0; i < 8; i++) s.health.registry.remember({ volumeId: `v${i}`, targetPath: `/mnt/hang${i}`, origin: "publish" });
    for (let i = 0; i < 3; i++) {
      const rounds = s.round();
      expect(await probe(client)).toEqual({ ready: true });
      await rounds;
      expect(await probe(client)).toEqual({ ready: true });
    }
    for (let i = 0; i < 8; i++) expect(s.health.view.volume(`v${i}`)).toMatchObject([{ status: "INACCESSIBLE", reason: "MountHung" }]);
    // One process per hung mount and the batch that stopped at the first, however many rounds asked.
    expect(s.catalog.statfsOutstanding()).toBe(9);
    expect(s.statLog()).toHaveLength(9);
  });

  it("reuses a healthy path's answer for the statfs interval, never a failure", async () => {
    const s = await setup({ plugins: ["vol"], statfsIntervalMs: 3_600_000 });
    s.health.registry.remember({ volumeId: "a", targetPath: "/mnt/fine", origin: "publish" });
    s.health.registry.remember({ volumeId: "m", targetPath: "/mnt/missing", origin: "publish" });
    for (let i = 0; i < 3; i++) {
      await s.round();
      await new Promise((r) => setTimeout(r, 1100)); // past the source cache's second
    }
    expect(s.statLog().filter((l) => l.endsWith(" /mnt/fine"))).toHaveLength(1);
    expect(s.statLog().filter((l) => l.endsWith(" /mnt/missing")).length).toBeGreaterThanOrEqual(3);
    expect(s.health.view.volume("a")).toEqual([]);
    expect(s.health.view.volume("m")).toMatchObject([{ reason: "StatfsFailed" }]);
  });

  it("probes a round's paths in one stat; a path that fails there gets its own error, then probes of its own", async () => {
    const s = await setup({ plugins: ["vol"] });
    s.health.registry.remember({ volumeId: "a", targetPath: "/mnt/fine-a", origin: "publish" });
    s.health.registry.remember({ volumeId: "b", targetPath: "/mnt/fine-b", origin: "publish" });
    s.health.registry.remember({ volumeId: "c", targetPath: "/mnt/shutdown-c", origin: "publish" });
    await s.round();
    const first = s.statLog();
    expect(first.map((l) => l.split(" ")[1]).sort()).toEqual(["/mnt/fine-a", "/mnt/fine-b", "/mnt/shutdown-c"]);
    expect(new Set(first.map((l) => l.split(" ")[0])).size).toBe(1);
    expect(s.health.view.volume("a")).toEqual([]);
    expect(s.health.view.volume("b")).toEqual([]);
    expect(s.health.view.volume("c")).toMatchObject([{ reason: "StatfsFailed", message: expect.stringContaining("/mnt/shutdown-c error ESHUTDOWN") }]);

    await new Promise((r) => setTimeout(r, 1100)); // past the source cache's second
    await s.round();
    // The healthy two together again; the failing one alone, still with its own error.
    expect(pathsByProcess(s.statLog().slice(first.length)).map((paths) => paths.sort()).sort()).toEqual([["/mnt/fine-a", "/mnt/fine-b"], ["/mnt/shutdown-c"]]);
    expect(s.health.view.volume("c")).toMatchObject([{ reason: "StatfsFailed", message: expect.stringContaining("/mnt/shutdown-c error ESHUTDOWN") }]);
  });

  it("a round over 50 volumes probes their paths in two stats (at most 32 paths in one)", async () => {
    const s = await setup({ plugins: ["vol"], statfsMaxOutstanding: 8 });
    for (let i = 0; i < 50; i++) s.health.registry.remember({ volumeId: `v${i}`, targetPath: `/mnt/fine-${i}`, origin: "publish" });
    await s.round();
    await new Promise((r) => setTimeout(r, 1100)); // past the source cache's second
    const before = s.statLog().length;
    await s.round();
    expect(pathsByProcess(s.statLog().slice(before)).map((paths) => paths.length).sort((a, b) => a - b)).toEqual([18, 32]);
    expect(s.health.view.volumes().filter((v) => v.entries!.length > 0)).toEqual([]);
  });

  it("caps the probes outstanding (a batch is one): past the cap a path is `error EAGAIN`, nothing spawned", async () => {
    const s = await setup({ plugins: ["vol"], statfsMaxOutstanding: 2, statfsBoundMs: 200 });
    writeFileSync(join(s.root, "hang"), "");
    for (let i = 0; i < 3; i++) s.health.registry.remember({ volumeId: `v${i}`, targetPath: `/mnt/hang${i}`, origin: "publish" });
    await s.round();
    await s.round();
    const reasons = [0, 1, 2].map((i) => s.health.view.volume(`v${i}`)![0]!);
    // The hung batch holds one place and hang0's own probe the other.
    expect(reasons.filter((e) => e.reason === "MountHung")).toHaveLength(1);
    expect(reasons.filter((e) => e.reason === "StatfsFailed" && e.message.includes(" error EAGAIN"))).toHaveLength(2);
    expect(s.catalog.statfsOutstanding()).toBe(2);
    expect(s.statLog()).toHaveLength(2);
  });

  it("runs statfs through the command prefix, like lnetctl", async () => {
    const s = await setup({ plugins: ["vol"], commandPrefix: ["enter", "--mount=/proc/1/ns/mnt", "--"] });
    s.health.registry.remember({ volumeId: "a", targetPath: "/mnt/a b", origin: "publish" });
    await waitFor(() => s.health.view.volume("a"), "a evaluated");
    expect(s.health.view.volume("a")).toEqual([]);
    expect(readFileSync(join(s.root, "enter.log"), "utf8")).toBe("--mount=/proc/1/ns/mnt -- stat -f -c %t -- /mnt/a b\n");
  });

  it("a burst of requests for new volumes is evaluated a few at a time, every one of them", async () => {
    const s = await setup({ plugins: ["vol"], statfsMaxOutstanding: 8 });
    for (let i = 0; i < 60; i++) s.health.registry.request({ volumeId: `r${i}`, targetPath: `/mnt/r${i}`, origin: "request" });
    await waitFor(() => s.health.view.volumes().every((v) => v.entries !== undefined), "all evaluated", 30_000);
    // None was refused by the outstanding-probe cap: the queue kept within it.
    expect(s.health.view.volumes().filter((v) => v.entries!.length > 0)).toEqual([]);
  });

  it("stopping ends a hung probe's process", async () => {
    const s = await setup({ plugins: ["vol"], statfsBoundMs: 200 });
    writeFileSync(join(s.root, "hang"), "");
    s.health.registry.remember({ volumeId: "vh", targetPath: "/mnt/hang1", origin: "publish" });
    await waitFor(() => s.health.view.volume("vh"), "vh evaluated");
    const pid = Number(s.statLog()[0]!.split(" ")[0]);
    expect(isAlive(pid)).toBe(true);
    await s.health.stop();
    await s.catalog.stop();
    await waitFor(() => !isAlive(pid), "hung stat killed");
  });
});

/** The fake stat's log lines (`PID PATH`) as the paths each process was given. */
function pathsByProcess(lines: readonly string[]): string[][] {
  const byPid = new Map<string, string[]>();
  for (const l of lines) {
    const [pid, path] = l.split(" ");
    byPid.set(pid!, [...(byPid.get(pid!) ?? []), path!]);
  }
  return [...byPid.values()];
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

describe("rediscovery after a restart", () => {
  function csiLines(kubelet: string, n: number, from = 0): string {
    const esc = kubelet.replace(/ /g, "\\040");
    let out = "";
    for (let i = from; i < from + n; i++) out += `10.0.0.1@tcp:/fs1 ${esc}/pods/uid-${i}/volumes/kubernetes.io~csi/pv-${i}/mount lustre rw,flock 0 0\n`;
    return out;
  }
  function volData(dir: string, handle: unknown): void {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "vol_data.json"), JSON.stringify({ specVolumeID: "pv", volumeHandle: handle, driverName: "lustre.csi.example.com" }));
  }

  it("finds the kubelet's Lustre mounts (escaped paths) and their volume ids in vol_data.json", async () => {
    const probe = await tempDir();
    cleanups.push(probe.cleanup);
    const kubelet = join(probe.path, "kube let");
    const esc = kubelet.replace(/ /g, "\\040");
    volData(join(kubelet, "pods/uid-1/volumes/kubernetes.io~csi/pv-1"), "fs1/vol-1");
    volData(join(kubelet, "plugins/kubernetes.io/csi/lustre.csi.example.com/abc123"), "fs1/vol-1");
    volData(join(kubelet, "pods/uid-2/volumes/kubernetes.io~csi/pv-2"), "fs1/vol-2");
    volData(join(kubelet, "pods/uid-3/volumes/kubernetes.io~csi/pv-3"), 42); // not a handle
    volData(join(kubelet, "pods/uid-5/volumes/kubernetes.io~csi/pv-5"), "fs1/vol-5");
    const mounts = [
      "sysfs /sys sysfs rw 0 0",
      `10.0.0.1@tcp:/fs1 ${esc}/plugins/kubernetes.io/csi/lustre.csi.example.com/abc123/globalmount lustre rw,flock 0 0`,
      `10.0.0.1@tcp:/fs1 ${esc}/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount lustre rw,flock 0 0`,
      `10.0.0.1@tcp:/fs1 ${esc}/pods/uid-2/volumes/kubernetes.io~csi/pv-2/mount lustre ro,flock 0 0`,
      `10.0.0.1@tcp:/fs1 ${esc}/pods/uid-3/volumes/kubernetes.io~csi/pv-3/mount lustre rw 0 0`,
      `10.0.0.1@tcp:/fs1 ${esc}/pods/uid-4/volumes/kubernetes.io~csi/pv-4/mount lustre rw 0 0`, // no vol_data.json
      `/dev/sda1 ${esc}/pods/uid-9/volumes/kubernetes.io~csi/pv-9/mount ext4 rw 0 0`, // not Lustre
      // A last line cut mid-way (the table changed or was capped while read): dropped.
      `10.0.0.1@tcp:/fs1 ${esc}/pods/uid-5/volumes/kubernetes.io~csi/pv-5/mount lustre rw`,
    ].join("\n");
    const s = await setup({ plugins: ["ready", "vol"], mounts, kubeletDir: () => kubelet });
    await s.health.refreshVolumes();
    const vols = s.health.view.volumes().map((v) => v.ref);
    expect(vols).toEqual([
      {
        volumeId: "fs1/vol-1",
        targetPath: `${kubelet}/pods/uid-1/volumes/kubernetes.io~csi/pv-1/mount`,
        stagingPath: `${kubelet}/plugins/kubernetes.io/csi/lustre.csi.example.com/abc123/globalmount`,
        origin: "mounts",
      },
      { volumeId: "fs1/vol-2", targetPath: `${kubelet}/pods/uid-2/volumes/kubernetes.io~csi/pv-2/mount`, origin: "mounts" },
    ]);
    // Evaluated in that same round, its statfs through the escaped path.
    expect(s.health.view.volumeCondition("fs1/vol-2")!.message).toContain(`${esc}/pods/uid-2/volumes/kubernetes.io~csi/pv-2/mount ok bd00bd0 ro`);
    // A publish for a rediscovered volume takes it over.
    s.health.registry.remember({ volumeId: "fs1/vol-2", targetPath: `${kubelet}/pods/uid-2/volumes/kubernetes.io~csi/pv-2/mount`, readOnly: true, origin: "publish" });
    expect(s.health.view.volumes()[1]!.ref).toMatchObject({ origin: "publish", readOnly: true });
  });

  it("reads a vol_data.json past its first read (4 KiB), to the byte, and skips one over 64 KiB", async () => {
    const probe = await tempDir();
    cleanups.push(probe.cleanup);
    const kubelet = join(probe.path, "kubelet");
    // The handle last, after padding: only a whole read finds it.
    const write = (i: number, pad: number) => {
      const dir = join(kubelet, `pods/uid-${i}/volumes/kubernetes.io~csi/pv-${i}`);
      mkdirSync(dir, { recursive: true });
      const head = `{"driverName":"lustre.csi.example.com","pad":"`;
      const tail = `","volumeHandle":"vol-${i}"}`;
      writeFileSync(join(dir, "vol_data.json"), head + "x".repeat(pad - head.length - tail.length) + tail);
    };
    const sizes = [4095, 4096, 4097, 40_000, 64 * 1024, 64 * 1024 + 1];
    sizes.forEach((size, i) => write(i, size));
    const s = await setup({ plugins: ["vol"], mounts: csiLines(kubelet, sizes.length), kubeletDir: () => kubelet });
    await s.health.refreshVolumes();
    expect(s.health.view.volumes().map((v) => v.ref.volumeId)).toEqual(["vol-0", "vol-1", "vol-2", "vol-3", "vol-4"]);
  });

  it("stays bounded with thousands of mount entries", async () => {
    const probe = await tempDir();
    cleanups.push(probe.cleanup);
    const kubelet = join(probe.path, "kubelet");
    for (let i = 0; i < 300; i++) volData(join(kubelet, `pods/uid-${i}/volumes/kubernetes.io~csi/pv-${i}`), `vol-${i}`);
    let noise = "";
    for (let i = 0; i < 5000; i++) noise += `tmpfs /run/noise/${i} tmpfs rw 0 0\n`;
    const s = await setup({ plugins: ["vol"], mounts: noise + csiLines(kubelet, 3000), kubeletDir: () => kubelet, maxVolumes: 50 });
    await s.health.refreshVolumes();
    expect(s.health.view.volumes()).toHaveLength(50);
    expect(await metricValue(s.metrics, "probegate_volumes_refused_total", { reason: "limit" })).toBe(1);
    expect(s.health.view.volume("vol-0")).toEqual([]);
  });
});
