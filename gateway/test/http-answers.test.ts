// Issue 31 item 7: what curl and a browser get. HTTP/1.1 on the CSI unix
// socket is answered as on the TCP port; refusals carry the headers and body
// HTTP expects; an unknown path is 404 to plain HTTP and UNIMPLEMENTED to gRPC,
// the same on every listener; the 4 KiB limit is named as the fixed one it is.
import { execFile } from "node:child_process";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { h1Request, h2Request, type Answer, type RequestSpec } from "./helpers/loopback.js";

let gw: GatewayProcess;
beforeAll(async () => {
  gw = await startGatewayProcess([]);
}, 60_000);
afterAll(async () => {
  expect(await gw.stop()).toBe(0);
});

/** Every listener and HTTP version a client can reach the gateway on. */
const ways = (): Array<[string, (spec: RequestSpec) => Promise<Answer>]> => [
  ["HTTP/1.1 on the CSI socket", (s) => h1Request(gw.socket, s)],
  ["HTTP/2 on the CSI socket", (s) => h2Request(gw.socket, s)],
  ["HTTP/1.1 on the TCP port", (s) => h1Request(gw.http, s)],
  ["HTTP/2 on the TCP port", (s) => h2Request(gw.http, s)],
];

const curl = ["/usr/bin/curl", "/bin/curl", "/usr/local/bin/curl"].find((p) => fs.existsSync(p));

describe("HTTP/1.1 on the CSI unix socket", () => {
  it("gets an HTTP/1.1 answer, as the TCP port does", async () => {
    for (const target of [gw.socket, gw.http]) {
      const r = await h1Request(target, { path: "/readyz" });
      expect(r.httpVersion, target).toBe("1.1");
      expect(r.status, target).toBe(200);
      expect(r.text, target).toBe("ok");
    }
    // Health detail is for the unix socket's peers too.
    expect((await h1Request(gw.socket, { path: "/readyz?verbose" })).text).toContain("readyz check passed");
    const probe = await h1Request(gw.socket, { method: "POST", path: "/csi.v1.Identity/Probe", headers: { "content-type": "application/json" }, body: "{}" });
    expect(probe.status).toBe(200);
    expect(JSON.parse(probe.text)).toEqual({ ready: true });
  });

  it.skipIf(!curl)("is what `curl --unix-socket SOCKET http://localhost/readyz` prints", async () => {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(curl!, ["-sS", "-i", "--max-time", "5", "--unix-socket", gw.socket, "http://localhost/readyz"], (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      ),
    );
    expect(out).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(out.endsWith("\r\n\r\nok")).toBe(true);
  });
});

describe("an unknown path, on every listener and HTTP version", () => {
  it("is a plain 404 to plain HTTP, 404 unimplemented to Connect, UNIMPLEMENTED to gRPC", async () => {
    for (const [way, ask] of ways()) {
      const plain = await ask({ path: "/nope" });
      expect(plain.status, way).toBe(404);
      expect(plain.headers["content-type"], way).toMatch(/^text\/plain/);
      expect(plain.text, way).toBe("not found: /nope\n");

      const connect = await ask({ method: "POST", path: "/nope.v1.Svc/Call", headers: { "content-type": "application/json" }, body: "{}" });
      expect(connect.status, way).toBe(404);
      expect(JSON.parse(connect.text), way).toEqual({ code: "unimplemented", message: "unknown method /nope.v1.Svc/Call" });

      const web = await ask({ method: "POST", path: "/nope.v1.Svc/Call", headers: { "content-type": "application/grpc-web+proto" }, body: Buffer.alloc(5) });
      expect(web.status, way).toBe(200);
      expect(web.headers["grpc-status"], way).toBe("12");
    }
    for (const target of [gw.socket, gw.http]) {
      const grpc = await h2Request(target, { method: "POST", path: "/nope.v1.Svc/Call", headers: { "content-type": "application/grpc", te: "trailers" }, body: Buffer.alloc(5) });
      expect(grpc.status, target).toBe(200);
      expect(grpc.headers["grpc-status"] ?? grpc.trailers["grpc-status"], target).toBe("12");
    }
  });
});

describe("refusals carry what HTTP says they carry", () => {
  it("405 names the methods allowed (Allow) and says so in the body", async () => {
    for (const [way, ask] of ways()) {
      const health = await ask({ method: "POST", path: "/readyz", body: "" });
      expect(health.status, way).toBe(405);
      expect(health.headers.allow, way).toBe("GET, HEAD");
      expect(health.text, way).toContain("use GET or HEAD");

      const rpc = await ask({ path: "/csi.v1.Identity/Probe" });
      expect(rpc.status, way).toBe(405);
      expect(rpc.headers.allow, way).toBe("POST");
      expect(rpc.text, way).toBe("method GET is not allowed for /csi.v1.Identity/Probe; use POST\n");
    }
  });

  it("415 says which content types the method takes (Accept-Post and the body)", async () => {
    for (const [way, ask] of ways()) {
      const r = await ask({ method: "POST", path: "/csi.v1.Identity/Probe", headers: { "content-type": "text/plain" }, body: "x" });
      expect(r.status, way).toBe(415);
      const accepted = String(r.headers["accept-post"]).split(", ");
      expect(accepted, way).toEqual(expect.arrayContaining(["application/json", "application/proto", "application/grpc", "application/grpc-web+proto"]));
      expect(r.text, way).toMatch(/^content-type text\/plain is not supported for \/csi\.v1\.Identity\/Probe; send one of: application\/json, /);
    }
  });

  it("a request over 4 KiB is refused naming the fixed limit, not a setting", async () => {
    const big = JSON.stringify({ service: "a".repeat(5000) });
    for (const [way, ask] of ways()) {
      const r = await ask({ method: "POST", path: "/grpc.health.v1.Health/Check", headers: { "content-type": "application/json" }, body: big });
      expect(r.status, way).toBe(429);
      const err = JSON.parse(r.text);
      expect(err.code, way).toBe("resource_exhausted");
      // Over HTTP/2 the size is known only as far as it was read.
      expect(err.message, way).toMatch(/^request message (of \d+ bytes )?is larger than 4096 bytes, the fixed limit of the calls probegate answers itself$/);
    }
    const payload = Buffer.concat([Buffer.from([0x0a, 0x88, 0x27]), Buffer.alloc(5000, 0x61)]);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, (payload.length >> 8) & 0xff, payload.length & 0xff]), payload]);
    for (const target of [gw.socket, gw.http]) {
      const r = await h2Request(target, { method: "POST", path: "/grpc.health.v1.Health/Check", headers: { "content-type": "application/grpc", te: "trailers" }, body: frame });
      const status = r.headers["grpc-status"] ?? r.trailers["grpc-status"];
      const message = decodeURIComponent(String(r.headers["grpc-message"] ?? r.trailers["grpc-message"]));
      expect(status, target).toBe("8");
      expect(message, target).toBe("request message of 5003 bytes is larger than 4096 bytes, the fixed limit of the calls probegate answers itself");
    }
  });
});
