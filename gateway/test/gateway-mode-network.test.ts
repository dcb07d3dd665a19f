// Issue #11: in gateway mode the mount API (every forwarded Node, Controller and
// GroupController call) is served on the CSI endpoint only. The network port,
// which the node DaemonSet binds on the host network, answers those methods
// UNIMPLEMENTED in every protocol, never reaches the driver, and does not list
// the forwarded services over reflection. Real probegate processes, a real
// grpc-js driver, real clients.

import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import {
  CreateVolumeRequestSchema,
  DeleteVolumeRequestSchema,
  GetPluginInfoResponseSchema,
  NodeGetInfoResponseSchema,
  NodePublishVolumeRequestSchema,
  NodeStageVolumeRequestSchema,
} from "../gen/csi/v1/csi_pb.js";
import * as reflV1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflV1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { FakeCsiDriver, rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { runProbegate, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { grpcJsClient } from "./helpers/grpc-js-client.js";
import { hostPort as hostPortOf } from "./helpers/loopback.js";

const gateways: GatewayProcess[] = [];
const drivers: FakeCsiDriver[] = [];
const clients: grpc.Client[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(gateways.splice(0).map((g) => g.stop()));
  await Promise.all(drivers.splice(0).map((d) => d.stop()));
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const SECRET = "s3cr3t-do-not-forward";

/** The calls that mount, publish, create or delete, with realistic payloads (secrets included). */
const MOUNT_API: Array<{ path: string; request: Uint8Array; json: unknown }> = [
  { path: "/csi.v1.Node/NodeGetInfo", request: new Uint8Array(), json: {} },
  {
    path: "/csi.v1.Node/NodePublishVolume",
    request: toBinary(
      NodePublishVolumeRequestSchema,
      create(NodePublishVolumeRequestSchema, { volumeId: "lustrefs#pvc-1", targetPath: "/pod/mount", secrets: { key: SECRET } }),
    ),
    json: { volumeId: "lustrefs#pvc-1", targetPath: "/pod/mount", secrets: { key: SECRET } },
  },
  {
    path: "/csi.v1.Node/NodeStageVolume",
    request: toBinary(
      NodeStageVolumeRequestSchema,
      create(NodeStageVolumeRequestSchema, { volumeId: "lustrefs#pvc-1", stagingTargetPath: "/stage", secrets: { key: SECRET } }),
    ),
    json: { volumeId: "lustrefs#pvc-1", stagingTargetPath: "/stage", secrets: { key: SECRET } },
  },
  {
    path: "/csi.v1.Controller/CreateVolume",
    request: toBinary(CreateVolumeRequestSchema, create(CreateVolumeRequestSchema, { name: "pvc-1", secrets: { key: SECRET } })),
    json: { name: "pvc-1", secrets: { key: SECRET } },
  },
  {
    path: "/csi.v1.Controller/DeleteVolume",
    request: toBinary(DeleteVolumeRequestSchema, create(DeleteVolumeRequestSchema, { volumeId: "lustrefs#pvc-1", secrets: { key: SECRET } })),
    json: { volumeId: "lustrefs#pvc-1", secrets: { key: SECRET } },
  },
];

async function startDriver(): Promise<{ driver: FakeCsiDriver; socket: string }> {
  const dir = tempDir("pg-net-driver-");
  dirs.push(dir);
  const socket = path.join(dir, "driver.sock");
  const driver = new FakeCsiDriver(socket, ["Identity", "Node", "Controller", "GroupController"]);
  drivers.push(driver);
  await driver.start();
  driver.script("/csi.v1.Identity/GetPluginInfo", {
    message: toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: "upstream.csi.example.com", vendorVersion: "v9" })),
  });
  driver.script("/csi.v1.Node/NodeGetInfo", {
    message: toBinary(NodeGetInfoResponseSchema, create(NodeGetInfoResponseSchema, { nodeId: "node-0" })),
  });
  for (const m of MOUNT_API.slice(1)) driver.script(m.path, { message: new Uint8Array() });
  return { driver, socket };
}

async function gateway(driverSocket: string, extra: string[] = []): Promise<GatewayProcess> {
  // --gate=none: these tests are about where calls are served, not about readiness.
  const gw = await startGatewayProcess([`--upstream=unix://${driverSocket}`, "--gate=none", ...extra]);
  gateways.push(gw);
  // probegate asks the driver's GetPluginInfo once at start (to forward it from
  // then on); that call is its own, not one a test made: wait for it, then forget it.
  const driver = drivers.find((d) => d.socketPath === driverSocket);
  if (driver) {
    const until = Date.now() + 20_000;
    while (driver.callsTo("/csi.v1.Identity/GetPluginInfo").length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 25));
    expect(driver.callsTo("/csi.v1.Identity/GetPluginInfo"), "probegate's start-up identity call").toHaveLength(1);
    driver.calls.length = 0;
  }
  return gw;
}

function grpcClient(target: string): grpc.Client {
  const c = new grpc.Client(target, grpc.credentials.createInsecure());
  clients.push(c);
  return c;
}

/** Every call the driver has seen so far, by path. */
function driverCalls(driver: FakeCsiDriver, paths: readonly string[]): number {
  return paths.reduce((n, p) => n + driver.callsTo(p).length, 0);
}

function grpcWebFrame(message: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** gRPC-Web: the status is in the trailer frame (flag 0x80) of the body, or in the headers for trailers-only. */
function grpcWebStatus(res: { headers: Headers }, body: Buffer): string | undefined {
  const inHeaders = res.headers.get("grpc-status");
  if (inHeaders !== null) return inHeaders;
  let off = 0;
  while (off + 5 <= body.length) {
    const flag = body[off]!;
    const len = body.readUInt32BE(off + 1);
    const payload = body.subarray(off + 5, off + 5 + len);
    if (flag & 0x80) return /grpc-status:\s*(\d+)/i.exec(payload.toString())?.[1];
    off += 5 + len;
  }
  return undefined;
}

/** One HTTP/1.1 request on a fresh connection, so odd paths reach the server as written. */
function h1Post(hostPort: string, rawPath: string, headers: Record<string, string>, body: Buffer | string): Promise<{ status: number; text: string }> {
  const { host, port } = hostPortOf(hostPort);
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, path: rawPath, method: "POST", headers, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function listServices(module: typeof reflV1 | typeof reflV1alpha, target: string): Promise<string[]> {
  const refl = grpcJsClient(module.ServerReflection, target);
  clients.push(refl);
  const call = refl.serverReflectionInfo();
  const names: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    call.on("data", (r: { messageResponse: { case: string; value: { service: Array<{ name: string }> } } }) => {
      if (r.messageResponse.case === "listServicesResponse") names.push(...r.messageResponse.value.service.map((s) => s.name));
    });
    call.on("end", resolve);
    call.on("error", reject);
  });
  call.write({ messageRequest: { case: "listServices", value: "*" } });
  call.end();
  await done;
  return names;
}

const FORWARDED_SERVICES = ["csi.v1.Node", "csi.v1.Controller", "csi.v1.GroupController"];

describe("gateway mode: the mount API stays on the CSI endpoint", () => {
  it("over the TCP port, grpc-js, gRPC-Web and Connect all get UNIMPLEMENTED for mount calls and the driver sees nothing; the socket forwards them", async () => {
    const { driver, socket } = await startDriver();
    const gw = await gateway(socket);
    const paths = MOUNT_API.map((m) => m.path);

    // grpc-js over TCP (h2c prior knowledge), as any network client would.
    const tcp = grpcClient(gw.http);
    for (const m of MOUNT_API) {
      const r = await rawCall(tcp, m.path, m.request, { deadline: Date.now() + 10_000 });
      expect(r.error?.code, `grpc ${m.path}`).toBe(grpc.status.UNIMPLEMENTED);
    }
    // gRPC-Web over HTTP/1.1.
    for (const m of MOUNT_API) {
      const res = await fetch(`http://${gw.http}${m.path}`, {
        method: "POST",
        headers: { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
        body: grpcWebFrame(m.request),
      });
      const body = Buffer.from(await res.arrayBuffer());
      expect(grpcWebStatus(res, body), `grpc-web ${m.path}`).toBe(String(grpc.status.UNIMPLEMENTED));
    }
    // Connect JSON and Connect binary over HTTP/1.1.
    for (const m of MOUNT_API) {
      const json = await fetch(`http://${gw.http}${m.path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(m.json),
      });
      expect(json.status, `connect json ${m.path}`).toBe(404);
      expect(await json.json()).toMatchObject({ code: "unimplemented" });
      const bin = await fetch(`http://${gw.http}${m.path}`, {
        method: "POST",
        headers: { "content-type": "application/proto" },
        body: Buffer.from(m.request),
      });
      expect(bin.status, `connect proto ${m.path}`).toBe(404);
    }
    expect(driverCalls(driver, paths)).toBe(0);

    // The same calls on the unix socket reach the driver, as before.
    const unix = unixClient(gw.socket);
    clients.push(unix);
    for (const m of MOUNT_API) {
      const r = await rawCall(unix, m.path, m.request, { deadline: Date.now() + 10_000 });
      expect(r.error, `unix ${m.path}`).toBeUndefined();
      expect(driver.callsTo(m.path), `unix ${m.path}`).toHaveLength(1);
    }
  });

  it("odd spellings of forwarded methods on the TCP port reach nothing either; Identity stays answered locally", async () => {
    const { driver, socket } = await startDriver();
    const gw = await gateway(socket);
    const tcp = grpcClient(gw.http);
    const variants = [
      "/csi.v1.node/NodeGetInfo",
      "/CSI.V1.NODE/NODEGETINFO",
      "/csi.v1.Node/NodeGetInfo/",
      "/csi.v1.Node/",
      "/csi.v1.Node/NodeGetInfo?x=1",
      "//csi.v1.Node/NodeGetInfo",
      "/csi.v1.Node/NodeGetInfo%00",
      "/csi.v1.Node/FutureMethod",
      "/csi.v1.GroupController/CreateVolumeGroupSnapshot",
      "/csi.v1.Controller/ControllerPublishVolume",
    ];
    for (const v of variants) {
      const r = await rawCall(tcp, v, new Uint8Array(), { deadline: Date.now() + 10_000 });
      expect(r.error?.code, `grpc ${v}`).toBe(grpc.status.UNIMPLEMENTED);
      const h1 = await h1Post(gw.http, v, { "content-type": "application/json" }, "{}");
      expect(h1.status, `http/1.1 ${v}`).toBeGreaterThanOrEqual(400);
    }
    expect(driver.calls.length, JSON.stringify(driver.calls.map((c) => c.path))).toBe(0);

    // Identity over TCP is probegate's own answer; it does not ask the driver.
    const info = await rawCall(tcp, "/csi.v1.Identity/GetPluginInfo", new Uint8Array(), { deadline: Date.now() + 10_000 });
    expect(info.error).toBeUndefined();
    const probe = await rawCall(tcp, "/csi.v1.Identity/Probe", new Uint8Array(), { deadline: Date.now() + 10_000 });
    expect(probe.error).toBeUndefined();
    expect(driver.callsTo("/csi.v1.Identity/GetPluginInfo")).toHaveLength(0);
  });

  it("reflection on the TCP port lists no forwarded service; on the socket it lists them", async () => {
    const { socket } = await startDriver();
    const gw = await gateway(socket);
    for (const mod of [reflV1, reflV1alpha]) {
      const overTcp = await listServices(mod, gw.http);
      expect(overTcp).toEqual(expect.arrayContaining(["csi.v1.Identity", "grpc.health.v1.Health"]));
      for (const s of FORWARDED_SERVICES) expect(overTcp, `tcp lists ${s}`).not.toContain(s);
      const overUnix = await listServices(mod, `unix://${gw.socket}`);
      expect(overUnix).toEqual(expect.arrayContaining(["csi.v1.Identity", ...FORWARDED_SERVICES]));
    }
  });

  it("refuses a non-loopback TCP --csi-endpoint with --upstream (exit 2, one line saying why); a loopback one forwards", async () => {
    const { driver, socket } = await startDriver();
    for (const bad of ["tcp://0.0.0.0:0", "tcp://10.1.2.3:0", "tcp://[::]:0", ":0", "tcp://example.com:0"]) {
      const r = await runProbegate([`--upstream=unix://${socket}`, `--csi-endpoint=${bad}`, "--http-endpoint=off"]);
      expect(r.code, bad).toBe(2);
      const lines = r.stderr.trim().split("\n");
      expect(lines, bad).toHaveLength(1);
      expect(lines[0]).toMatch(/--csi-endpoint: .* not a loopback address/);
      expect(lines[0]).toMatch(/mount API/);
      expect(lines[0]).toMatch(/unix:\/\/\/csi\/csi\.sock/);
    }
    // Without --upstream a TCP CSI endpoint carries only Identity and health, so any address is allowed.
    const plain = await startGatewayProcess(["--csi-endpoint=tcp://0.0.0.0:0", "--http-endpoint=off"]);
    gateways.push(plain);

    const gw = await gateway(socket, ["--csi-endpoint=tcp://127.0.0.1:0", "--http-endpoint=off"]);
    const addr = String(gw.logs().find((l) => l.msg === "probegate started")!.csiEndpoint);
    const c = grpcClient(addr.replace(/^tcp:\/\//, ""));
    const r = await rawCall(c, "/csi.v1.Node/NodeGetInfo", new Uint8Array(), { deadline: Date.now() + 10_000 });
    expect(r.error).toBeUndefined();
    expect(driver.callsTo("/csi.v1.Node/NodeGetInfo")).toHaveLength(1);
  });
});
