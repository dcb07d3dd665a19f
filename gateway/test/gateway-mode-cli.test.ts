// Issue #7's "Done when", end to end through the real CLI: an existing driver
// (the fake one, a plain @grpc/grpc-js server that knows nothing of probegate),
// unchanged, behind `probegate --upstream`. kubelet-side tools (grpc-js clients
// on probegate's socket) must see exactly what they saw from the driver while
// the node is healthy, and mounts must wait while it is not.
//
// Every gateway here is a real `node bin/probegate.js` process with the bundled
// plugins checking a demo or fake-LNet node; nothing is wired in-process.

import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  CreateVolumeRequestSchema,
  CreateVolumeResponseSchema,
  GetPluginCapabilitiesResponseSchema,
  GetPluginInfoResponseSchema,
  NodeGetInfoResponseSchema,
  NodePublishVolumeRequestSchema,
  NodeStageVolumeRequestSchema,
  NodeUnpublishVolumeRequestSchema,
  NodeUnstageVolumeRequestSchema,
  PluginCapability_Service_Type,
} from "../gen/csi/v1/csi_pb.js";
import * as reflV1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import { eventually, probe } from "./gateway-mode-harness.js";
import { FakeCsiDriver, rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { fakeLnet, type FakeLnet } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { grpcJsClient } from "./helpers/grpc-js-client.js";
import { REDACTED } from "../src/upstream/redact.js";

const DRIVER_NAME = "azurelustre.csi.azure.com";
const STAGE = "/csi.v1.Node/NodeStageVolume";
const UNSTAGE = "/csi.v1.Node/NodeUnstageVolume";
const PUBLISH = "/csi.v1.Node/NodePublishVolume";
const UNPUBLISH = "/csi.v1.Node/NodeUnpublishVolume";

const gateways: GatewayProcess[] = [];
const drivers: FakeCsiDriver[] = [];
const clients: grpc.Client[] = [];
const nodes: FakeLnet[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await Promise.all(gateways.splice(0).map((g) => g.stop()));
  await Promise.all(drivers.splice(0).map((d) => d.stop()));
  for (const n of nodes.splice(0)) n.cleanup();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A private directory for the driver's socket, as the pod-local emptyDir in deploy/gateway-mode. */
function driverSocketPath(): string {
  const dir = tempDir("pg-cli-driver-");
  dirs.push(dir);
  return path.join(dir, "driver.sock");
}

async function startDriver(socket: string): Promise<FakeCsiDriver> {
  const d = new FakeCsiDriver(socket, ["Identity", "Node", "Controller"]);
  drivers.push(d);
  await d.start();
  // What a real Lustre driver says about itself: it must reach the client, not probegate's identity.
  d.script("/csi.v1.Identity/GetPluginInfo", {
    message: toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: DRIVER_NAME, vendorVersion: "v0.3.0" })),
  });
  return d;
}

/** The plugin set the CLI uses by default; named explicitly because the test helper otherwise runs with none. */
const BUNDLED_PLUGINS = path.join(ROOT, "dist", "plugins");

async function gateway(driverSocket: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const gw = await startGatewayProcess(
    [`--upstream=unix://${driverSocket}`, `--plugins-dir=${BUNDLED_PLUGINS}`, "--check-interval=1s", ...args],
    { env },
  );
  gateways.push(gw);
  return gw;
}

function client(gw: GatewayProcess): grpc.Client {
  const c = unixClient(gw.socket);
  clients.push(c);
  return c;
}

async function readyz(gw: GatewayProcess): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://${gw.http}/readyz?verbose`);
  return { status: res.status, text: await res.text() };
}

/** Waits on the local checks' verdict; generous because the 2 CPUs are shared with other test processes. */
function untilReadyz(gw: GatewayProcess, pred: (r: { status: number; text: string }) => boolean, what: string, limitMs = 40_000) {
  return eventually(() => readyz(gw), pred, what, limitMs);
}

/** Ready with the bundled LNet checks actually evaluated, not merely with no checks loaded. */
const checksPass = (r: { status: number; text: string }) => r.status === 200 && r.text.includes("[+]lnet-nets ok");

const readyProbe = (v: Awaited<ReturnType<typeof probe>>) => "ready" in v && v.ready;

const stageRequest = (secrets: Record<string, string> = {}) =>
  toBinary(
    NodeStageVolumeRequestSchema,
    create(NodeStageVolumeRequestSchema, {
      volumeId: "lustrefs#10.0.0.4@tcp:/lustrefs#pvc-1",
      stagingTargetPath: "/var/lib/kubelet/plugins/kubernetes.io/csi/azurelustre.csi.azure.com/abc/globalmount",
      volumeContext: { "mgs-ip-address": "10.0.0.4", "fs-name": "lustrefs" },
      secrets,
    }),
  );
const publishRequest = () =>
  toBinary(
    NodePublishVolumeRequestSchema,
    create(NodePublishVolumeRequestSchema, {
      volumeId: "lustrefs#10.0.0.4@tcp:/lustrefs#pvc-1",
      stagingTargetPath: "/var/lib/kubelet/plugins/kubernetes.io/csi/azurelustre.csi.azure.com/abc/globalmount",
      targetPath: "/var/lib/kubelet/pods/uid/volumes/kubernetes.io~csi/pvc-1/mount",
      readonly: true,
    }),
  );
const unstageRequest = () =>
  toBinary(NodeUnstageVolumeRequestSchema, create(NodeUnstageVolumeRequestSchema, { volumeId: "vol-1", stagingTargetPath: "/stage" }));

/** The bundled plugins' healthy outputs, to heal a fake node in place. */
function healthyOutputs() {
  const read = (f: string) => fs.readFileSync(path.join(ROOT, "gateway/demo/scenarios/healthy", f), "utf8");
  return { netShow: { out: read("net_show.out") }, ping: { out: read("ping.out"), exit: 0 }, operstate: { eth0: "up\n" } };
}

describe("gateway mode through the CLI: a healthy node is transparent", () => {
  it("identity, Node and Controller calls come from the driver byte for byte, metadata both ways; Probe ready; reflection lists the forwarded services", async () => {
    const socket = driverSocketPath();
    const driver = await startDriver(socket);
    const caps = toBinary(
      GetPluginCapabilitiesResponseSchema,
      create(GetPluginCapabilitiesResponseSchema, {
        capabilities: [{ type: { case: "service", value: { type: PluginCapability_Service_Type.CONTROLLER_SERVICE } } }],
      }),
    );
    driver.script("/csi.v1.Identity/GetPluginCapabilities", { message: caps });
    const gw = await gateway(socket, ["--demo=healthy"]);
    const c = client(gw);

    await untilReadyz(gw, checksPass, "local checks ready");
    await eventually(() => probe(c), readyProbe, "Probe ready");

    const info = await rawCall(c, "/csi.v1.Identity/GetPluginInfo", new Uint8Array());
    expect(fromBinary(GetPluginInfoResponseSchema, info.response!)).toMatchObject({ name: DRIVER_NAME, vendorVersion: "v0.3.0" });
    const gotCaps = await rawCall(c, "/csi.v1.Identity/GetPluginCapabilities", new Uint8Array());
    expect(Buffer.compare(gotCaps.response!, Buffer.from(caps))).toBe(0);

    const cases: Array<{ path: string; request: Uint8Array; reply: Uint8Array }> = [
      {
        path: "/csi.v1.Node/NodeGetInfo",
        request: new Uint8Array(),
        reply: toBinary(NodeGetInfoResponseSchema, create(NodeGetInfoResponseSchema, { nodeId: "aks-node-0", maxVolumesPerNode: 64n })),
      },
      { path: STAGE, request: stageRequest(), reply: new Uint8Array() },
      { path: PUBLISH, request: publishRequest(), reply: new Uint8Array() },
      {
        path: UNPUBLISH,
        request: toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: "vol-1", targetPath: "/pod" })),
        reply: new Uint8Array(),
      },
      {
        path: "/csi.v1.Controller/CreateVolume",
        request: toBinary(CreateVolumeRequestSchema, create(CreateVolumeRequestSchema, { name: "pvc-1", parameters: { "fs-name": "lustrefs" } })),
        reply: toBinary(
          CreateVolumeResponseSchema,
          create(CreateVolumeResponseSchema, { volume: { volumeId: "lustrefs#pvc-1", capacityBytes: 1n << 40n, volumeContext: { a: "ü" } } }),
        ),
      },
    ];
    for (const k of cases) {
      driver.script(k.path, {
        message: k.reply,
        headers: { "x-driver-header": "h" },
        trailers: { "x-driver-trailer-bin": Buffer.from([0, 255, 7]) },
      });
      const r = await rawCall(c, k.path, k.request, {
        metadata: { "x-request-id": `req-${k.path}`, "x-blob-bin": Buffer.from([1, 0, 2]) },
        deadline: Date.now() + 30_000,
      });
      expect(r.error, k.path).toBeUndefined();
      expect(Buffer.compare(r.response!, Buffer.from(k.reply)), `${k.path} response bytes`).toBe(0);
      const seen = driver.callsTo(k.path);
      expect(seen, k.path).toHaveLength(1);
      expect(Buffer.compare(seen[0].request, Buffer.from(k.request)), `${k.path} request bytes`).toBe(0);
      expect(seen[0].metadata["x-request-id"]).toEqual([`req-${k.path}`]);
      expect(seen[0].metadata["x-blob-bin"]).toEqual([Buffer.from([1, 0, 2])]);
      expect(r.headers?.get("x-driver-header")).toEqual(["h"]);
      expect(r.trailers?.get("x-driver-trailer-bin")).toEqual([Buffer.from([0, 255, 7])]);
    }

    // grpcurl/csc discover the API over reflection: the forwarded services must be listed.
    const refl = grpcJsClient(reflV1.ServerReflection, `unix://${gw.socket}`);
    clients.push(refl);
    const call = refl.serverReflectionInfo();
    const responses: Array<{ messageResponse: { case: string; value: { service: Array<{ name: string }> } } }> = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on("data", (r: (typeof responses)[number]) => responses.push(r));
      call.on("end", resolve);
      call.on("error", reject);
    });
    call.write({ messageRequest: { case: "listServices", value: "*" } });
    call.end();
    await done;
    expect(responses[0].messageResponse.case).toBe("listServicesResponse");
    expect(responses[0].messageResponse.value.service.map((s) => s.name)).toEqual(
      expect.arrayContaining(["csi.v1.Identity", "csi.v1.Node", "csi.v1.Controller"]),
    );
  });

  it("the livenessprobe sidecar pattern: a new connection per Probe, 50 times, all ready", async () => {
    const socket = driverSocketPath();
    await startDriver(socket);
    const gw = await gateway(socket, ["--demo=healthy"]);
    await untilReadyz(gw, checksPass, "local checks ready");
    await eventually(() => probe(client(gw)), readyProbe, "Probe ready");

    // A counting relay in front of probegate's socket proves each Probe really
    // arrived on a connection of its own, as the Go sidecar's do.
    const relaySocket = path.join(tempDir("pg-cli-relay-"), "relay.sock");
    dirs.push(path.dirname(relaySocket));
    let accepted = 0;
    const relay = net.createServer((down) => {
      accepted++;
      const up = net.connect(gw.socket);
      down.pipe(up).pipe(down);
      const end = () => {
        down.destroy();
        up.destroy();
      };
      down.on("error", end).on("close", end);
      up.on("error", end).on("close", end);
    });
    await new Promise<void>((resolve) => relay.listen(relaySocket, resolve));
    try {
      for (let i = 0; i < 50; i++) {
        // A local subchannel pool keeps grpc-js from reusing a pooled
        // connection; closing the client tears the connection down.
        const c = new grpc.Client(`unix:${relaySocket}`, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 });
        try {
          expect(await probe(c), `probe #${i + 1}`).toEqual({ ready: true });
        } finally {
          c.close();
        }
      }
    } finally {
      await new Promise<void>((resolve) => relay.close(() => resolve()));
    }
    expect(accepted).toBe(50);
    // Still serving normally afterwards (no exhausted sessions or listeners).
    expect(await probe(client(gw))).toEqual({ ready: true });
    expect(gw.child.exitCode).toBeNull();
  });
});

describe("gateway mode through the CLI: a broken node makes mounts wait", () => {
  it("refuses stage and publish naming the failing check, passes unstage, and lets staging through once the node heals", async () => {
    const socket = driverSocketPath();
    const driver = await startDriver(socket);
    const node = fakeLnet({ base: "ni-down" });
    nodes.push(node);
    const gw = await gateway(socket, [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`], node.env);
    const c = client(gw);

    const r = await untilReadyz(gw, (x) => x.status === 503 && /\[-\]lnet-nets failed/.test(x.text), "lnet-nets failing");
    expect(r.text).not.toContain("initializing");
    // A readiness loss is not the driver's fault and a restart cannot fix it: by
    // default (--probe-ready=upstream) Probe stays the healthy driver's ready:true,
    // so the livenessprobe sidecar never gets kubelet to restart the driver.
    // Readiness shows in /readyz (above) and in the gating below.
    expect(await probe(c)).toEqual({ ready: true });

    for (const [p, body] of [
      [STAGE, stageRequest()],
      [PUBLISH, publishRequest()],
    ] as const) {
      const res = await rawCall(c, p, body);
      expect(res.error?.code, p).toBe(grpc.status.UNAVAILABLE);
      expect(res.error?.details, p).toMatch(/^node not ready: /);
      expect(res.error?.details, p).toMatch(/lnet-nets: NiDown: .*10\.0\.0\.10@tcp/);
    }
    // Teardown always reaches the driver, or a broken node could never release its volumes.
    const u = await rawCall(c, UNSTAGE, unstageRequest());
    expect(u.error).toBeUndefined();
    expect(driver.callsTo(UNSTAGE)).toHaveLength(1);
    expect(driver.callsTo(STAGE)).toHaveLength(0);
    expect(driver.callsTo(PUBLISH)).toHaveLength(0);

    node.update(healthyOutputs());
    fs.rmSync(path.join(node.dir, "ping.err"), { force: true });
    await untilReadyz(gw, checksPass, "ready after healing");
    await eventually(() => probe(c), readyProbe, "Probe ready after healing");

    const body = stageRequest();
    const ok = await rawCall(c, STAGE, body);
    expect(ok.error).toBeUndefined();
    expect(driver.callsTo(STAGE)).toHaveLength(1);
    expect(Buffer.compare(driver.callsTo(STAGE)[0].request, Buffer.from(body))).toBe(0);
    expect((await rawCall(c, PUBLISH, publishRequest())).error).toBeUndefined();
  });

  it("--demo=ni-down: the same refusal from the bundled demo node", async () => {
    const socket = driverSocketPath();
    const driver = await startDriver(socket);
    const gw = await gateway(socket, ["--demo=ni-down"]);
    const c = client(gw);
    await untilReadyz(gw, (x) => x.status === 503 && /\[-\]lnet-nets failed/.test(x.text), "lnet-nets failing");
    const res = await rawCall(c, STAGE, stageRequest());
    expect(res.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(res.error?.details).toMatch(/^node not ready: .*lnet-nets: NiDown/);
    expect(driver.callsTo(STAGE)).toHaveLength(0);
    expect(await probe(c)).toEqual({ ready: true });
  });

  it("--probe-ready=readiness puts the readiness loss into Probe (ready:false); startup only until the checks first pass", async () => {
    const socket = driverSocketPath();
    await startDriver(socket);
    const gw = await gateway(socket, ["--demo=ni-down", "--probe-ready=readiness"]);
    await untilReadyz(gw, (x) => x.status === 503 && /\[-\]lnet-nets failed/.test(x.text), "lnet-nets failing");
    expect(await probe(client(gw))).toEqual({ ready: false });

    const node = fakeLnet({ base: "ni-down" });
    nodes.push(node);
    const st = await gateway(socket, ["--probe-ready=startup", `--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`], node.env);
    const c = client(st);
    await untilReadyz(st, (x) => x.status === 503 && /\[-\]lnet-nets failed/.test(x.text), "startup: lnet-nets failing");
    expect(await probe(c)).toEqual({ ready: false });
    node.update(healthyOutputs());
    fs.rmSync(path.join(node.dir, "ping.err"), { force: true });
    await untilReadyz(st, checksPass, "startup: checks pass once");
    await eventually(() => probe(c), readyProbe, "startup: Probe ready once the checks have passed");
    node.update({ netShow: { out: fs.readFileSync(path.join(ROOT, "gateway/demo/scenarios/ni-down/net_show.out"), "utf8") } });
    await untilReadyz(st, (x) => x.status === 503, "startup: not ready again");
    expect(await probe(c)).toEqual({ ready: true }); // started once: readiness no longer reaches Probe
  });
});

describe("gateway mode through the CLI: the driver comes up after probegate", () => {
  it("starts without the driver, says not ready and UNAVAILABLE naming the socket, then serves once the driver is up", async () => {
    const socket = driverSocketPath();
    const gw = await gateway(socket, ["--demo=healthy", `--driver-name=${DRIVER_NAME}`, "--upstream-timeout-cap=300ms"]);
    const c = client(gw);
    // The local checks alone being fine must not make Probe ready without the driver:
    // it is still initializing (ready:false), not broken (an error would restart it).
    await untilReadyz(gw, checksPass, "local checks ready");
    expect(await probe(c)).toEqual({ ready: false });
    // What node-driver-registrar and the livenessprobe sidecar ask first, answered at once.
    const early = await rawCall(c, "/csi.v1.Identity/GetPluginInfo", new Uint8Array());
    expect(early.error).toBeUndefined();
    expect(fromBinary(GetPluginInfoResponseSchema, early.response!).name).toBe(DRIVER_NAME);
    for (const p of ["/csi.v1.Node/NodeGetInfo", STAGE]) {
      const down = await rawCall(c, p, p === STAGE ? stageRequest() : new Uint8Array(), { deadline: Date.now() + 20_000 });
      expect(down.error?.code, p).toBe(grpc.status.UNAVAILABLE);
      expect(down.error?.details, p).toContain(socket);
      expect(down.error?.details, p).toMatch(/has not started answering yet/);
    }
    const verbose = await fetch(`http://${gw.http}/readyz?verbose`).then((r) => r.text());
    expect(verbose).toMatch(/\[!\]upstream driver at .* has not answered yet; GetPluginInfo answered from --driver-name/);

    const driver = await startDriver(socket);
    await eventually(() => probe(c), readyProbe, "Probe ready once the driver is up", 30_000);
    const info = await rawCall(c, "/csi.v1.Identity/GetPluginInfo", new Uint8Array());
    expect(info.error).toBeUndefined();
    expect(fromBinary(GetPluginInfoResponseSchema, info.response!).name).toBe(DRIVER_NAME);
    expect((await rawCall(c, STAGE, stageRequest())).error).toBeUndefined();
    expect(driver.callsTo(STAGE)).toHaveLength(1);
  });
});

describe("gateway mode through the CLI: secrets", () => {
  it("--log-level=trace never writes a NodeStageVolume secret to stderr, forwarded or gated, yet the driver receives it", async () => {
    const SECRET = "hunter2-TOP-SECRET-VALUE";
    const SECRET_KEY = "storage-account-key";
    const socket = driverSocketPath();
    const driver = await startDriver(socket);
    const node = fakeLnet({ base: "healthy" });
    nodes.push(node);
    const gw = await gateway(socket, [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--log-level=trace"], node.env);
    const c = client(gw);
    await untilReadyz(gw, checksPass, "local checks ready");

    const body = stageRequest({ [SECRET_KEY]: SECRET });
    expect((await rawCall(c, STAGE, body)).error).toBeUndefined();
    expect(driver.callsTo(STAGE)[0].request.includes(SECRET)).toBe(true);
    // An error from the driver is logged too; the request in that entry must be redacted as well.
    driver.script(STAGE, { error: { code: grpc.status.INTERNAL, details: "mount failed" } });
    expect((await rawCall(c, STAGE, body)).error?.code).toBe(grpc.status.INTERNAL);

    // A gated call is logged on the refusal path: take the NI down and retry.
    node.update({ netShow: { out: fs.readFileSync(path.join(ROOT, "gateway/demo/scenarios/ni-down/net_show.out"), "utf8") } });
    await untilReadyz(gw, (r) => r.status === 503 && /\[-\]lnet-nets failed/.test(r.text), "not ready after the NI goes down");
    expect((await rawCall(c, STAGE, body)).error?.code).toBe(grpc.status.UNAVAILABLE);

    await gw.stop();
    const stderr = gw.stderr();
    // The calls were logged (so the absence below means redaction, not silence).
    const logged = gw.logs().filter((l) => l.msg === "upstream call" && l.method === "csi.v1.Node/NodeStageVolume");
    expect(logged.length).toBeGreaterThanOrEqual(3);
    expect(logged[0].request).toMatchObject({ secrets: REDACTED });
    expect(stderr).not.toContain(SECRET);
    expect(stderr).not.toContain(SECRET_KEY);
  });
});
