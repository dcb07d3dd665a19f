import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { create, hasOption, toBinary, type DescMessage } from "@bufbuild/protobuf";
import {
  Controller,
  csi_secret,
  GroupController,
  Node,
  NodeStageVolumeRequestSchema,
  NodePublishVolumeRequestSchema,
  CreateVolumeRequestSchema,
} from "../gen/csi/v1/csi_pb.js";
import { rawCall } from "./helpers/fake-csi-driver.js";
import { startHarness, type Harness } from "./gateway-mode-harness.js";
import { redactedJson, REDACTED } from "../src/upstream/redact.js";

const SECRET = "hunter2-TOP-SECRET-VALUE";
const SECRET_KEY = "storage-account-key";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function secretFields(desc: DescMessage) {
  return desc.fields.filter((f) => hasOption(f, csi_secret));
}

describe("gateway mode: secrets never reach the logs", () => {
  it("the proto marks secrets where the spec does", () => {
    const marked = [Controller, Node, GroupController].flatMap((s) =>
      s.methods.filter((m) => secretFields(m.input).length > 0).map((m) => m.name),
    );
    expect(marked.sort()).toEqual(
      [
        "ControllerExpandVolume",
        "ControllerModifyVolume",
        "ControllerPublishVolume",
        "ControllerUnpublishVolume",
        "CreateSnapshot",
        "CreateVolume",
        "CreateVolumeGroupSnapshot",
        "DeleteSnapshot",
        "DeleteVolume",
        "DeleteVolumeGroupSnapshot",
        "GetSnapshot",
        "GetVolumeGroupSnapshot",
        "ListSnapshots",
        "NodeExpandVolume",
        // CSI v1.13: the storage backend health request may carry credentials.
        "NodeGetStorageHealth",
        "NodePublishVolume",
        "NodeStageVolume",
        "ValidateVolumeCapabilities",
      ].sort(),
    );
  });

  it("redacts every csi_secret field of every request type", () => {
    for (const svc of [Controller, Node, GroupController]) {
      for (const m of svc.methods) {
        const fields = secretFields(m.input);
        if (fields.length === 0) continue;
        const init: Record<string, unknown> = {};
        for (const f of fields) init[f.localName] = { [SECRET_KEY]: SECRET };
        const json = JSON.stringify(redactedJson(m.input, toBinary(m.input, create(m.input, init as never))));
        expect(json, m.name).not.toContain(SECRET);
        expect(json, m.name).not.toContain(SECRET_KEY);
        expect(json, m.name).toContain(REDACTED);
      }
    }
  });

  it("logs forwarded calls at debug with secrets redacted, on success, on upstream error and when gated", async () => {
    h = await startHarness({ logLevel: "trace" });
    const stage = toBinary(
      NodeStageVolumeRequestSchema,
      create(NodeStageVolumeRequestSchema, {
        volumeId: "vol-1",
        stagingTargetPath: "/var/lib/kubelet/plugins/stage",
        secrets: { [SECRET_KEY]: SECRET },
        volumeContext: { "fs-name": "lustrefs" },
      }),
    );
    const publish = toBinary(
      NodePublishVolumeRequestSchema,
      create(NodePublishVolumeRequestSchema, { volumeId: "vol-1", targetPath: "/pods/x", secrets: { [SECRET_KEY]: SECRET } }),
    );
    const createVol = toBinary(CreateVolumeRequestSchema, create(CreateVolumeRequestSchema, { name: "pvc-1", secrets: { [SECRET_KEY]: SECRET } }));

    expect((await rawCall(h.client, "/csi.v1.Node/NodeStageVolume", stage)).error).toBeUndefined();
    h.driver.script("/csi.v1.Controller/CreateVolume", { error: { code: grpc.status.INTERNAL, details: "backend down" } });
    expect((await rawCall(h.client, "/csi.v1.Controller/CreateVolume", createVol)).error?.code).toBe(grpc.status.INTERNAL);
    h.readiness.failReadiness("lnet-nids", "NoNonLoopbackNid", "only 0@lo");
    expect((await rawCall(h.client, "/csi.v1.Node/NodePublishVolume", publish)).error?.code).toBe(grpc.status.UNAVAILABLE);
    // Secrets did reach the driver: redaction is for logs only.
    expect(h.driver.callsTo("/csi.v1.Node/NodeStageVolume")[0].request.includes(SECRET)).toBe(true);

    const logs = h.logs;
    await h.close();
    h = undefined;
    const entries = logs.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const calls = entries.filter((e) => e.msg === "upstream call");
    expect(calls.map((e) => e.method)).toEqual([
      "csi.v1.Node/NodeStageVolume",
      "csi.v1.Controller/CreateVolume",
      "csi.v1.Node/NodePublishVolume",
    ]);
    expect(calls.every((e) => e.level === 20)).toBe(true);
    expect(calls[0].request).toMatchObject({ volumeId: "vol-1", secrets: REDACTED, volumeContext: { "fs-name": "lustrefs" } });
    expect(logs.text).not.toContain(SECRET);
    expect(logs.text).not.toContain(SECRET_KEY);
  });

  it("logs nothing per call above debug", async () => {
    h = await startHarness({ logLevel: "info" });
    await rawCall(h.client, "/csi.v1.Node/NodeGetInfo", new Uint8Array());
    expect(h.logs.lines.filter((l) => l.includes("upstream call"))).toEqual([]);
  });
});
