// The raw-call core's response side against a driver that misbehaves at the
// HTTP/2 level, which a gRPC library driver cannot be made to do: resets
// before and after its reply started, a reply with no status, and a Probe
// reply over the core's reply cap. The gateway is the real one (gateway mode's
// harness), called with grpc-js as kubelet would; the driver is bare node:http2.
import http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { GetPluginInfoResponseSchema } from "../gen/csi/v1/csi_pb.js";
import { MAX_REPLY_BYTES } from "../src/rawcall/reply.js";
import { rawCall } from "./helpers/fake-csi-driver.js";
import { eventually, probe, startHarness, type Harness } from "./gateway-mode-harness.js";

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM } = http2.constants;

function frame(message: Uint8Array): Buffer {
  const b = Buffer.alloc(5 + message.length);
  b.writeUInt32BE(message.length, 1);
  b.set(message, 5);
  return b;
}

const PLUGIN_INFO = frame(toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: "probegate.test" })));

/** What the bare driver does with a call to one path, once its request has been read. */
type Behaviour = (stream: http2.ServerHttp2Stream) => void;

function answer(stream: http2.ServerHttp2Stream, body: Buffer): void {
  stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
  stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
  stream.end(body);
}

async function bareDriver(socket: string, behaviours: Record<string, Behaviour>): Promise<http2.Http2Server> {
  const server = http2.createServer();
  server.on("stream", (stream, headers) => {
    stream.on("error", () => {});
    const path = String(headers[":path"]);
    stream.resume();
    stream.once("end", () => {
      if (path === "/csi.v1.Identity/GetPluginInfo") return answer(stream, PLUGIN_INFO);
      const b = behaviours[path];
      if (b) b(stream);
      else stream.close(NGHTTP2_CANCEL);
    });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return server;
}

let h: Harness | undefined;
let driver: http2.Http2Server | undefined;
afterEach(async () => {
  await h?.close();
  await new Promise<void>((r) => (driver ? driver.close(() => r()) : r()));
  h = driver = undefined;
});

async function start(behaviours: Record<string, Behaviour>): Promise<Harness> {
  h = await startHarness({ driver: false });
  driver = await bareDriver(h.driverSocket, behaviours);
  await eventually(async () => h!.upstream.status, (st) => st.answeredOnce, "the driver's first answer");
  return h;
}

const STAGE = "/csi.v1.Node/NodeStageVolume";
const UNSTAGE = "/csi.v1.Node/NodeUnstageVolume";
const INFO = "/csi.v1.Node/NodeGetInfo";
const STATS = "/csi.v1.Node/NodeGetVolumeStats";

describe("relayed replies that end without a gRPC status", () => {
  // node:http2 reports a reset with an error code (REFUSED_STREAM, ENHANCE_YOUR_CALM…) as a stream
  // error before the close: the caller is told the driver is unavailable, naming it.
  it("maps the driver's resets to a status, before and after its reply started, and a reply with no status to INTERNAL", async () => {
    const g = await start({
      [STAGE]: (s) => s.close(NGHTTP2_CANCEL),
      [UNSTAGE]: (s) => s.close(NGHTTP2_REFUSED_STREAM),
      [INFO]: (s) => {
        s.respond({ ":status": 200, "content-type": "application/grpc" });
        s.end(frame(new Uint8Array()));
      },
      [STATS]: (s) => {
        s.respond({ ":status": 200, "content-type": "application/grpc" });
        s.write(frame(new Uint8Array([0x0a, 0x00])), () => setTimeout(() => s.close(NGHTTP2_CANCEL), 20));
      },
    });
    const staged = await rawCall(g.client, STAGE, new Uint8Array());
    expect(staged.error?.code).toBe(grpc.status.CANCELLED);
    expect(staged.error?.details).toBe(`upstream reset the stream (HTTP/2 error ${NGHTTP2_CANCEL})`);

    const refused = await rawCall(g.client, UNSTAGE, new Uint8Array());
    expect(refused.error?.code).toBe(grpc.status.UNAVAILABLE);
    expect(refused.error?.details).toContain(g.driverSocket);
    expect(refused.error?.details).toMatch(/is unavailable: .*REFUSED_STREAM/);

    const bare = await rawCall(g.client, INFO, new Uint8Array());
    expect(bare.error?.code).toBe(grpc.status.INTERNAL);

    // Cut after the reply started: what was relayed ends without the driver's status, so never OK.
    const cut = await rawCall(g.client, STATS, new Uint8Array());
    expect(cut.error?.code).toBe(grpc.status.INTERNAL);
    expect(cut.error?.details).toMatch(/^upstream (reset the stream|ended the call without a status)/);

    // Every call was counted with the status its caller got.
    const text = await g.metrics.registry.metrics();
    expect(text).toMatch(/probegate_upstream_errors_total\{method="csi\.v1\.Node\/NodeStageVolume",code="CANCELLED"\} 1/);
    expect(text).toMatch(/probegate_upstream_errors_total\{method="csi\.v1\.Node\/NodeUnstageVolume",code="UNAVAILABLE"\} 1/);
    expect(text).toMatch(/probegate_upstream_errors_total\{method="csi\.v1\.Node\/NodeGetInfo",code="INTERNAL"\} 1/);
    expect(text).toMatch(/probegate_upstream_errors_total\{method="csi\.v1\.Node\/NodeGetVolumeStats",code="INTERNAL"\} 1/);
  });
});

describe("probegate's own calls to the driver", () => {
  it("refuse a reply over the reply cap: Probe fails RESOURCE_EXHAUSTED instead of buffering it", async () => {
    const g = await start({ "/csi.v1.Identity/Probe": (s) => answer(s, frame(Buffer.alloc(MAX_REPLY_BYTES + 1))) });
    const p = await probe(g.client);
    expect(p).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, details: `upstream CSI driver Probe failed: RESOURCE_EXHAUSTED: reply message is larger than ${MAX_REPLY_BYTES} bytes` });
  });
});
