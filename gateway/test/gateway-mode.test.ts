import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary, fromBinary, type DescMessage, type DescService } from "@bufbuild/protobuf";
import {
  Controller,
  GroupController,
  Identity,
  Node,
  NodeStageVolumeRequestSchema,
  NodeUnstageVolumeRequestSchema,
  NodePublishVolumeRequestSchema,
  GetPluginInfoResponseSchema,
  ProbeResponseSchema,
  CreateVolumeRequestSchema,
} from "../gen/csi/v1/csi_pb.js";
import { rawCall } from "./helpers/fake-csi-driver.js";
import { eventually, probe, startHarness, type Harness } from "./gateway-mode-harness.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Fills every top-level string, bool, integer and string-map field, so each message has real content. */
function sample(desc: DescMessage, tag: string): Uint8Array {
  const init: Record<string, unknown> = {};
  for (const f of desc.fields) {
    if (f.fieldKind === "scalar") {
      switch (f.scalar) {
        case 9: // string
          init[f.localName] = `${tag}-${f.name}-ünïcode`;
          break;
        case 8: // bool
          init[f.localName] = true;
          break;
        case 3: // int64
          init[f.localName] = 123456789012n;
          break;
        case 5: // int32
          init[f.localName] = 42;
          break;
      }
    } else if (f.fieldKind === "map" && f.mapKind === "scalar") {
      init[f.localName] = { [`${tag}-key`]: `${tag}-value` };
    } else if (f.fieldKind === "list" && f.listKind === "scalar" && f.scalar === 9) {
      init[f.localName] = [`${tag}-a`, `${tag}-b`];
    }
  }
  return toBinary(desc, create(desc, init as never));
}

const FORWARDED: Array<{ svc: DescService; method: string; path: string; input: DescMessage; output: DescMessage }> = [];
for (const svc of [Controller, Node, GroupController]) {
  for (const m of svc.methods) FORWARDED.push({ svc, method: m.name, path: `/${svc.typeName}/${m.name}`, input: m.input, output: m.output });
}
for (const m of Identity.methods) {
  if (m.name !== "Probe") FORWARDED.push({ svc: Identity, method: m.name, path: `/csi.v1.Identity/${m.name}`, input: m.input, output: m.output });
}

describe("gateway mode: forwarding", () => {
  it("round-trips every Controller, Node, GroupController and Identity (info/capabilities) RPC byte for byte, metadata included", async () => {
    h = await startHarness({ services: ["Identity", "Node", "Controller", "GroupController"] });
    expect(FORWARDED.length).toBeGreaterThanOrEqual(28);
    for (const f of FORWARDED) {
      const request = sample(f.input, `req-${f.method}`);
      const reply = sample(f.output, `rep-${f.method}`);
      h.driver.script(f.path, {
        message: reply,
        headers: { "x-driver-header": f.method },
        trailers: { "x-driver-trailer": "t", "x-driver-blob-bin": Buffer.from([0, 1, 2, 255]) },
      });
      const r = await rawCall(h.client, f.path, request, {
        metadata: { "x-request-id": `id-${f.method}`, "x-blob-bin": Buffer.from([9, 8, 7, 0]) },
        deadline: Date.now() + 30_000,
      });
      expect(r.error, f.path).toBeUndefined();
      expect(Buffer.compare(r.response!, Buffer.from(reply)), `${f.path} reply bytes`).toBe(0);
      const seen = h.driver.callsTo(f.path);
      expect(seen).toHaveLength(1);
      expect(Buffer.compare(seen[0].request, Buffer.from(request)), `${f.path} request bytes`).toBe(0);
      expect(seen[0].metadata["x-request-id"]).toEqual([`id-${f.method}`]);
      expect(seen[0].metadata["x-blob-bin"]).toEqual([Buffer.from([9, 8, 7, 0])]);
      expect(r.headers?.get("x-driver-header")).toEqual([f.method]);
      expect(r.trailers?.get("x-driver-trailer")).toEqual(["t"]);
      expect(r.trailers?.get("x-driver-blob-bin")).toEqual([Buffer.from([0, 1, 2, 255])]);
    }
    // Probe is probegate's own answer (it asks the driver separately): a
    // driver saying not-ready with the local checks failing can't be relayed.
    h.readiness.failReadiness("lnet-nids", "NoNonLoopbackNid", "only 0@lo");
    expect(await probe(h.client)).toEqual({ ready: false });
  });

  it("relays status codes, messages and grpc-status-details-bin unchanged", async () => {
    h = await startHarness();
    const details = Buffer.from([0x08, 0x09, 0x12, 0x04, 0x62, 0x6f, 0x6f, 0x6d]);
    h.driver.script("/csi.v1.Controller/CreateVolume", {
      error: { code: grpc.status.RESOURCE_EXHAUSTED, details: "quota: 100% used ✗", metadata: { "grpc-status-details-bin": details, "x-why": "quota" } },
    });
    const r = await rawCall(h.client, "/csi.v1.Controller/CreateVolume", sample(CreateVolumeRequestSchema, "x"));
    expect(r.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(r.error?.details).toBe("quota: 100% used ✗");
    expect(r.error?.metadata.get("grpc-status-details-bin")).toEqual([details]);
    expect(r.error?.metadata.get("x-why")).toEqual(["quota"]);
  });

  it("returns the upstream's own UNIMPLEMENTED for services it lacks", async () => {
    h = await startHarness({ services: ["Identity", "Node"] });
    const r = await rawCall(h.client, "/csi.v1.GroupController/GroupControllerGetCapabilities", new Uint8Array());
    expect(r.error?.code).toBe(grpc.status.UNIMPLEMENTED);
    const c = await rawCall(h.client, "/csi.v1.Controller/ControllerGetCapabilities", new Uint8Array());
    expect(c.error?.code).toBe(grpc.status.UNIMPLEMENTED);
    // Methods newer than probegate's proto are forwarded too.
    const n = await rawCall(h.client, "/csi.v1.Node/NodeFutureMethod", new Uint8Array([8, 1]));
    expect(n.error?.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(n.error?.details).toMatch(/NodeFutureMethod/);
  });

  it("passes the caller's remaining deadline upstream, capped", async () => {
    h = await startHarness({ timeoutCapMs: 3000 });
    const deadline = Date.now() + 20_000;
    await rawCall(h.client, "/csi.v1.Node/NodeGetInfo", new Uint8Array(), { deadline: Date.now() + 1500 });
    await rawCall(h.client, "/csi.v1.Node/NodeGetCapabilities", new Uint8Array(), { deadline });
    await rawCall(h.client, "/csi.v1.Controller/ListVolumes", new Uint8Array());
    const [short] = h.driver.callsTo("/csi.v1.Node/NodeGetInfo");
    const [long] = h.driver.callsTo("/csi.v1.Node/NodeGetCapabilities");
    const [none] = h.driver.callsTo("/csi.v1.Controller/ListVolumes");
    // The caller's own 1.5 s deadline reaches the driver (never extended)...
    expect(short.deadline - short.receivedAt).toBeLessThanOrEqual(1500);
    expect(short.deadline - short.receivedAt).toBeGreaterThan(0);
    // ...a longer one, or none, is cut to the 3 s cap.
    expect(long.deadline - long.receivedAt).toBeLessThanOrEqual(3000);
    expect(long.deadline - long.receivedAt).toBeGreaterThan(1500);
    expect(none.deadline).not.toBe(Infinity);
    expect(none.deadline - none.receivedAt).toBeLessThanOrEqual(3000);
  });

  it("ends a call the driver does not finish in time with DEADLINE_EXCEEDED and cancels it upstream", async () => {
    h = await startHarness();
    h.driver.script("/csi.v1.Node/NodeGetInfo", { delayMs: 10_000 });
    const r = await rawCall(h.client, "/csi.v1.Node/NodeGetInfo", new Uint8Array(), { deadline: Date.now() + 300 });
    expect(r.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await eventually(async () => h!.driver.callsTo("/csi.v1.Node/NodeGetInfo")[0]?.cancelled, (v) => v === true, "driver sees cancel");
  });

  it("counts forwarded calls and errors by method and code", async () => {
    h = await startHarness();
    h.driver.script("/csi.v1.Node/NodeGetInfo", { error: { code: grpc.status.INTERNAL, details: "x" } });
    await rawCall(h.client, "/csi.v1.Node/NodeGetInfo", new Uint8Array());
    await rawCall(h.client, "/csi.v1.Node/NodeGetCapabilities", new Uint8Array());
    const text = await h.metrics.registry.metrics();
    expect(text).toMatch(/probegate_upstream_requests_total\{method="csi\.v1\.Node\/NodeGetInfo"\} 1/);
    expect(text).toMatch(/probegate_upstream_errors_total\{method="csi\.v1\.Node\/NodeGetInfo",code="INTERNAL"\} 1/);
    expect(text).toMatch(/probegate_upstream_request_duration_seconds_count\{method="csi\.v1\.Node\/NodeGetCapabilities"\} 1/);
    expect(text).not.toMatch(/probegate_upstream_errors_total\{method="csi\.v1\.Node\/NodeGetCapabilities"/);
  });
});

describe("gateway mode: gating", () => {
  const stage = () => toBinary(NodeStageVolumeRequestSchema, create(NodeStageVolumeRequestSchema, { volumeId: "vol-1", stagingTargetPath: "/stage" }));
  const publish = () => toBinary(NodePublishVolumeRequestSchema, create(NodePublishVolumeRequestSchema, { volumeId: "vol-1", targetPath: "/pod" }));
  const unstage = () => toBinary(NodeUnstageVolumeRequestSchema, create(NodeUnstageVolumeRequestSchema, { volumeId: "vol-1", stagingTargetPath: "/stage" }));

  it("refuses NodeStageVolume and NodePublishVolume while not ready, naming the failing checks, and lets them through once ready", async () => {
    h = await startHarness();
    h.readiness.failReadiness("lnet-nids", "NoNonLoopbackNid", "only 0@lo is configured");
    for (const [path, body] of [["/csi.v1.Node/NodeStageVolume", stage()], ["/csi.v1.Node/NodePublishVolume", publish()]] as const) {
      const r = await rawCall(h.client, path, body);
      expect(r.error?.code, path).toBe(grpc.status.UNAVAILABLE);
      expect(r.error?.details).toBe("node not ready: lnet-nids: NoNonLoopbackNid: only 0@lo is configured");
      expect(h.driver.callsTo(path)).toHaveLength(0);
    }
    // Tearing down is always allowed, or a broken node could never release its volumes.
    const u = await rawCall(h.client, "/csi.v1.Node/NodeUnstageVolume", unstage());
    expect(u.error).toBeUndefined();
    const up = await rawCall(h.client, "/csi.v1.Node/NodeUnpublishVolume", new Uint8Array());
    expect(up.error).toBeUndefined();

    h.readiness.pass();
    const ok = await rawCall(h.client, "/csi.v1.Node/NodeStageVolume", stage());
    expect(ok.error).toBeUndefined();
    expect(h.driver.callsTo("/csi.v1.Node/NodeStageVolume")).toHaveLength(1);
    expect(await h.metrics.registry.metrics()).toMatch(/probegate_upstream_gated_total\{method="csi\.v1\.Node\/NodeStageVolume"\} 1/);
  });

  it("says initializing before the first checks complete, and honours --gate", async () => {
    h = await startHarness({ gate: ["node-publish"] });
    h.readiness.set({ phase: "initializing", ready: false });
    const s = await rawCall(h.client, "/csi.v1.Node/NodeStageVolume", stage());
    expect(s.error).toBeUndefined();
    const p = await rawCall(h.client, "/csi.v1.Node/NodePublishVolume", publish());
    expect(p.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(p.error?.details).toMatch(/^node not ready: initializing/);
  });
});

describe("gateway mode: Probe and upstream availability", () => {
  it("combines the driver's Probe with the local checks", async () => {
    h = await startHarness();
    expect(await probe(h.client)).toEqual({ ready: true });

    h.driver.script("/csi.v1.Identity/Probe", { message: toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: false })) });
    expect(await probe(h.client)).toEqual({ ready: false });

    h.driver.script("/csi.v1.Identity/Probe", { error: { code: grpc.status.FAILED_PRECONDITION, details: "lustre client missing" } });
    const e = await probe(h.client);
    expect(e).toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
    expect((e as { details: string }).details).toMatch(/lustre client missing/);

    h.driver.script("/csi.v1.Identity/Probe", { message: toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: true })) });
    h.readiness.failReadiness("lnet-nids", "NoNonLoopbackNid", "only 0@lo");
    expect(await probe(h.client)).toEqual({ ready: false });
    h.readiness.set({ live: false });
    expect(await probe(h.client)).toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
  });

  it("opens before the driver: initializing, then ready when it comes up, UNAVAILABLE naming the socket when it goes away, and recovers", async () => {
    h = await startHarness({ driver: false });
    expect(await probe(h.client)).toEqual({ ready: false });
    // The registrar and the livenessprobe sidecar call GetPluginInfo once at start
    // and exit if it fails: probegate answers it from --driver-name meanwhile.
    const early = await rawCall(h.client, "/csi.v1.Identity/GetPluginInfo", new Uint8Array());
    expect(early.error).toBeUndefined();
    expect(fromBinary(GetPluginInfoResponseSchema, early.response!).name).toBe("probegate.test");
    expect(h.upstream.status).toMatchObject({ answeredOnce: false, driverName: "probegate.test", upstreamDriverName: undefined });
    // Other calls wait for the driver within their deadline, then fail saying why.
    const held = await rawCall(h.client, "/csi.v1.Node/NodeGetInfo", new Uint8Array(), { deadline: Date.now() + 400 });
    expect([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]).toContain(held.error?.code);
    // A call in flight when the driver comes up goes through.
    const pending = rawCall(h.client, "/csi.v1.Node/NodeGetCapabilities", new Uint8Array(), { deadline: Date.now() + 60_000 });

    await h.startDriver(undefined, (d) =>
      d.script("/csi.v1.Identity/GetPluginInfo", {
        message: toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: "azurelustre.csi.azure.com", vendorVersion: "v0.1" })),
      }),
    );
    await eventually(() => probe(h!.client), (v) => "ready" in v && v.ready, "probe after driver start");
    expect((await pending).error).toBeUndefined();
    expect(h.driver.callsTo("/csi.v1.Node/NodeGetCapabilities")).toHaveLength(1);
    // Once the driver has said its name, GetPluginInfo is the driver's; a different name is logged, counted and shown.
    await eventually(async () => h!.upstream.status.upstreamDriverName, (v) => v === "azurelustre.csi.azure.com", "upstream name");
    const info = await rawCall(h.client, "/csi.v1.Identity/GetPluginInfo", new Uint8Array());
    expect(fromBinary(GetPluginInfoResponseSchema, info.response!).name).toBe("azurelustre.csi.azure.com");
    expect(h.logs.text).toMatch(/upstream driver name differs from --driver-name/);
    expect(await h.metrics.registry.getSingleMetricAsString("probegate_upstream_driver_name_mismatch_total")).toMatch(/ 1$/m);
    expect(h.upstream.healthNotes().join("\n")).toContain(`"azurelustre.csi.azure.com" differs from --driver-name "probegate.test"`);

    await h.driver.stop();
    const gone = await eventually(() => probe(h!.client), (v) => "code" in v, "probe after driver stop");
    expect(gone).toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect((gone as { details: string }).details).toContain(h.driverSocket);
    const call = await rawCall(h.client, "/csi.v1.Node/NodeGetInfo", new Uint8Array());
    expect(call.error?.code).toBe(grpc.status.UNAVAILABLE);

    await h.startDriver();
    await eventually(() => probe(h!.client), (v) => "ready" in v && v.ready, "probe after driver restart");
    const again = await rawCall(h.client, "/csi.v1.Node/NodeGetInfo", new Uint8Array());
    expect(again.error).toBeUndefined();
  });

  it("bounds a slow driver's Probe and shares one upstream call among concurrent Probes", async () => {
    h = await startHarness({ probeTimeoutMs: 300, probeCacheMs: 60_000 });
    h.driver.script("/csi.v1.Identity/Probe", { delayMs: 100 });
    const answers = await Promise.all(Array.from({ length: 20 }, () => probe(h!.client)));
    expect(answers.every((a) => "ready" in a && a.ready)).toBe(true);
    expect(h.driver.callsTo("/csi.v1.Identity/Probe")).toHaveLength(1);
    await h.close();

    h = await startHarness({ probeTimeoutMs: 300, probeCacheMs: 0 });
    expect(await probe(h.client)).toEqual({ ready: true });
    h.driver.script("/csi.v1.Identity/Probe", { delayMs: 5000 });
    const slow = await probe(h.client);
    expect(slow).toMatchObject({ code: grpc.status.UNAVAILABLE });
    expect((slow as { details: string }).details).toMatch(/no answer within 300 ms/);
  });
});
