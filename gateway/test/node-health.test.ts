// Issue 30: CSI v1.13's NodeGetStorageHealth and NodeGetVolumeHealth, served by
// running gateways (node mode, and gateway mode in front of the fake driver),
// called with grpc-js and messages encoded from the v1.13 csi.proto.
//
// The engine's health (StorageHealthView/VolumeRegistry) is the test
// implementation in helpers/scripted-health.ts, injected through the same
// `health` options the engine's factory feeds in cli/main.ts.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { rmSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import {
  NodeGetCapabilitiesResponseSchema,
  NodeGetStorageHealthRequestSchema,
  NodeGetStorageHealthResponseSchema,
  NodeGetVolumeHealthRequestSchema,
  NodeGetVolumeHealthResponseSchema,
  NodeGetVolumeStatsRequestSchema,
  NodePublishVolumeRequestSchema,
  NodeServiceCapability_RPC_Type as RpcType,
  NodeStageVolumeRequestSchema,
  NodeUnpublishVolumeRequestSchema,
  StorageHealthErrorType,
  VolumeCapability_AccessMode_Mode as AccessMode,
  VolumeHealthErrorType,
  VolumeUsage_Unit,
} from "../gen/csi/v1/csi_pb.js";
import { LegacyNodeRpcType, NodeGetVolumeStatsResponseSchema as LegacyStatsSchema } from "../gen/probegate/legacy/v1/volume_condition_pb.js";
import * as reflV1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import { startGateway, type Gateway } from "../src/gateway.js";
import { Metrics } from "../src/observability/metrics.js";
import { parseEndpoint } from "../src/transport/endpoint.js";
import { startHarness, type Harness } from "./gateway-mode-harness.js";
import { rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { grpcJsClient } from "./helpers/grpc-js-client.js";
import { ScriptedHealth, storageEntry, volumeEntry } from "./helpers/scripted-health.js";
import { startNodeModeGateway } from "./helpers/node-mode-gateway.js";

const CAPS = "/csi.v1.Node/NodeGetCapabilities";
const STORAGE = "/csi.v1.Node/NodeGetStorageHealth";
const VOLUME = "/csi.v1.Node/NodeGetVolumeHealth";
const STATS = "/csi.v1.Node/NodeGetVolumeStats";
const STAGE = "/csi.v1.Node/NodeStageVolume";
const PUBLISH = "/csi.v1.Node/NodePublishVolume";
const UNPUBLISH = "/csi.v1.Node/NodeUnpublishVolume";
const VOLUME_CONDITION = LegacyNodeRpcType.VOLUME_CONDITION as number;

const storageReq = (secrets: Record<string, string> = {}) => toBinary(NodeGetStorageHealthRequestSchema, create(NodeGetStorageHealthRequestSchema, { secrets }));
const volumeReq = (volumeId: string, volumePublishPath = "", stagingTargetPath = "") =>
  toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId, volumePublishPath, stagingTargetPath }));
const capsOf = (b: Buffer) => fromBinary(NodeGetCapabilitiesResponseSchema, b).capabilities.map((c) => (c.type.case === "rpc" ? (c.type.value.type as number) : -1));
const capsReply = (types: number[]) =>
  toBinary(NodeGetCapabilitiesResponseSchema, create(NodeGetCapabilitiesResponseSchema, { capabilities: types.map((type) => ({ type: { case: "rpc" as const, value: { type } } })) }));
const backends = (b: Buffer) => fromBinary(NodeGetStorageHealthResponseSchema, b).backendHealth.map((e) => ({ status: e.status as number, reason: e.reason, message: e.message }));
const volumeHealth = (b: Buffer) => fromBinary(NodeGetVolumeHealthResponseSchema, b).volumeHealth!;

describe("the v1.13 numbers on the wire", () => {
  it("are the released ones, not the KEP draft's", () => {
    expect([StorageHealthErrorType.STORAGE_DEGRADED, StorageHealthErrorType.STORAGE_UNREACHABLE]).toEqual([1, 2]);
    expect([VolumeHealthErrorType.DEGRADED, VolumeHealthErrorType.INACCESSIBLE, VolumeHealthErrorType.DATA_LOSS]).toEqual([1, 2, 3]);
    expect([RpcType.GET_VOLUME_HEALTH, RpcType.GET_STORAGE_HEALTH]).toEqual([7, 8]);
    // One entry, status 2 / reason "R": field 1 (backend_health) { field 1 varint 2, field 2 "R" }.
    const bytes = toBinary(NodeGetStorageHealthResponseSchema, create(NodeGetStorageHealthResponseSchema, { backendHealth: [{ status: 2, reason: "R" }] }));
    expect(Buffer.from(bytes).toString("hex")).toBe("0a050802120152");
  });
});

describe("node mode: the health RPCs on the CSI socket", () => {
  let gw: Gateway | undefined;
  let dir = "";
  const clients: grpc.Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    await gw?.close(100);
    gw = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function start(health: ScriptedHealth) {
    const started = await startNodeModeGateway(health, "pg-nh-");
    ({ gw, dir } = started);
    const { socket } = started;
    const unix = unixClient(socket);
    const tcp = new grpc.Client(started.http, grpc.credentials.createInsecure());
    clients.push(unix, tcp);
    return { unix, tcp, socket, http: started.http };
  }

  it("advertises each RPC only while its checks are loaded, and refuses the unconfigured one", async () => {
    const health = new ScriptedHealth();
    const { unix } = await start(health);
    expect(capsOf((await rawCall(unix, CAPS, new Uint8Array())).response!)).toEqual([]);
    const refused = await rawCall(unix, STORAGE, storageReq());
    expect(refused.error?.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(refused.error?.details).toContain('no probe:"storage" checks are loaded');

    health.volumeChecks = true;
    expect(capsOf((await rawCall(unix, CAPS, new Uint8Array())).response!)).toEqual([RpcType.GET_VOLUME_HEALTH]);
    health.storageChecks = true;
    expect(capsOf((await rawCall(unix, CAPS, new Uint8Array())).response!)).toEqual([RpcType.GET_VOLUME_HEALTH, RpcType.GET_STORAGE_HEALTH]);
  });

  it("answers NodeGetStorageHealth from the last evaluation, re-encoding only when it changes", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = true;
    const { unix } = await start(health);
    expect(backends((await rawCall(unix, STORAGE, storageReq({ token: "s3cr3t" }))).response!)).toEqual([]);

    health.setStorage([
      storageEntry("STORAGE_UNREACHABLE", "MdtUnreachable", "lustrefs: MDT0000 not FULL/IDLE for 95 s (DISCONN)", "lustrefs"),
      storageEntry("STORAGE_DEGRADED", "OstUnreachable", "lustrefs: OST0003 not FULL/IDLE for 80 s (CONNECTING)", "lustrefs"),
    ]);
    const readsBefore = health.reads;
    for (let i = 0; i < 3; i++) {
      expect(backends((await rawCall(unix, STORAGE, storageReq())).response!)).toEqual([
        { status: 2, reason: "MdtUnreachable", message: "lustrefs: MDT0000 not FULL/IDLE for 95 s (DISCONN)" },
        { status: 1, reason: "OstUnreachable", message: "lustrefs: OST0003 not FULL/IDLE for 80 s (CONNECTING)" },
      ]);
    }
    // Three answers, one read of the view: the encoded answer is reused until the next change.
    expect(health.reads - readsBefore).toBe(1);

    health.setStorage([]);
    expect(backends((await rawCall(unix, STORAGE, storageReq())).response!)).toEqual([]);
  });

  it("answers NodeGetVolumeHealth: INVALID_ARGUMENT without a volume_id or with hostile paths, empty (and evaluated from then on) for a volume never seen", async () => {
    const health = new ScriptedHealth();
    health.volumeChecks = true;
    const { unix } = await start(health);

    const noId = await rawCall(unix, VOLUME, volumeReq(""));
    expect(noId.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(noId.error?.details).toBe("volume_id is required");

    for (const [path, says] of [
      ["relative/path", "not absolute"],
      ["/var/lib/kubelet/pods/../../etc", '".."'],
      [`/${"a".repeat(5000)}`, "longer than 4096"],
    ] as const) {
      const bad = await rawCall(unix, VOLUME, volumeReq("vol-x", path));
      expect(bad.error?.code, path.slice(0, 40)).toBe(grpc.status.INVALID_ARGUMENT);
      expect(bad.error?.details).toContain(says);
    }
    expect(health.requested).toEqual([]);

    const target = "/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pv 1/mount";
    const first = await rawCall(unix, VOLUME, volumeReq("vol-1", target, "/stage/vol-1"));
    expect(volumeHealth(first.response!)).toMatchObject({ volumeId: "vol-1", healthStatuses: [] });
    expect(health.requested).toEqual([{ volumeId: "vol-1", targetPath: target, stagingPath: "/stage/vol-1", origin: "request" }]);

    health.setVolume("vol-1", [volumeEntry("INACCESSIBLE", "MountHung", `statfs of ${target} has not returned for 12000 ms`)]);
    const after = volumeHealth((await rawCall(unix, VOLUME, volumeReq("vol-1", target))).response!);
    expect(after.volumeId).toBe("vol-1");
    expect(after.healthStatuses.map((e) => ({ status: e.status as number, reason: e.reason }))).toEqual([{ status: 2, reason: "MountHung" }]);
    // Evaluated volumes are not requested again.
    expect(health.requested).toHaveLength(1);

    // A full registry: refused as such, not answered as healthy.
    health.maxVolumes = 1;
    const full = await rawCall(unix, VOLUME, volumeReq("vol-2", "/t/2"));
    expect(full.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(full.error?.details).toContain("already tracks 1 volumes");
  });

  it("serves nothing of the Node service on the TCP port, and lists csi.v1.Node over reflection on the socket only", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    health.setStorage([storageEntry("STORAGE_DEGRADED", "OstUnreachable", "lustrefs: OST0003")]);
    const { tcp, socket, http } = await start(health);
    for (const [path, req] of [
      [STORAGE, storageReq()],
      [VOLUME, volumeReq("vol-1", "/p")],
      [CAPS, new Uint8Array()],
    ] as const) {
      const r = await rawCall(tcp, path, req);
      expect(r.error?.code, path).toBe(grpc.status.UNIMPLEMENTED);
    }
    expect(health.requested).toEqual([]);

    const list = async (target: string) => {
      const client = grpcJsClient(reflV1.ServerReflection, target);
      const call = client.serverReflectionInfo();
      const responses: any[] = [];
      const done = new Promise<void>((resolve, reject) => {
        call.on("data", (r: any) => responses.push(r));
        call.on("end", resolve);
        call.on("error", reject);
      });
      call.write({ messageRequest: { case: "listServices", value: "*" } });
      call.write({ messageRequest: { case: "fileContainingSymbol", value: "csi.v1.Node.NodeGetStorageHealth" } });
      call.end();
      await done;
      client.close();
      return responses;
    };
    const onSocket = await list(`unix://${socket}`);
    expect(onSocket[0].messageResponse.value.service.map((s: { name: string }) => s.name)).toContain("csi.v1.Node");
    const file = (onSocket[1].messageResponse.value.fileDescriptorProto as Uint8Array[]).map((b) => fromBinary(FileDescriptorProtoSchema, b)).find((f) => f.name === "csi/v1/csi.proto")!;
    const node = file.service.find((s) => s.name === "Node")!;
    expect(node.method.map((m) => m.name)).toEqual(expect.arrayContaining(["NodeGetVolumeHealth", "NodeGetStorageHealth"]));
    // v1.13 removed it: the served descriptor reserves field 2 instead of describing it.
    const stats = file.messageType.find((m) => m.name === "NodeGetVolumeStatsResponse")!;
    expect(stats.field.map((f) => f.name)).toEqual(["usage"]);
    expect(stats.reservedName).toEqual(["volume_condition"]);

    const onPort = await list(http);
    expect(onPort[0].messageResponse.value.service.map((s: { name: string }) => s.name)).not.toContain("csi.v1.Node");
  });

  it("hostile request bodies: every one gets a status, nothing reaches the registry unchecked, Probe keeps answering", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    const { socket } = await start(health);
    const session = http2.connect("http://localhost", { createConnection: () => net.connect(socket) });
    const call = (path: string, body: Buffer, headers: Record<string, string> = {}) =>
      new Promise<{ status?: string; message?: string }>((resolve) => {
        const out: { status?: string; message?: string } = {};
        const s = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...headers });
        const take = (h: http2.IncomingHttpHeaders) => {
          if (h["grpc-status"] !== undefined) Object.assign(out, { status: String(h["grpc-status"]), message: decodeURIComponent(String(h["grpc-message"] ?? "")) });
        };
        s.on("response", take);
        s.on("trailers", take);
        s.on("data", () => {});
        s.on("error", () => {});
        s.on("close", () => resolve(out));
        s.end(body);
      });
    const framed = (payload: Buffer, flag = 0) => {
      const b = Buffer.alloc(5 + payload.length);
      b[0] = flag;
      b.writeUInt32BE(payload.length, 1);
      payload.copy(b, 5);
      return b;
    };
    let seed = 7;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
    const cases: Array<[string, Buffer, Record<string, string>?]> = [
      [VOLUME, Buffer.from([0, 0, 0, 0])], // truncated frame header
      [VOLUME, framed(Buffer.from([0x0a, 0x7f]))], // length past the end
      [VOLUME, framed(Buffer.from([0xff, 0xff, 0xff]))], // not protobuf
      [VOLUME, Buffer.concat([framed(Buffer.from(volumeReq("a", "/p"))), framed(Buffer.from(volumeReq("b", "/p")))])], // two messages
      [VOLUME, framed(Buffer.from("not gzip"), 1), { "grpc-encoding": "gzip" }],
      [VOLUME, framed(Buffer.from(volumeReq("a", "/p")), 1)], // compressed flag without an encoding
      [VOLUME, framed(Buffer.from(volumeReq("a", "/p"))), { "grpc-encoding": "snappy" }],
      [STORAGE, framed(Buffer.alloc(70 * 1024, 0x0a))], // over the bound
      [VOLUME, framed(Buffer.from(volumeReq("x".repeat(60_000), "/p")))],
      [VOLUME, framed(Buffer.from(volumeReq("a", "/p\u0000x")))],
      [VOLUME, framed(Buffer.from(volumeReq("\u0000\n\r", "relative")))],
    ];
    for (let i = 0; i < 60; i++) {
      const junk = Buffer.alloc(rand(300));
      for (let j = 0; j < junk.length; j++) junk[j] = rand(256);
      cases.push([rand(2) ? VOLUME : STORAGE, rand(2) ? framed(junk) : junk]);
    }
    for (const [path, body, headers] of cases) {
      const r = await call(path, body, headers);
      expect(r.status, `${path} ${body.subarray(0, 16).toString("hex")}`).toBeDefined();
      expect(["0", "3", "8", "12"]).toContain(r.status);
    }
    // Only well-formed requests with acceptable paths reached the registry.
    for (const ref of health.requested) {
      for (const p of [ref.targetPath, ref.stagingPath]) if (p !== undefined) expect(p.startsWith("/") && !p.includes("\u0000")).toBe(true);
    }
    const probe = await call("/csi.v1.Identity/Probe", framed(Buffer.alloc(0)));
    expect(probe.status).toBe("0");
    session.close();
  });

  it("shows storage and volume health in /readyz?verbose and /livez?verbose, one line each, volumes bounded", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    health.setStorage([storageEntry("STORAGE_DEGRADED", "OstUnreachable", "lustrefs: OST0003\nOST0007 not FULL", "lustrefs")]);
    for (let i = 0; i < 60; i++) health.setVolume(`vol-${i}`, i === 0 ? [volumeEntry("DEGRADED", "ReadOnly", "mounted ro, published rw")] : []);
    health.remember({ volumeId: "vol-new", targetPath: "/t", origin: "publish" });
    const { http } = await start(health);
    for (const path of ["/readyz?verbose", "/livez?verbose"]) {
      const res = await fetch(`http://${http}${path}`);
      expect(res.status).toBe(200);
      const lines = (await res.text()).split("\n");
      expect(lines).toContain("[!]storage health: STORAGE_DEGRADED OstUnreachable (lustre-imports, since 2026-11-26T00:00:00.000Z): lustrefs: OST0003\\nOST0007 not FULL");
      expect(lines).toContain("[!]volume vol-0: DEGRADED ReadOnly (volume-lustre-health, since 2026-11-26T00:00:00.000Z): mounted ro, published rw");
      expect(lines).toContain("[+]volume vol-1: no adverse condition known");
      expect(lines.filter((l) => l.startsWith("[+]volume ") || l.startsWith("[!]volume "))).toHaveLength(50);
      expect(lines).toContain("[+]11 more volumes not listed (probegate lists 50)");
    }
    const json = await (await fetch(`http://${http}/readyz`, { headers: { accept: "application/json" } })).json();
    expect(json.storageHealth.storage).toEqual([expect.objectContaining({ status: "STORAGE_DEGRADED", reason: "OstUnreachable", fs: "lustrefs" })]);
    expect(json.storageHealth.volumes).toHaveLength(50);
    expect(json.storageHealth.volumes[0]).toEqual({ volumeId: "vol-0", evaluated: true, entries: [expect.objectContaining({ status: "DEGRADED", reason: "ReadOnly" })] });
    expect(json.storageHealth.volumesNotListed).toBe(11);
  });
});

describe("gateway mode: the health RPCs in front of a driver", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  const statsReply = (condition?: { abnormal: boolean; message: string }) =>
    toBinary(LegacyStatsSchema, create(LegacyStatsSchema, { usage: [{ available: 1n, total: 2n, used: 1n, unit: VolumeUsage_Unit.BYTES }], volumeCondition: condition }));

  it("a driver without the RPCs: capabilities gain them (and the legacy VOLUME_CONDITION), answers come from memory, the driver is never asked", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    h = await startHarness({ services: ["Identity", "Node"], health });
    h.driver.script(CAPS, { message: capsReply([RpcType.STAGE_UNSTAGE_VOLUME, RpcType.GET_VOLUME_STATS]) });
    expect(capsOf((await rawCall(h.client, CAPS, new Uint8Array())).response!)).toEqual([
      RpcType.STAGE_UNSTAGE_VOLUME,
      RpcType.GET_VOLUME_STATS,
      VOLUME_CONDITION,
      RpcType.GET_VOLUME_HEALTH,
      RpcType.GET_STORAGE_HEALTH,
    ]);
    health.setStorage([storageEntry("STORAGE_UNREACHABLE", "ClientLbug", "LBUG in health_check: the client is wedged until reboot")]);
    expect(backends((await rawCall(h.client, STORAGE, storageReq())).response!)).toEqual([
      { status: 2, reason: "ClientLbug", message: "LBUG in health_check: the client is wedged until reboot" },
    ]);
    expect(volumeHealth((await rawCall(h.client, VOLUME, volumeReq("vol-9", "/t/9"))).response!).healthStatuses).toEqual([]);
    const empty = await rawCall(h.client, VOLUME, volumeReq(""));
    expect(empty.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(h.driver.callsTo(STORAGE)).toHaveLength(0);
    expect(h.driver.callsTo(VOLUME)).toHaveLength(0);
  });

  it("a driver with its own RPCs: it is asked too and its entries are merged, one per (status, reason); its failure costs only its entries", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    h = await startHarness({ services: ["Identity", "Node"], health });
    h.driver.script(CAPS, { message: capsReply([RpcType.GET_VOLUME_STATS, RpcType.GET_VOLUME_HEALTH, RpcType.GET_STORAGE_HEALTH]) });
    const driverStorage = toBinary(
      NodeGetStorageHealthResponseSchema,
      create(NodeGetStorageHealthResponseSchema, {
        backendHealth: [
          { status: StorageHealthErrorType.STORAGE_DEGRADED, reason: "OstUnreachable", message: "driver's own words" },
          { status: StorageHealthErrorType.STORAGE_DEGRADED, reason: "QuotaServiceDown", message: "driver: quota" },
          // Same (status, reason) scoped to RWX volumes: a different key under the spec's rule.
          { status: StorageHealthErrorType.STORAGE_DEGRADED, reason: "OstUnreachable", message: "rwx only", volumeCapability: { accessMode: { mode: AccessMode.MULTI_NODE_MULTI_WRITER } } },
        ],
      }),
    );
    h.driver.script(STORAGE, { message: driverStorage });
    h.driver.script(VOLUME, (req) => ({
      message: toBinary(
        NodeGetVolumeHealthResponseSchema,
        create(NodeGetVolumeHealthResponseSchema, {
          volumeHealth: {
            volumeId: fromBinary(NodeGetVolumeHealthRequestSchema, req).volumeId,
            healthStatuses: [
              { status: VolumeHealthErrorType.INACCESSIBLE, reason: "NotMounted", message: "driver: gone" },
              { status: VolumeHealthErrorType.DATA_LOSS, reason: "ChecksumMismatch", message: "driver: bad block" },
            ],
          },
        }),
      ),
    }));
    // The kubelet asks for capabilities before a health round; that is how probegate learns the driver's.
    await rawCall(h.client, CAPS, new Uint8Array());

    health.setStorage([storageEntry("STORAGE_DEGRADED", "OstUnreachable", "lustrefs: OST0003 not FULL/IDLE")]);
    const merged = fromBinary(NodeGetStorageHealthResponseSchema, (await rawCall(h.client, STORAGE, storageReq({ key: "v" }))).response!).backendHealth;
    expect(merged.map((e) => [e.reason, e.message, e.volumeCapability?.accessMode?.mode ?? null])).toEqual([
      ["OstUnreachable", "lustrefs: OST0003 not FULL/IDLE", null],
      ["QuotaServiceDown", "driver: quota", null],
      ["OstUnreachable", "rwx only", AccessMode.MULTI_NODE_MULTI_WRITER],
    ]);
    // The driver got the caller's request as sent (secrets included: it is the driver's to read).
    expect(fromBinary(NodeGetStorageHealthRequestSchema, h.driver.callsTo(STORAGE)[0].request).secrets).toEqual({ key: "v" });

    health.setVolume("vol-1", [volumeEntry("INACCESSIBLE", "NotMounted", "probegate: /t/1 is not mounted")]);
    const vh = volumeHealth((await rawCall(h.client, VOLUME, volumeReq("vol-1", "/t/1"))).response!);
    expect(vh.volumeId).toBe("vol-1");
    expect(vh.healthStatuses.map((e) => [e.status as number, e.reason, e.message])).toEqual([
      [2, "NotMounted", "probegate: /t/1 is not mounted"],
      [3, "ChecksumMismatch", "driver: bad block"],
    ]);

    h.driver.script(STORAGE, { error: { code: grpc.status.INTERNAL, details: "driver broke" } });
    h.driver.script(VOLUME, { message: Buffer.from([0x0a, 0xff]) });
    expect(backends((await rawCall(h.client, STORAGE, storageReq())).response!)).toEqual([{ status: 1, reason: "OstUnreachable", message: "lustrefs: OST0003 not FULL/IDLE" }]);
    expect(volumeHealth((await rawCall(h.client, VOLUME, volumeReq("vol-1", "/t/1"))).response!).healthStatuses.map((e) => e.reason)).toEqual(["NotMounted"]);
    // A driver slower than the caller's deadline: probegate's entries still arrive, within it.
    h.driver.script(STORAGE, { delayMs: 5_000, message: driverStorage });
    const slow = await rawCall(h.client, STORAGE, storageReq(), { deadline: Date.now() + 1_500 });
    expect(slow.error).toBeUndefined();
    expect(backends(slow.response!).map((b) => b.reason)).toEqual(["OstUnreachable"]);
    const metrics = await h.metrics.registry.metrics();
    expect(metrics).toMatch(/probegate_upstream_health_failures_total\{method="NodeGetStorageHealth"\} 2/);
    expect(metrics).toMatch(/probegate_upstream_health_failures_total\{method="NodeGetVolumeHealth"\} 1/);
    expect(h.logs.text).toContain("INTERNAL: driver broke");
  });

  it("without health checks loaded: capabilities and the health calls are the driver's alone", async () => {
    const health = new ScriptedHealth();
    h = await startHarness({ services: ["Identity", "Node"], health });
    const caps = capsReply([RpcType.GET_VOLUME_STATS, RpcType.GET_STORAGE_HEALTH]);
    h.driver.script(CAPS, { message: caps });
    const driverStorage = toBinary(NodeGetStorageHealthResponseSchema, create(NodeGetStorageHealthResponseSchema, { backendHealth: [{ status: 1, reason: "Driver", message: "m" }] }));
    h.driver.script(STORAGE, { message: driverStorage });
    expect(Buffer.compare((await rawCall(h.client, CAPS, new Uint8Array())).response!, Buffer.from(caps))).toBe(0);
    expect(Buffer.compare((await rawCall(h.client, STORAGE, storageReq())).response!, Buffer.from(driverStorage))).toBe(0);
    expect(h.driver.callsTo(STORAGE)).toHaveLength(1);
  });

  it("remembers volumes from forwarded stage/publish (attempted), forgets them on a successful unpublish only, and sets the legacy volume_condition from memory", async () => {
    const health = new ScriptedHealth();
    health.volumeChecks = true;
    h = await startHarness({ services: ["Identity", "Node"], health });
    const target = "/var/lib/kubelet/pods/p1/volumes/kubernetes.io~csi/pv-1/mount";
    h.driver.script(STAGE, { error: { code: grpc.status.INTERNAL, details: "mount failed" } });
    await rawCall(h.client, STAGE, toBinary(NodeStageVolumeRequestSchema, create(NodeStageVolumeRequestSchema, { volumeId: "vol-1", stagingTargetPath: "/stage/1", secrets: { k: "v" } })));
    await rawCall(
      h.client,
      PUBLISH,
      toBinary(
        NodePublishVolumeRequestSchema,
        create(NodePublishVolumeRequestSchema, { volumeId: "vol-1", stagingTargetPath: "/stage/1", targetPath: target, volumeCapability: { accessMode: { mode: AccessMode.MULTI_NODE_READER_ONLY } } }),
      ),
    );
    expect(health.remembered).toEqual([
      { volumeId: "vol-1", stagingPath: "/stage/1", origin: "stage" },
      { volumeId: "vol-1", targetPath: target, stagingPath: "/stage/1", readOnly: true, origin: "publish" },
    ]);

    // Not evaluated yet: the driver's stats reply goes out unchanged.
    h.driver.script(STATS, { message: statsReply() });
    const statsReq = toBinary(NodeGetVolumeStatsRequestSchema, create(NodeGetVolumeStatsRequestSchema, { volumeId: "vol-1", volumePath: target }));
    expect(Buffer.compare((await rawCall(h.client, STATS, statsReq)).response!, Buffer.from(statsReply()))).toBe(0);
    health.setVolume("vol-1", [volumeEntry("INACCESSIBLE", "Evicted", "lustrefs-MDT0000 EVICTED")]);
    const cond = fromBinary(LegacyStatsSchema, (await rawCall(h.client, STATS, statsReq)).response!);
    expect(cond.volumeCondition).toMatchObject({ abnormal: true, message: "Evicted: lustrefs-MDT0000 EVICTED" });
    expect(cond.usage[0]).toMatchObject({ available: 1n, total: 2n });

    const unpublish = toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: "vol-1", targetPath: target }));
    h.driver.script(UNPUBLISH, { error: { code: grpc.status.INTERNAL, details: "busy" } });
    await rawCall(h.client, UNPUBLISH, unpublish);
    expect(health.forgotten).toEqual([]);
    h.driver.script(UNPUBLISH, {});
    await rawCall(h.client, UNPUBLISH, unpublish);
    expect(health.forgotten).toEqual([{ volumeId: "vol-1", path: { targetPath: target } }]);
  });

  it("keeps the health RPCs off the TCP port in gateway mode too", async () => {
    const health = new ScriptedHealth();
    health.storageChecks = health.volumeChecks = true;
    h = await startHarness({ services: ["Identity", "Node"], health });
    const http = await startGateway({
      httpEndpoint: parseEndpoint("127.0.0.1:0"),
      identity: { driverName: "probegate.test", vendorVersion: "0.0.0", manifest: {}, capabilities: [] },
      readiness: h.readiness,
      probe: h.upstream.probe,
      csiOnlyRoutes: [h.upstream.route],
      health,
      healthAnsweredUpstream: true,
      logger: pino({ level: "silent" }),
      metrics: new Metrics({ processMetrics: false }),
    });
    const tcp = new grpc.Client(http.http!.address, grpc.credentials.createInsecure());
    try {
      for (const [path, req] of [
        [STORAGE, storageReq()],
        [VOLUME, volumeReq("vol-1", "/p")],
      ] as const) {
        expect((await rawCall(tcp, path, req)).error?.code, path).toBe(grpc.status.UNIMPLEMENTED);
      }
      expect(h.driver.callsTo(STORAGE)).toHaveLength(0);
    } finally {
      tcp.close();
      await http.close(100);
    }
  });
});
