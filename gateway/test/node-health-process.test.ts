// Issue 30, end to end: the probegate process as cli/main.ts wires it (the
// engine's real storage/volume health, createStorageHealth), in node mode with
// a storage check and a volume check loaded, called over its CSI socket with
// grpc-js and v1.13 messages. The checks are small test plugins
// (helpers/health-plugins.ts) over a fake procfs and a fake `stat`.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  NodeGetCapabilitiesResponseSchema,
  NodeGetVolumeStatsRequestSchema,
  NodePublishVolumeRequestSchema,
  NodeUnpublishVolumeRequestSchema,
  NodeGetStorageHealthRequestSchema,
  NodeGetStorageHealthResponseSchema,
  NodeGetVolumeHealthRequestSchema,
  NodeGetVolumeHealthResponseSchema,
  NodeServiceCapability_RPC_Type as RpcType,
} from "../gen/csi/v1/csi_pb.js";
import { eventually } from "./gateway-mode-harness.js";
import { FakeCsiDriver, rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { LegacyNodeRpcType, NodeGetVolumeStatsResponseSchema as LegacyStatsSchema } from "../gen/probegate/legacy/v1/volume_condition_pb.js";
import { startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { storagePlugin, volumePlugin } from "./helpers/health-plugins.js";
import { fakeStatScript } from "./helpers/fake-stat.js";

const UNREACHABLE = JSON.stringify({
  status: "fail",
  reason: "MdtUnreachable",
  message: "fs1: every MDT down",
  facts: {},
  health: [{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", message: "fs1: MDT0000 not FULL/IDLE for 95 s (DISCONN)", fs: "fs1" }],
});

// Prints what `stat -f -c …` would for a path, or fails like it does on an evicted client.
const FAKE_STAT = fakeStatScript({ failures: { "*shutdown*": "Cannot send after transport endpoint shutdown" } });

/** A fake node: procfs whose kernel.release word drives the storage test plugin, and a fake stat on PATH. */
async function fakeNode() {
  const root = tempDir("probegate-node-health-");
  const procfs = join(root, "proc");
  mkdirSync(join(procfs, "1"), { recursive: true });
  mkdirSync(join(procfs, "sys", "kernel"), { recursive: true });
  writeFileSync(join(procfs, "sys", "kernel", "osrelease"), "unreachable\n");
  writeFileSync(join(procfs, "1", "mounts"), "");
  writeFileSync(join(procfs, "mounts"), "");
  const bin = join(root, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "stat"), FAKE_STAT);
  chmodSync(join(bin, "stat"), 0o755);
  const plugins = join(root, "plugins");
  mkdirSync(plugins);
  writeFileSync(join(plugins, "st.wasm"), await storagePlugin("st", "kernel.release", { unreachable: UNREACHABLE }));
  writeFileSync(join(plugins, "vol.wasm"), await volumePlugin("vol"));
  return {
    root,
    args: [`--plugins-dir=${plugins}`, `--path.procfs=${procfs}`, `--path.sysfs=${root}`, "--check-interval=1s", `--kubelet-dir=${join(root, "kubelet")}`],
    env: { PATH: `${bin}:${process.env.PATH ?? ""}` },
  };
}

describe("node mode, the real process: NodeGetStorageHealth and NodeGetVolumeHealth from the background evaluation", () => {
  let gp: GatewayProcess;
  let client: grpc.Client;
  let root: string;

  beforeAll(async () => {
    const node = await fakeNode();
    root = node.root;
    gp = await startGatewayProcess(node.args, { env: node.env });
    client = unixClient(gp.socket);
  }, 180_000);
  afterAll(async () => {
    client?.close();
    await gp?.stop();
  });

  it("advertises both RPCs, answers storage health from the last round, and evaluates a volume asked about from then on", async () => {
    const caps = fromBinary(NodeGetCapabilitiesResponseSchema, (await rawCall(client, "/csi.v1.Node/NodeGetCapabilities", new Uint8Array())).response!);
    expect(caps.capabilities.map((c) => (c.type.case === "rpc" ? c.type.value.type : -1))).toEqual([RpcType.GET_VOLUME_HEALTH, RpcType.GET_STORAGE_HEALTH]);

    const storage = await eventually(
      async () =>
        fromBinary(
          NodeGetStorageHealthResponseSchema,
          (await rawCall(client, "/csi.v1.Node/NodeGetStorageHealth", toBinary(NodeGetStorageHealthRequestSchema, create(NodeGetStorageHealthRequestSchema)))).response!,
        ).backendHealth.map((b) => ({ status: b.status as number, reason: b.reason, message: b.message })),
      (b) => b.length > 0,
      "storage health",
    );
    expect(storage).toEqual([{ status: 2, reason: "MdtUnreachable", message: "fs1: MDT0000 not FULL/IDLE for 95 s (DISCONN)" }]);

    const path = join(root, "kubelet", "pods", "p1", "volumes", "kubernetes.io~csi", "pv-shutdown", "mount");
    const ask = async () =>
      fromBinary(
        NodeGetVolumeHealthResponseSchema,
        (await rawCall(client, "/csi.v1.Node/NodeGetVolumeHealth", toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId: "vol-1", volumePublishPath: path })))).response!,
      ).volumeHealth!;
    const first = await ask();
    expect(first.volumeId).toBe("vol-1");
    const later = await eventually(ask, (v) => v.healthStatuses.length > 0, "volume health");
    expect(later.healthStatuses.map((e) => [e.status as number, e.reason])).toEqual([[2, "StatfsFailed"]]);

    const hostile = await rawCall(client, "/csi.v1.Node/NodeGetVolumeHealth", toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId: "vol-2", volumePublishPath: "/a/../b" })));
    expect(hostile.error?.code).toBe(grpc.status.INVALID_ARGUMENT);

    const verbose = await (await fetch(`http://${gp.http}/readyz?verbose`)).text();
    expect(verbose).toContain("[!]storage health: STORAGE_UNREACHABLE MdtUnreachable (st, since ");
    expect(verbose).toMatch(/\[!\]volume vol-1: INACCESSIBLE StatfsFailed \(vol, since /);

    // Nothing of it on the TCP port.
    const tcp = new grpc.Client(gp.http, grpc.credentials.createInsecure());
    try {
      expect((await rawCall(tcp, "/csi.v1.Node/NodeGetStorageHealth", new Uint8Array())).error?.code).toBe(grpc.status.UNIMPLEMENTED);
    } finally {
      tcp.close();
    }
  });
});

describe("gateway mode, the real process: in front of a driver without the health RPCs", () => {
  let gp: GatewayProcess;
  let driver: FakeCsiDriver;
  let client: grpc.Client;
  let root: string;

  beforeAll(async () => {
    const node = await fakeNode();
    root = node.root;
    driver = new FakeCsiDriver(join(tempDir("pg-nh-driver-"), "driver.sock"), ["Identity", "Node"]);
    await driver.start();
    driver.script("/csi.v1.Node/NodeGetCapabilities", {
      message: toBinary(NodeGetCapabilitiesResponseSchema, create(NodeGetCapabilitiesResponseSchema, { capabilities: [{ type: { case: "rpc", value: { type: RpcType.GET_VOLUME_STATS } } }] })),
    });
    driver.script("/csi.v1.Node/NodeGetVolumeStats", { message: toBinary(LegacyStatsSchema, create(LegacyStatsSchema, { usage: [{ total: 10n }] })) });
    // No readiness check is loaded, so the node is never ready: let mounts through regardless.
    gp = await startGatewayProcess([...node.args, `--upstream=unix://${driver.socketPath}`, "--gate=none"], { env: node.env });
    client = unixClient(gp.socket);
  }, 180_000);
  afterAll(async () => {
    client?.close();
    await gp?.stop();
    await driver?.stop();
  });

  it("adds the capabilities, learns volumes from the publishes it forwards, answers from memory and sets the legacy volume_condition", async () => {
    const caps = fromBinary(NodeGetCapabilitiesResponseSchema, (await rawCall(client, "/csi.v1.Node/NodeGetCapabilities", new Uint8Array())).response!);
    expect(caps.capabilities.map((c) => (c.type.case === "rpc" ? (c.type.value.type as number) : -1))).toEqual([
      RpcType.GET_VOLUME_STATS,
      LegacyNodeRpcType.VOLUME_CONDITION,
      RpcType.GET_VOLUME_HEALTH,
      RpcType.GET_STORAGE_HEALTH,
    ]);

    const target = join(root, "kubelet", "pods", "p1", "volumes", "kubernetes.io~csi", "pv-shutdown", "mount");
    const published = await rawCall(client, "/csi.v1.Node/NodePublishVolume", toBinary(NodePublishVolumeRequestSchema, create(NodePublishVolumeRequestSchema, { volumeId: "vol-7", targetPath: target, secrets: { k: "v" } })));
    expect(published.error).toBeUndefined();

    // Evaluated because it was published: no health request came first.
    const stats = await eventually(
      async () => fromBinary(LegacyStatsSchema, (await rawCall(client, "/csi.v1.Node/NodeGetVolumeStats", toBinary(NodeGetVolumeStatsRequestSchema, create(NodeGetVolumeStatsRequestSchema, { volumeId: "vol-7", volumePath: target })))).response!),
      (r) => r.volumeCondition !== undefined,
      "legacy volume_condition",
    );
    expect(stats.volumeCondition?.abnormal).toBe(true);
    expect(stats.usage[0]?.total).toBe(10n);
    const vh = fromBinary(
      NodeGetVolumeHealthResponseSchema,
      (await rawCall(client, "/csi.v1.Node/NodeGetVolumeHealth", toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId: "vol-7", volumePublishPath: target })))).response!,
    ).volumeHealth!;
    expect(vh.healthStatuses.map((e) => [e.status as number, e.reason])).toEqual([[2, "StatfsFailed"]]);
    const storage = fromBinary(NodeGetStorageHealthResponseSchema, (await rawCall(client, "/csi.v1.Node/NodeGetStorageHealth", new Uint8Array())).response!).backendHealth;
    expect(storage.map((b) => b.reason)).toEqual(["MdtUnreachable"]);
    expect(driver.callsTo("/csi.v1.Node/NodeGetVolumeHealth")).toHaveLength(0);
    expect(driver.callsTo("/csi.v1.Node/NodeGetStorageHealth")).toHaveLength(0);

    expect(await (await fetch(`http://${gp.http}/readyz?verbose`)).text()).toMatch(/\[!\]volume vol-7: INACCESSIBLE StatfsFailed/);
    await rawCall(client, "/csi.v1.Node/NodeUnpublishVolume", toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: "vol-7", targetPath: target })));
    const verbose = await (await fetch(`http://${gp.http}/readyz?verbose`)).text();
    expect(verbose).not.toContain("volume vol-7");
    expect(verbose).toContain("[!]storage health: STORAGE_UNREACHABLE MdtUnreachable");
  });
});
