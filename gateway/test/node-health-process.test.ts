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
  NodeGetStorageHealthRequestSchema,
  NodeGetStorageHealthResponseSchema,
  NodeGetVolumeHealthRequestSchema,
  NodeGetVolumeHealthResponseSchema,
  NodeServiceCapability_RPC_Type as RpcType,
} from "../gen/csi/v1/csi_pb.js";
import { eventually } from "./gateway-mode-harness.js";
import { rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { storagePlugin, volumePlugin } from "./helpers/health-plugins.js";

const UNREACHABLE = JSON.stringify({
  status: "fail",
  reason: "MdtUnreachable",
  message: "fs1: every MDT down",
  facts: {},
  health: [{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", message: "fs1: MDT0000 not FULL/IDLE for 95 s (DISCONN)", fs: "fs1" }],
});

// Prints what `stat -f -c …` would for a path, or fails like it does on an evicted client.
const FAKE_STAT = `#!/bin/sh
for p; do :; done
case "$p" in
  *shutdown*) echo "stat: cannot read file system information for '$p': Cannot send after transport endpoint shutdown" >&2; exit 1 ;;
esac
echo bd00bd0
`;

describe("node mode, the real process: NodeGetStorageHealth and NodeGetVolumeHealth from the background evaluation", () => {
  let gp: GatewayProcess;
  let client: grpc.Client;
  let root: string;

  beforeAll(async () => {
    root = tempDir("probegate-node-health-");
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
    gp = await startGatewayProcess(
      [`--plugins-dir=${plugins}`, `--path.procfs=${procfs}`, `--path.sysfs=${root}`, "--check-interval=1s", `--kubelet-dir=${join(root, "kubelet")}`],
      { env: { PATH: `${bin}:${process.env.PATH ?? ""}` } },
    );
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
