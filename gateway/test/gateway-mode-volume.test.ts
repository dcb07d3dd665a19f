import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as grpc from "@grpc/grpc-js";
import pino from "pino";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  NodeGetCapabilitiesResponseSchema,
  NodeGetVolumeStatsRequestSchema,
  NodeServiceCapability_RPC_Type,
  VolumeUsage_Unit,
} from "../gen/csi/v1/csi_pb.js";
// volume_condition and VOLUME_CONDITION left csi.v1 in v1.13; kubelets 1.21-1.36 still read them.
import { LegacyNodeRpcType, NodeGetVolumeStatsResponseSchema } from "../gen/probegate/legacy/v1/volume_condition_pb.js";

const RpcType = { ...NodeServiceCapability_RPC_Type, VOLUME_CONDITION: LegacyNodeRpcType.VOLUME_CONDITION as number as NodeServiceCapability_RPC_Type };
type RpcType = NodeServiceCapability_RPC_Type;
import { PluginRuntime } from "../src/runtime/runtime.js";
import type { SourceResult } from "../src/engine/sources/index.js";
import { createStorageHealth } from "../src/storage-health/index.js";
import { Metrics } from "../src/observability/metrics.js";
import { ScriptedHealth, volumeEntry } from "./helpers/scripted-health.js";
import { rawCall } from "./helpers/fake-csi-driver.js";
import { eventually, startHarness, type Harness } from "./gateway-mode-harness.js";

const CAPS = "/csi.v1.Node/NodeGetCapabilities";
const STATS = "/csi.v1.Node/NodeGetVolumeStats";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function capsReply(types: RpcType[]): Uint8Array {
  return toBinary(
    NodeGetCapabilitiesResponseSchema,
    create(NodeGetCapabilitiesResponseSchema, { capabilities: types.map((type) => ({ type: { case: "rpc" as const, value: { type } } })) }),
  );
}

function statsReply(condition?: { abnormal: boolean; message: string }): Uint8Array {
  return toBinary(
    NodeGetVolumeStatsResponseSchema,
    create(NodeGetVolumeStatsResponseSchema, {
      usage: [{ available: 10n, total: 100n, used: 90n, unit: VolumeUsage_Unit.BYTES }],
      volumeCondition: condition,
    }),
  );
}

function statsRequest(volumeId: string, volumePath: string, stagingTargetPath = ""): Uint8Array {
  return toBinary(NodeGetVolumeStatsRequestSchema, create(NodeGetVolumeStatsRequestSchema, { volumeId, volumePath, stagingTargetPath }));
}

function capabilityTypes(bytes: Buffer): RpcType[] {
  return fromBinary(NodeGetCapabilitiesResponseSchema, bytes).capabilities.map((c) => (c.type.case === "rpc" ? c.type.value.type : -1));
}

// The legacy path: kubelets 1.21-1.36 read volume_condition from NodeGetVolumeStats
// when the driver advertises VOLUME_CONDITION. Since CSI v1.13 probegate sets it
// from the background evaluation (StorageHealthView.volumeCondition), never by
// running the volume plugins inside the call.
describe("gateway mode: the legacy volume_condition (interface)", () => {
  it("advertises VOLUME_CONDITION and sets the condition from the last evaluation", async () => {
    const health = new ScriptedHealth();
    health.volumeChecks = true;
    health.setVolume("vol-bad", [volumeEntry("INACCESSIBLE", "NotMounted", "not mounted: /stage")]);
    health.setVolume("vol-good", []);
    h = await startHarness({ health });
    h.driver.script(CAPS, { message: capsReply([RpcType.STAGE_UNSTAGE_VOLUME, RpcType.GET_VOLUME_STATS]) });
    h.driver.script(STATS, { message: statsReply() });

    const caps = await rawCall(h.client, CAPS, new Uint8Array());
    expect(capabilityTypes(caps.response!)).toEqual([RpcType.STAGE_UNSTAGE_VOLUME, RpcType.GET_VOLUME_STATS, RpcType.VOLUME_CONDITION, RpcType.GET_VOLUME_HEALTH]);

    const bad = await rawCall(h.client, STATS, statsRequest("vol-bad", "/pods/p1/vol", "/stage"));
    const badMsg = fromBinary(NodeGetVolumeStatsResponseSchema, bad.response!);
    expect(badMsg.volumeCondition).toMatchObject({ abnormal: true, message: "NotMounted: not mounted: /stage" });
    expect(badMsg.usage[0]).toMatchObject({ available: 10n, total: 100n, used: 90n });

    const good = await rawCall(h.client, STATS, statsRequest("vol-good", "/pods/p2/vol"));
    expect(fromBinary(NodeGetVolumeStatsResponseSchema, good.response!).volumeCondition).toMatchObject({ abnormal: false });
    expect(await h.metrics.registry.metrics()).toMatch(/probegate_volume_condition_total\{result="abnormal"\} 1/);
    // Answered from memory: nothing was asked to evaluate these volumes on the call path.
    expect(health.requested).toEqual([]);
  });

  it("keeps the driver's own abnormal condition, its capability list, and its errors", async () => {
    const health = new ScriptedHealth();
    health.volumeChecks = true;
    health.setVolume("v", [volumeEntry("INACCESSIBLE", "NotMounted", "ours")]);
    h = await startHarness({ health });
    const already = capsReply([RpcType.VOLUME_CONDITION, RpcType.GET_VOLUME_STATS, RpcType.GET_VOLUME_HEALTH]);
    h.driver.script(CAPS, { message: already });
    const driverAbnormal = statsReply({ abnormal: true, message: "driver: OST0003 unreachable" });
    h.driver.script(STATS, { message: driverAbnormal });
    const caps = await rawCall(h.client, CAPS, new Uint8Array());
    expect(Buffer.compare(caps.response!, Buffer.from(already))).toBe(0);
    const stats = await rawCall(h.client, STATS, statsRequest("v", "/p"));
    expect(Buffer.compare(stats.response!, Buffer.from(driverAbnormal))).toBe(0);

    h.driver.script(STATS, { error: { code: grpc.status.NOT_FOUND, details: "no volume v" } });
    const err = await rawCall(h.client, STATS, statsRequest("v", "/p"));
    expect(err.error?.code).toBe(grpc.status.NOT_FOUND);
    expect(err.error?.details).toBe("no volume v");
  });

  it("leaves replies untouched without volume checks, or for a volume not evaluated yet (which is evaluated from then on)", async () => {
    const health = new ScriptedHealth();
    h = await startHarness({ health });
    const caps = capsReply([RpcType.GET_VOLUME_STATS]);
    const stats = statsReply();
    h.driver.script(CAPS, { message: caps });
    h.driver.script(STATS, { message: stats });
    expect(Buffer.compare((await rawCall(h.client, CAPS, new Uint8Array())).response!, Buffer.from(caps))).toBe(0);
    expect(Buffer.compare((await rawCall(h.client, STATS, statsRequest("v", "/p"))).response!, Buffer.from(stats))).toBe(0);
    expect(health.requested).toEqual([]);

    health.volumeChecks = true;
    expect(Buffer.compare((await rawCall(h.client, STATS, statsRequest("v", "/p", "/s"))).response!, Buffer.from(stats))).toBe(0);
    expect(health.requested).toEqual([{ volumeId: "v", targetPath: "/p", stagingPath: "/s", origin: "request" }]);
  });
});

describe("gateway mode: volume health with the volume-lustre-mount plugin", () => {
  const root = resolve(import.meta.dirname, "../..");
  const wasm = join(root, "dist/plugins/volume-lustre-mount.wasm");
  let dir: string;
  let runtime: PluginRuntime;
  let mounts: string;

  beforeAll(async () => {
    // `npm test` builds plugins first; build this one when run on its own.
    if (!existsSync(wasm)) execFileSync(process.execPath, [join(root, "plugins/build.mjs"), "volume-lustre-mount"], { stdio: "ignore" });
    dir = mkdtempSync(join(tmpdir(), "pg-vol-"));
    mkdirSync(join(dir, "plugins"));
    copyFileSync(wasm, join(dir, "plugins", "volume-lustre-mount.wasm"));
    mounts = join(dir, "mounts");
    runtime = new PluginRuntime({ dir: join(dir, "plugins"), isKnownSource: (n) => n === "proc.mounts", logger: pino({ level: "silent" }) });
    await runtime.start();
  });
  afterAll(async () => {
    await runtime?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("marks a volume abnormal when its staging path is no longer a lustre mount", async () => {
    // Stands in for the catalog's proc.mounts file source (<procfs>/mounts).
    const catalog = {
      read: async (name: string): Promise<SourceResult> => {
        const { readFileSync } = await import("node:fs");
        return { ok: name === "proc.mounts", exitCode: null, stdout: readFileSync(mounts, "utf8"), stderr: "", error: null, truncated: false, fetchedAtMs: Date.now() };
      },
    };
    // The engine's real storage health; no engine rounds here: volume rounds are run by hand.
    const storage = createStorageHealth({ mode: "node", engine: { onRound: () => () => {} }, runtime, catalog, logger: pino({ level: "silent" }), metrics: new Metrics({ processMetrics: false }) });
    storage.start();
    expect(storage.view.hasVolumeChecks()).toBe(true);
    h = await startHarness({ health: { view: storage.view, registry: storage.registry } });
    h.driver.script(STATS, { message: statsReply() });
    h.driver.script(CAPS, { message: capsReply([RpcType.GET_VOLUME_STATS]) });
    expect(capabilityTypes((await rawCall(h.client, CAPS, new Uint8Array())).response!)).toContain(RpcType.VOLUME_CONDITION);

    const stage = "/var/lib/kubelet/plugins/kubernetes.io/csi/azurelustre.csi.azure.com/abc/globalmount";
    const target = "/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pv 1/mount";
    writeFileSync(
      mounts,
      [
        "overlay / overlay rw,relatime 0 0",
        "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0",
        `10.0.0.4@tcp:/lustrefs ${stage} lustre rw,flock,lazystatfs 0 0`,
        `10.0.0.4@tcp:/lustrefs ${target.replace(" ", "\\040")} lustre rw,flock,lazystatfs 0 0`,
        "",
      ].join("\n"),
    );
    // First asked about: the driver's reply goes out unchanged, and the volume is evaluated from then on.
    const first = await rawCall(h.client, STATS, statsRequest("vol-1", target, stage));
    expect(fromBinary(NodeGetVolumeStatsResponseSchema, first.response!).volumeCondition).toBeUndefined();
    await eventually(async () => storage.view.volumeCondition("vol-1"), (c) => c !== undefined, "first evaluation");
    const ok = await rawCall(h.client, STATS, statsRequest("vol-1", target, stage));
    const okCond = fromBinary(NodeGetVolumeStatsResponseSchema, ok.response!).volumeCondition;
    expect(okCond?.abnormal).toBe(false);
    expect(okCond?.message).toMatch(/LustreMounted/);

    // The client was evicted and the mount lazily detached: only the target's bind mount is left, as tmpfs.
    writeFileSync(mounts, ["overlay / overlay rw 0 0", `tmpfs ${target.replace(" ", "\\040")} tmpfs rw 0 0`, ""].join("\n"));
    await storage.refreshVolumes();
    const bad = await rawCall(h.client, STATS, statsRequest("vol-1", target, stage));
    const cond = fromBinary(NodeGetVolumeStatsResponseSchema, bad.response!).volumeCondition;
    expect(cond?.abnormal).toBe(true);
    expect(cond?.message).toContain(`volume-lustre-mount: LustreNotMounted: not mounted: ${stage}`);

    writeFileSync(mounts, ["overlay / overlay rw 0 0", `10.0.0.4@tcp:/lustrefs ${stage} lustre rw 0 0`, `tmpfs ${target.replace(" ", "\\040")} tmpfs rw 0 0`, ""].join("\n"));
    await storage.refreshVolumes();
    const wrong = await rawCall(h.client, STATS, statsRequest("vol-1", target, stage));
    const wrongCond = fromBinary(NodeGetVolumeStatsResponseSchema, wrong.response!).volumeCondition;
    expect(wrongCond?.abnormal).toBe(true);
    expect(wrongCond?.message).toContain(`NotLustre: mounted, but not as lustre: ${target} (tmpfs from tmpfs)`);
    await storage.stop();
  });
});
