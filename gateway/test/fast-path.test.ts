// Issue 5: the fast path must answer exactly as Connect does. Two gateways, one
// with the fast path and one without, get the same raw HTTP/2 requests; their
// answers must match byte for byte (headers but the date, body, trailers).
import http2 from "node:http2";
import net from "node:net";
import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";

let fast: GatewayProcess;
let slow: GatewayProcess;

beforeAll(async () => {
  [fast, slow] = await Promise.all([
    startGatewayProcess([]),
    startGatewayProcess([], { env: { PROBEGATE_FAST_PATH: "off" } }),
  ]);
});
afterAll(async () => {
  await Promise.all([fast.stop(), slow.stop()]);
});

interface Answer {
  headers: Record<string, unknown>;
  endStreamOnHeaders: boolean;
  body: string;
  trailers: Record<string, unknown>;
}

function call(socket: string, headers: http2.OutgoingHttpHeaders, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect("http://localhost", { createConnection: () => net.connect(socket) });
    session.on("error", reject);
    const s = session.request({ ":method": "POST", te: "trailers", ...headers });
    const out: Answer = { headers: {}, endStreamOnHeaders: false, body: "", trailers: {} };
    const chunks: Buffer[] = [];
    s.on("response", (h, flags) => {
      const { date: _date, ...rest } = h;
      out.headers = { ...rest };
      out.endStreamOnHeaders = (flags & 1) === 1;
    });
    s.on("data", (d: Buffer) => chunks.push(d));
    s.on("trailers", (t) => (out.trailers = { ...t }));
    s.on("close", () => {
      out.body = Buffer.concat(chunks).toString("hex");
      session.close();
      resolve(out);
    });
    s.on("error", reject);
    s.end(body);
  });
}

const frame = (payload: Buffer, flag = 0) => {
  const b = Buffer.alloc(5 + payload.length);
  b[0] = flag;
  b.writeUInt32BE(payload.length, 1);
  payload.copy(b, 5);
  return b;
};
const checkReq = (service: string) => frame(Buffer.concat([Buffer.from([0x0a, Buffer.byteLength(service)]), Buffer.from(service)]));
const grpc = { "content-type": "application/grpc" };
const PROBE = { ":path": "/csi.v1.Identity/Probe", ...grpc };
const CHECK = { ":path": "/grpc.health.v1.Health/Check", ...grpc };

const cases: Array<[string, http2.OutgoingHttpHeaders, Buffer, boolean]> = [
  // [name, headers, body, whether the fast path answers it itself]
  ["Probe, empty message", PROBE, frame(Buffer.alloc(0)), true],
  ["Probe, grpc-js accept-encoding", { ...PROBE, "grpc-accept-encoding": "identity,deflate,gzip" }, frame(Buffer.alloc(0)), true],
  ["Probe, br preferred", { ...PROBE, "grpc-accept-encoding": "br, gzip" }, frame(Buffer.alloc(0)), true],
  ["Probe, deadline", { ...PROBE, "grpc-timeout": "5S" }, frame(Buffer.alloc(0)), true],
  ["Probe, grpc+proto", { ...PROBE, "content-type": "application/grpc+proto" }, frame(Buffer.alloc(0)), true],
  ["Probe, identity encoding named", { ...PROBE, "grpc-encoding": "identity" }, frame(Buffer.alloc(0)), true],
  ["Probe, unknown field", PROBE, frame(Buffer.from([0x10, 0x01])), true],
  ["Probe, garbage message", PROBE, frame(Buffer.from([0x0f, 0xff, 0xff])), false],
  ["Probe, no message", PROBE, Buffer.alloc(0), false],
  ["Probe, two messages", PROBE, Buffer.concat([frame(Buffer.alloc(0)), frame(Buffer.alloc(0))]), false],
  ["Probe, truncated frame", PROBE, frame(Buffer.alloc(0)).subarray(0, 3), false],
  ["Probe, compressed flag without encoding", PROBE, frame(Buffer.alloc(0), 1), false],
  ["Probe, gzip-compressed request", { ...PROBE, "grpc-encoding": "gzip" }, frame(zlib.gzipSync(Buffer.alloc(0)), 1), false],
  ["Probe, unsupported encoding", { ...PROBE, "grpc-encoding": "snappy" }, frame(Buffer.alloc(0), 1), false],
  ["Probe, malformed deadline", { ...PROBE, "grpc-timeout": "soon" }, frame(Buffer.alloc(0)), false],
  ["Check readiness", CHECK, checkReq("readiness"), true],
  ["Check liveness", CHECK, checkReq("liveness"), true],
  ["Check default service", CHECK, frame(Buffer.alloc(0)), true],
  ["Check unknown service", CHECK, checkReq("nope"), true],
  ["Check garbage", CHECK, frame(Buffer.from([0xff])), false],
];

async function fastPathCount(gw: GatewayProcess, result: string): Promise<number> {
  const text = await (await fetch(`http://${gw.http}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(new RegExp(`probegate_fast_path_requests_total\\{[^}]*result="${result}"[^}]*\\} (\\d+)`, "g"))) total += Number(m[1]);
  return total;
}

describe("fast path interop", () => {
  it.each(cases)("%s: byte-identical to Connect", async (_name, headers, body, answeredFast) => {
    const beforeAnswered = await fastPathCount(fast, "answered");
    const [a, b] = await Promise.all([call(fast.socket, headers, body), call(slow.socket, headers, body)]);
    expect(a).toEqual(b);
    // Status is always present, wherever it came from.
    expect(a.trailers["grpc-status"] ?? a.headers["grpc-status"]).toBeDefined();
    const afterAnswered = await fastPathCount(fast, "answered");
    expect(afterAnswered - beforeAnswered).toBe(answeredFast ? 1 : 0);
  });

  it("the slow gateway never uses the fast path", async () => {
    expect(await fastPathCount(slow, "answered")).toBe(0);
    expect(await fastPathCount(slow, "connect")).toBe(0);
  });

  it("a garbage message is INVALID_ARGUMENT on both paths", async () => {
    const a = await call(fast.socket, PROBE, frame(Buffer.from([0x0f, 0xff, 0xff])));
    expect(a.trailers["grpc-status"]).toBe("3");
  });
});
