// Issue 2: every RPC over every transport, with real clients and a real gateway process.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Identity } from "../gen/csi/v1/csi_pb.js";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../gen/grpc/health/v1/health_pb.js";
import * as reflV1 from "../gen/grpc/reflection/v1/reflection_pb.js";
import * as reflV1alpha from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { grpcJsClient, unary } from "./helpers/grpc-js-client.js";

let gw: GatewayProcess;

beforeAll(async () => {
  gw = await startGatewayProcess(["--driver-name=lustre.csi.example.com", "--driver-version=9.9.9", "--capabilities=controller-service,online-expansion"]);
});
afterAll(async () => {
  expect(await gw.stop()).toBe(0);
});

function unixH2Options() {
  return { createConnection: () => net.connect(gw.socket) } as http2.SecureClientSessionOptions;
}

const transports: Record<string, () => Transport> = {
  "gRPC over the unix socket (connect-node client)": () =>
    createGrpcTransport({ baseUrl: "http://localhost", nodeOptions: unixH2Options() }),
  "gRPC over TCP h2c": () => createGrpcTransport({ baseUrl: `http://${gw.http}` }),
  "Connect JSON over HTTP/1.1": () => createConnectTransport({ baseUrl: `http://${gw.http}`, httpVersion: "1.1" }),
  "Connect binary over h2c": () =>
    createConnectTransport({ baseUrl: `http://${gw.http}`, httpVersion: "2", useBinaryFormat: true }),
  "gRPC-Web over HTTP/1.1": () => createGrpcWebTransport({ baseUrl: `http://${gw.http}`, httpVersion: "1.1" }),
  "gRPC-Web over h2c": () => createGrpcWebTransport({ baseUrl: `http://${gw.http}`, httpVersion: "2" }),
};

describe.each(Object.entries(transports))("%s", (_name, makeTransport) => {
  it("answers every Identity and Health RPC the same way", async () => {
    const transport = makeTransport();
    const identity = createClient(Identity, transport);
    const health = createClient(Health, transport);

    const probe = await identity.probe({});
    expect(probe.ready).toBe(true);

    const info = await identity.getPluginInfo({});
    expect(info.name).toBe("lustre.csi.example.com");
    expect(info.vendorVersion).toBe("9.9.9");
    // Which plugin ABIs this gateway loads: both, comma-separated (issue 31).
    expect(info.manifest["probegate.plugin-abi"]).toBe("1,2");
    expect(info.manifest["probegate.mode"]).toBe("controller"); // the helper runs check-less gateways in controller mode (a check-less node is NoChecks)

    const caps = await identity.getPluginCapabilities({});
    expect(caps.capabilities.map((c) => c.type.case)).toEqual(["service", "volumeExpansion"]);

    for (const service of ["", "liveness", "readiness"]) {
      expect((await health.check({ service })).status).toBe(Status.SERVING);
    }
    await expect(health.check({ service: "no.such.Service" })).rejects.toMatchObject({ code: Code.NotFound });
  });
});

describe("@grpc/grpc-js (not Connect)", () => {
  for (const [name, target] of [
    ["unix socket", () => `unix://${gw.socket}`],
    ["TCP port", () => gw.http],
  ] as const) {
    it(`calls Identity and Health over the ${name}`, async () => {
      const identity = grpcJsClient(Identity, target());
      const health = grpcJsClient(Health, target());
      try {
        const probe = await unary<{ ready?: boolean }>(identity, "probe", {});
        expect(probe.ready).toBe(true);
        const info = await unary<{ name: string; vendorVersion: string }>(identity, "getPluginInfo", {});
        expect(info).toMatchObject({ name: "lustre.csi.example.com", vendorVersion: "9.9.9" });
        const caps = await unary<{ capabilities: unknown[] }>(identity, "getPluginCapabilities", {});
        expect(caps.capabilities).toHaveLength(2);
        const h = await unary<{ status: number }>(health, "check", { service: "readiness" });
        expect(h.status).toBe(Status.SERVING);
        const err = await unary(health, "check", { service: "bogus" }).catch((e) => e);
        expect(err.code).toBe(grpc.status.NOT_FOUND);
        // grpc-message is percent-encoded as the gRPC spec says, so grpc-js shows it as written.
        expect(err.details).toBe(`unknown service "bogus"`);
      } finally {
        identity.close();
        health.close();
      }
    });
  }

  it("gets UNIMPLEMENTED for an unknown method", async () => {
    const client = new grpc.Client(`unix://${gw.socket}`, grpc.credentials.createInsecure());
    const err = await new Promise<grpc.ServiceError>((resolve) =>
      client.makeUnaryRequest(
        "/csi.v1.Identity/NoSuchMethod",
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        (e) => resolve(e!),
      ),
    );
    client.close();
    expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it("streams Health.Watch: the current status first, SERVICE_UNKNOWN for unknown names", async () => {
    const health = grpcJsClient(Health, `unix://${gw.socket}`);
    const first = (service: string) =>
      new Promise<number>((resolve, reject) => {
        const call = health.watch({ service });
        call.once("data", (msg: { status: number }) => {
          resolve(msg.status);
          call.cancel();
        });
        call.once("error", (e: grpc.ServiceError) => {
          if (e.code !== grpc.status.CANCELLED) reject(e);
        });
      });
    expect(await first("readiness")).toBe(Status.SERVING);
    expect(await first("no-such")).toBe(Status.SERVICE_UNKNOWN);
    health.close();
  });
});

describe("server reflection", () => {
  for (const [version, mod] of [
    ["v1", reflV1],
    ["v1alpha", reflV1alpha],
  ] as const) {
    it(`${version}: lists services and describes csi.v1.Identity without proto files`, async () => {
      const client = grpcJsClient(mod.ServerReflection, `unix://${gw.socket}`);
      const call = client.serverReflectionInfo();
      const responses: Array<{ messageResponse: { case: string; value: any } }> = [];
      const done = new Promise<void>((resolve, reject) => {
        call.on("data", (r: any) => responses.push(r));
        call.on("end", resolve);
        call.on("error", reject);
      });
      call.write({ messageRequest: { case: "listServices", value: "*" } });
      call.write({ messageRequest: { case: "fileContainingSymbol", value: "csi.v1.Identity" } });
      call.write({ messageRequest: { case: "fileContainingSymbol", value: "csi.v1.Identity.Probe" } });
      call.write({ messageRequest: { case: "fileByFilename", value: "does/not/exist.proto" } });
      call.end();
      await done;
      client.close();

      expect(responses).toHaveLength(4);
      const services = responses[0].messageResponse.value.service.map((s: { name: string }) => s.name);
      expect(services).toEqual(
        expect.arrayContaining(["csi.v1.Identity", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]),
      );
      const files = (responses[1].messageResponse.value.fileDescriptorProto as Uint8Array[]).map((b) =>
        fromBinary(FileDescriptorProtoSchema, b),
      );
      const csi = files.find((f) => f.name === "csi/v1/csi.proto")!;
      expect(csi.package).toBe("csi.v1");
      const identity = csi.service.find((s) => s.name === "Identity")!;
      expect(identity.method.map((m) => m.name)).toEqual(["GetPluginInfo", "GetPluginCapabilities", "Probe"]);
      // Dependencies come along so clients can resolve google.protobuf.BoolValue.
      expect(files.map((f) => f.name)).toEqual(expect.arrayContaining(["google/protobuf/wrappers.proto", "google/protobuf/descriptor.proto"]));
      // The same stream does not resend files it already sent, but the requested one always comes.
      const again = (responses[2].messageResponse.value.fileDescriptorProto as Uint8Array[]).map((b) => fromBinary(FileDescriptorProtoSchema, b).name);
      expect(again).toEqual(["csi/v1/csi.proto"]);
      expect(responses[3].messageResponse.case).toBe("errorResponse");
      expect(responses[3].messageResponse.value.errorCode).toBe(grpc.status.NOT_FOUND);
    });
  }
});

describe("bad requests get clear errors and the gateway keeps answering", () => {
  async function post(path: string, body: Buffer | string, headers: Record<string, string>) {
    const res = await fetch(`http://${gw.http}${path}`, { method: "POST", body, headers });
    return { status: res.status, headers: res.headers, text: await res.text() };
  }

  it("malformed Connect JSON → invalid_argument with the decoder's reason", async () => {
    const r = await post("/csi.v1.Identity/Probe", "{not json", { "content-type": "application/json" });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.text)).toMatchObject({ code: "invalid_argument" });
    expect(JSON.parse(r.text).message).toMatch(/csi\.v1\.ProbeRequest/);
  });

  it("malformed gRPC protobuf → INVALID_ARGUMENT", async () => {
    const session = http2.connect("http://localhost", unixH2Options());
    // A length-prefixed frame whose payload is not valid protobuf (field 1, wire type 7).
    const payload = Buffer.from([0x0f, 0xff, 0xff]);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, payload.length]), payload]);
    const stream = session.request({ ":method": "POST", ":path": "/csi.v1.Identity/Probe", "content-type": "application/grpc", te: "trailers" });
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve) => {
      stream.on("trailers", resolve);
      stream.on("response", (h) => h["grpc-status"] && resolve(h));
      stream.resume();
      stream.end(frame);
    });
    session.close();
    expect(trailers["grpc-status"]).toBe(String(grpc.status.INVALID_ARGUMENT));
    expect(decodeURIComponent(String(trailers["grpc-message"]))).toMatch(/invalid request message for \/csi.v1.Identity\/Probe: illegal tag/);
  });

  it("oversized body → resource_exhausted, nothing else affected", async () => {
    const big = JSON.stringify({ junk: "x".repeat(5 * 1024 * 1024) });
    const r = await post("/csi.v1.Identity/Probe", big, { "content-type": "application/json" }).catch((e) => ({ status: 0, text: String(e) }));
    // Either the structured refusal, or (if the server stopped reading) a closed connection: never a crash.
    if (r.status !== 0) expect(JSON.parse(r.text).code).toBe("resource_exhausted");
    const ok = await post("/csi.v1.Identity/Probe", "{}", { "content-type": "application/json" });
    expect(JSON.parse(ok.text)).toEqual({ ready: true });
  });

  it("wrong content type and wrong method are refused, not crashed on", async () => {
    const r = await post("/csi.v1.Identity/Probe", "{}", { "content-type": "text/plain" });
    expect(r.status).toBeGreaterThanOrEqual(400);
    const g = await fetch(`http://${gw.http}/csi.v1.Identity/Probe`);
    expect(g.status).toBeGreaterThanOrEqual(400);
    const garbage = await new Promise<string>((resolve) => {
      const s = net.connect(Number(gw.http.split(":")[1]), "127.0.0.1", () => s.write("\x00\x01\x02garbage\r\n\r\n"));
      let out = "";
      s.on("data", (d) => (out += d));
      s.on("close", () => resolve(out));
      s.on("error", () => resolve(out));
    });
    expect(garbage).toMatch(/^HTTP\/1\.1 400/);
    const ok = await post("/csi.v1.Identity/Probe", "{}", { "content-type": "application/json" });
    expect(JSON.parse(ok.text)).toEqual({ ready: true });
  });
});

describe("the shared port", () => {
  it("serves h2c to a client that sends the HTTP/2 preface in pieces", async () => {
    const [host, port] = gw.http.split(":");
    const session = http2.connect(`http://${gw.http}`, {
      createConnection: () => {
        const sock = net.connect(Number(port), host);
        const write = sock.write.bind(sock) as (...a: unknown[]) => boolean;
        let first = true;
        (sock as unknown as { write: Function }).write = (chunk: Buffer, ...rest: unknown[]) => {
          if (!first) return write(chunk, ...rest);
          first = false;
          const b = Buffer.from(chunk);
          // Byte by byte through the preface, as a pathological slow client would.
          let i = 0;
          const tick = () => {
            if (i < 24) {
              write(b.subarray(i, i + 1));
              i++;
              setTimeout(tick, 5);
            } else write(b.subarray(24), ...rest);
          };
          tick();
          return true;
        };
        return sock;
      },
    });
    const body = await new Promise<string>((resolve, reject) => {
      const s = session.request({ ":method": "GET", ":path": "/healthz" });
      let t = "";
      s.setEncoding("utf8");
      s.on("data", (d) => (t += d));
      s.on("end", () => resolve(t));
      s.on("error", reject);
      s.end();
    });
    session.close();
    expect(body).toBe("ok");
  });

  it("answers the health endpoints and metrics over HTTP/1.1", async () => {
    expect(await (await fetch(`http://${gw.http}/healthz`)).text()).toBe("ok");
    expect(await (await fetch(`http://${gw.http}/livez`)).text()).toBe("alive");
    const readyz = await fetch(`http://${gw.http}/readyz?verbose`);
    expect(readyz.status).toBe(200);
    expect(await readyz.text()).toMatch(/readyz check passed/);
    const metrics = await (await fetch(`http://${gw.http}/metrics`)).text();
    expect(metrics).toMatch(/probegate_probe_requests_total\{transport="grpc-unix",method="Probe",result="ready"\} [1-9]/);
    expect(metrics).toMatch(/process_cpu_user_seconds_total/);
  });
});
