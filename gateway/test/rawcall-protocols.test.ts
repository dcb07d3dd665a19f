// Issue 40 item 2: every RPC probegate answers itself is answered in every
// protocol it serves (gRPC, gRPC-Web, Connect) on the listeners it is allowed
// on, from the same answer; a method that exists but is not served somewhere
// or in some protocol is never called "unknown method". Through running
// gateways (node mode, and gateway mode in front of the fake driver) with
// connect-node's clients and buf curl, as a user would call them.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  Node,
  NodePublishVolumeRequestSchema,
  NodeServiceCapability_RPC_Type as RpcType,
  NodeStageVolumeRequestSchema,
  VolumeCapability_AccessMode_Mode as AccessMode,
} from "../gen/csi/v1/csi_pb.js";
import type { Gateway } from "../src/gateway.js";
import type { CallRecord } from "../src/rawcall/route.js";
import { startHarness, type Harness } from "./gateway-mode-harness.js";
import { rawCall } from "./helpers/fake-csi-driver.js";
import { ROOT } from "./helpers/gateway-process.js";
import { ScriptedHealth, storageEntry, volumeEntry } from "./helpers/scripted-health.js";
import { startNodeModeGateway } from "./helpers/node-mode-gateway.js";

const STORAGE = "/csi.v1.Node/NodeGetStorageHealth";
const STAGE = "/csi.v1.Node/NodeStageVolume";
const PUBLISH = "/csi.v1.Node/NodePublishVolume";

/** Every protocol and HTTP version a client may use on a unix socket or a TCP address. */
function transports(target: { socket: string } | { http: string }): Record<string, Transport> {
  const h1 = "socket" in target ? { baseUrl: "http://localhost", nodeOptions: { socketPath: target.socket } } : { baseUrl: `http://${target.http}` };
  const h2 =
    "socket" in target
      ? { baseUrl: "http://localhost", nodeOptions: { createConnection: () => net.connect(target.socket) } }
      : { baseUrl: `http://${target.http}` };
  return {
    "grpc": createGrpcTransport({ ...h2 }),
    "grpc-web http/1.1": createGrpcWebTransport({ ...h1, httpVersion: "1.1" }),
    "grpc-web h2c": createGrpcWebTransport({ ...h2, httpVersion: "2" }),
    "connect json http/1.1": createConnectTransport({ ...h1, httpVersion: "1.1" }),
    "connect binary h2c": createConnectTransport({ ...h2, httpVersion: "2", useBinaryFormat: true }),
  };
}

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("the call was answered");
}

const volumeRequest = { volumeId: "vol-1", volumePublishPath: "/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/pv-1/mount" };

describe("node mode: the Node RPCs probegate answers, in every protocol on the CSI socket", () => {
  let gw: Gateway | undefined;
  let dir = "";
  afterEach(async () => {
    await gw?.close(100);
    gw = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function start(health: ScriptedHealth) {
    const started = await startNodeModeGateway(health, "pg-rc-");
    ({ gw, dir } = started);
    return started;
  }

  it("answers NodeGetStorageHealth, NodeGetVolumeHealth and NodeGetCapabilities alike over gRPC, gRPC-Web and Connect, errors included", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    health.setStorage([storageEntry("STORAGE_DEGRADED", "OstUnreachable", "lustrefs: OST0003 not FULL/IDLE for 80 s (CONNECTING)", "lustrefs")]);
    health.remember({ volumeId: "vol-1", targetPath: volumeRequest.volumePublishPath, origin: "publish" });
    health.setVolume("vol-1", [volumeEntry("INACCESSIBLE", "MountHung", "statfs has not returned for 12000 ms")]);
    const { socket } = await start(health);
    for (const [way, transport] of Object.entries(transports({ socket }))) {
      const node = createClient(Node, transport);
      const storage = await node.nodeGetStorageHealth({ secrets: { token: "s3cr3t" } });
      expect(storage.backendHealth.map((b) => [b.status, b.reason, b.message]), way).toEqual([[1, "OstUnreachable", "lustrefs: OST0003 not FULL/IDLE for 80 s (CONNECTING)"]]);
      const volume = await node.nodeGetVolumeHealth(volumeRequest);
      expect(volume.volumeHealth?.volumeId, way).toBe("vol-1");
      expect(volume.volumeHealth?.healthStatuses.map((e) => [e.status, e.reason]), way).toEqual([[2, "MountHung"]]);
      const caps = await node.nodeGetCapabilities({});
      expect(caps.capabilities.map((c) => (c.type.case === "rpc" ? c.type.value.type : -1)), way).toEqual([RpcType.GET_VOLUME_HEALTH, RpcType.GET_STORAGE_HEALTH]);
      const noId = await refusal(node.nodeGetVolumeHealth({ volumeId: "" }));
      expect([noId.code, noId.rawMessage], way).toEqual([Code.InvalidArgument, "volume_id is required"]);
      const hostile = await refusal(node.nodeGetVolumeHealth({ volumeId: "vol-x", volumePublishPath: "relative/path" }));
      expect(hostile.code, way).toBe(Code.InvalidArgument);
      expect(hostile.rawMessage, way).toContain("not absolute");
      // The 64 KiB bound of these requests holds in every protocol, worded as the fixed limit it is.
      const big = await refusal(node.nodeGetVolumeHealth({ volumeId: "x".repeat(70_000) }));
      expect(big.code, way).toBe(Code.ResourceExhausted);
      expect(big.rawMessage, way).toContain("65536");
    }
    expect(health.requested).toEqual([]);

    // Nothing loaded to answer from: the same UNIMPLEMENTED, with its reason, in every protocol.
    health.storageChecks = false;
    for (const [way, transport] of Object.entries(transports({ socket }))) {
      const err = await refusal(createClient(Node, transport).nodeGetStorageHealth({}));
      expect([err.code, err.rawMessage], way).toEqual([Code.Unimplemented, `${STORAGE}: no probe:"storage" checks are loaded`]);
    }
  });

  it("on the network port: UNIMPLEMENTED in every protocol saying where they are served, never 'unknown method', and nothing is evaluated", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    const { http, socket } = await start(health);
    for (const [way, transport] of Object.entries(transports({ http }))) {
      const node = createClient(Node, transport);
      for (const [name, call] of [
        ["storage", () => node.nodeGetStorageHealth({})],
        ["volume", () => node.nodeGetVolumeHealth(volumeRequest)],
        ["capabilities", () => node.nodeGetCapabilities({})],
      ] as const) {
        const err = await refusal(call());
        expect(err.code, `${way} ${name}`).toBe(Code.Unimplemented);
        expect(err.rawMessage, `${way} ${name}`).toMatch(/is served on the CSI endpoint only, never on the network port$/);
      }
    }
    expect(health.requested).toEqual([]);
    // A Node method node mode does not serve: not "unknown" either, on the socket or the port, in any protocol.
    for (const target of [{ socket }, { http }]) {
      for (const [way, transport] of Object.entries(transports(target))) {
        const err = await refusal(createClient(Node, transport).nodeStageVolume({ volumeId: "v" }));
        expect(err.code, way).toBe(Code.Unimplemented);
        expect(err.rawMessage, way).not.toContain("unknown method");
        expect(err.rawMessage, way).toContain("only in gateway mode");
      }
    }
    // A method that does not exist is still unknown.
    const res = await fetch(`http://${http}/csi.v1.Node/NodeNoSuchCall`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(await res.json()).toEqual({ code: "unimplemented", message: "unknown method /csi.v1.Node/NodeNoSuchCall" });
  });

  it("buf curl, the quick start's client, gets the same answer in its default protocol (Connect) as in gRPC and gRPC-Web", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = true;
    health.setStorage([storageEntry("STORAGE_UNREACHABLE", "MdtUnreachable", "lustrefs: MDT0000 not FULL/IDLE for 95 s (DISCONN)", "lustrefs")]);
    const { socket } = await start(health);
    const buf = path.join(ROOT, "node_modules/.bin/buf");
    // Asynchronously: the gateway answers from this very process.
    const run = (...protocol: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(buf, ["curl", ...protocol, "--unix-socket", socket, "-d", "{}", `http://localhost${STORAGE}`], { encoding: "utf8", timeout: 60_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });
    const outs = [await run(), await run("--protocol", "grpcweb"), await run("--protocol", "grpc", "--http2-prior-knowledge")];
    for (const o of outs) expect(o.code, o.stderr).toBe(0);
    expect(JSON.parse(outs[0]!.stdout)).toEqual({ backendHealth: [{ status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", message: "lustrefs: MDT0000 not FULL/IDLE for 95 s (DISCONN)" }] });
    expect(outs[1]!.stdout).toBe(outs[0]!.stdout);
    expect(outs[2]!.stdout).toBe(outs[0]!.stdout);
  });
});

describe("gateway mode: answered from memory in every protocol; the driver's methods are forwarded over gRPC only, and say so", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("NodeGetStorageHealth over Connect and gRPC-Web while probegate checks storage; the driver's own, and its mount calls, named as forwarded over gRPC", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = true;
    health.setStorage([storageEntry("STORAGE_DEGRADED", "OstUnreachable", "lustrefs: OST0003", "lustrefs")]);
    h = await startHarness({ services: ["Identity", "Node"], health });
    const socket = h.csiSocket;
    for (const [way, transport] of Object.entries(transports({ socket }))) {
      const storage = await createClient(Node, transport).nodeGetStorageHealth({});
      expect(storage.backendHealth.map((b) => b.reason), way).toEqual(["OstUnreachable"]);
    }
    expect(h.driver.callsTo(STORAGE)).toEqual([]);

    // No volume checks: NodeGetVolumeHealth is the driver's. gRPC reaches it; other protocols are told why not.
    h.driver.script("/csi.v1.Node/NodeGetVolumeHealth", { error: { code: 12, details: "driver: no volume health" } });
    for (const [way, transport] of Object.entries(transports({ socket }))) {
      const err = await refusal(createClient(Node, transport).nodeGetVolumeHealth(volumeRequest));
      expect(err.code, way).toBe(Code.Unimplemented);
      if (way === "grpc") expect(err.rawMessage, way).toBe("driver: no volume health");
      else expect(err.rawMessage, way).toMatch(/is forwarded over gRPC only$/);
    }
    expect(h.driver.callsTo("/csi.v1.Node/NodeGetVolumeHealth")).toHaveLength(1);

    // The mount API: forwarded over gRPC; in any other protocol, UNIMPLEMENTED saying so, and the driver sees nothing.
    h.driver.calls.length = 0;
    for (const [way, transport] of Object.entries(transports({ socket }))) {
      if (way === "grpc") continue;
      const err = await refusal(createClient(Node, transport).nodeStageVolume({ volumeId: "v" }));
      expect(err.code, way).toBe(Code.Unimplemented);
      expect(err.rawMessage, way).toBe(`${STAGE} is forwarded to the CSI driver over gRPC (HTTP/2) only; call it with gRPC`);
    }
    expect(h.driver.calls).toEqual([]);
  });

  it("tells an observer each forwarded call's request and final status (the place operation tracking reads from)", async () => {
    const seen: CallRecord[] = [];
    h = await startHarness({ services: ["Identity", "Node"], observe: (c) => seen.push(c) });
    const publish = (volumeId: string) =>
      toBinary(
        NodePublishVolumeRequestSchema,
        create(NodePublishVolumeRequestSchema, {
          volumeId,
          targetPath: `/var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/${volumeId}/mount`,
          volumeCapability: { accessMode: { mode: AccessMode.SINGLE_NODE_WRITER }, accessType: { case: "mount", value: {} } },
        }),
      );
    h.driver.script(PUBLISH, (req) =>
      fromBinary(NodePublishVolumeRequestSchema, req).volumeId === "busy"
        ? { error: { code: 10, details: "an operation with the given volume ID already exists" } }
        : {},
    );
    expect((await rawCall(h.client, PUBLISH, publish("vol-a"))).error).toBeUndefined();
    expect((await rawCall(h.client, PUBLISH, publish("busy"))).error?.code).toBe(10);
    const stage = toBinary(NodeStageVolumeRequestSchema, create(NodeStageVolumeRequestSchema, { volumeId: "vol-s" }));
    h.readiness.set({ ready: false });
    expect((await rawCall(h.client, STAGE, stage)).error?.code).toBe(14);
    const mine = seen.filter((c) => c.path !== "/csi.v1.Identity/GetPluginInfo");
    expect(mine.map((c) => [c.path, c.status])).toEqual([
      [PUBLISH, 0],
      [PUBLISH, 10],
      [STAGE, 14],
    ]);
    expect(fromBinary(NodePublishVolumeRequestSchema, mine[0]!.request!).volumeId).toBe("vol-a");
    expect(fromBinary(NodePublishVolumeRequestSchema, mine[1]!.request!).volumeId).toBe("busy");
    // Refused before forwarding (the node is not ready): its request was never read.
    expect(mine[2]!.request).toBeUndefined();
    for (const c of mine) expect(c.durationMs).toBeGreaterThanOrEqual(0);
  });
});
