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
import { EngineVolumeChecker } from "../src/upstream/engine-volume-checker.js";
import type { VolumeChecker, VolumeRef, VolumeVerdict } from "../src/upstream/volume-checker.js";
import { rawCall } from "./helpers/fake-csi-driver.js";
import { startHarness, type Harness } from "./gateway-mode-harness.js";

const CAPS = "/csi.v1.Node/NodeGetCapabilities";
const STATS = "/csi.v1.Node/NodeGetVolumeStats";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

class ScriptedVolumeChecker implements VolumeChecker {
  readonly seen: VolumeRef[] = [];
  constructor(
    public plugins: boolean,
    public verdict: (v: VolumeRef) => VolumeVerdict | Promise<VolumeVerdict>,
  ) {}
  hasVolumePlugins(): boolean {
    return this.plugins;
  }
  async check(v: VolumeRef): Promise<VolumeVerdict> {
    this.seen.push(v);
    return this.verdict(v);
  }
}

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

describe("gateway mode: volume health (interface)", () => {
  it("advertises VOLUME_CONDITION and sets the condition from the volume checks", async () => {
    const checker = new ScriptedVolumeChecker(true, (v) =>
      v.id === "vol-bad" ? { abnormal: true, message: "volume-lustre-mount: LustreNotMounted: not mounted: /stage" } : { abnormal: false, message: "ok" },
    );
    h = await startHarness({ volumeChecker: checker });
    h.driver.script(CAPS, { message: capsReply([RpcType.STAGE_UNSTAGE_VOLUME, RpcType.GET_VOLUME_STATS]) });
    h.driver.script(STATS, { message: statsReply() });

    const caps = await rawCall(h.client, CAPS, new Uint8Array());
    expect(capabilityTypes(caps.response!)).toEqual([RpcType.STAGE_UNSTAGE_VOLUME, RpcType.GET_VOLUME_STATS, RpcType.VOLUME_CONDITION]);

    const bad = await rawCall(h.client, STATS, statsRequest("vol-bad", "/pods/p1/vol", "/stage"));
    const badMsg = fromBinary(NodeGetVolumeStatsResponseSchema, bad.response!);
    expect(badMsg.volumeCondition).toMatchObject({ abnormal: true, message: "volume-lustre-mount: LustreNotMounted: not mounted: /stage" });
    expect(badMsg.usage[0]).toMatchObject({ available: 10n, total: 100n, used: 90n });
    expect(checker.seen[0]).toEqual({ id: "vol-bad", path: "/pods/p1/vol", stagingPath: "/stage" });

    const good = await rawCall(h.client, STATS, statsRequest("vol-good", "/pods/p2/vol"));
    expect(fromBinary(NodeGetVolumeStatsResponseSchema, good.response!).volumeCondition).toMatchObject({ abnormal: false, message: "ok" });
    expect(checker.seen[1]).toEqual({ id: "vol-good", path: "/pods/p2/vol" });
    expect(await h.metrics.registry.metrics()).toMatch(/probegate_volume_condition_total\{result="abnormal"\} 1/);
  });

  it("keeps the driver's own abnormal condition, its capability list, and its errors", async () => {
    const checker = new ScriptedVolumeChecker(true, () => ({ abnormal: true, message: "ours" }));
    h = await startHarness({ volumeChecker: checker });
    const already = capsReply([RpcType.VOLUME_CONDITION, RpcType.GET_VOLUME_STATS]);
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

  it("leaves replies untouched without volume plugins, or when the check itself breaks", async () => {
    const checker = new ScriptedVolumeChecker(false, () => ({ abnormal: true, message: "never" }));
    h = await startHarness({ volumeChecker: checker });
    const caps = capsReply([RpcType.GET_VOLUME_STATS]);
    const stats = statsReply();
    h.driver.script(CAPS, { message: caps });
    h.driver.script(STATS, { message: stats });
    expect(Buffer.compare((await rawCall(h.client, CAPS, new Uint8Array())).response!, Buffer.from(caps))).toBe(0);
    expect(Buffer.compare((await rawCall(h.client, STATS, statsRequest("v", "/p"))).response!, Buffer.from(stats))).toBe(0);
    expect(checker.seen).toHaveLength(0);

    checker.plugins = true;
    checker.verdict = () => {
      throw new Error("sandbox crashed");
    };
    expect(Buffer.compare((await rawCall(h.client, STATS, statsRequest("v", "/p"))).response!, Buffer.from(stats))).toBe(0);
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
    const checker = new EngineVolumeChecker({ runtime, catalog, mode: "node" });
    expect(checker.hasVolumePlugins()).toBe(true);
    h = await startHarness({ volumeChecker: checker });
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
    const ok = await rawCall(h.client, STATS, statsRequest("vol-1", target, stage));
    const okCond = fromBinary(NodeGetVolumeStatsResponseSchema, ok.response!).volumeCondition;
    expect(okCond?.abnormal).toBe(false);
    expect(okCond?.message).toMatch(/LustreMounted/);

    // The client was evicted and the mount lazily detached: only the target's bind mount is left, as tmpfs.
    writeFileSync(mounts, ["overlay / overlay rw 0 0", `tmpfs ${target.replace(" ", "\\040")} tmpfs rw 0 0`, ""].join("\n"));
    const bad = await rawCall(h.client, STATS, statsRequest("vol-1", target, stage));
    const cond = fromBinary(NodeGetVolumeStatsResponseSchema, bad.response!).volumeCondition;
    expect(cond?.abnormal).toBe(true);
    expect(cond?.message).toContain(`volume-lustre-mount: LustreNotMounted: not mounted: ${stage}`);

    writeFileSync(mounts, ["overlay / overlay rw 0 0", `10.0.0.4@tcp:/lustrefs ${stage} lustre rw 0 0`, `tmpfs ${target.replace(" ", "\\040")} tmpfs rw 0 0`, ""].join("\n"));
    const wrong = await rawCall(h.client, STATS, statsRequest("vol-1", target, stage));
    const wrongCond = fromBinary(NodeGetVolumeStatsResponseSchema, wrong.response!).volumeCondition;
    expect(wrongCond?.abnormal).toBe(true);
    expect(wrongCond?.message).toContain(`NotLustre: mounted, but not as lustre: ${target} (tmpfs from tmpfs)`);
  });
});
