// The network edge against hostile and careless clients (issue 19): each
// attack, bounded in count and time, against a real probegate started with the
// image's heap caps. Every test checks that the process lives, Probe answers,
// descriptors return to their baseline, and the client got the documented status.

import fs from "node:fs";
import http2 from "node:http2";
import zlib from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import { FakeCsiDriver } from "./helpers/fake-csi-driver.js";
import { IMAGE_NODE_FLAGS, ROOT, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { dial, raw } from "./helpers/loopback.js";

const PROBE = "/csi.v1.Identity/Probe";
const CHECK = "/grpc.health.v1.Health/Check";
const WATCH = "/grpc.health.v1.Health/Watch";
const INFO = "/csi.v1.Identity/GetPluginInfo";

let gp: GatewayProcess | undefined;
afterEach(async () => {
  await gp?.stop("SIGKILL");
  gp = undefined;
});

let driver: FakeCsiDriver | undefined;
afterEach(async () => {
  await driver?.stop();
  driver = undefined;
});

async function start(args: string[] = []): Promise<GatewayProcess> {
  gp = await startGatewayProcess(args, { nodeArgs: IMAGE_NODE_FLAGS });
  return gp;
}

const fds = (g: GatewayProcess) => fs.readdirSync(`/proc/${g.child.pid}/fd`).length;

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const t0 = Date.now();
  while (Date.now() - t0 < timeoutMs) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A gRPC message: flag 0, big-endian length, payload. */
function frame(payload: Buffer, compressed = false): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** 512 KiB of tiny unknown fields (field 15, varint 0): the 549-byte crash of issue 19, uncompressed. */
const UNKNOWN_FIELDS = Buffer.alloc(512 * 1024);
for (let i = 0; i < UNKNOWN_FIELDS.length; i += 2) UNKNOWN_FIELDS[i] = 0x78;

/** A health Check request for a service name. */
const checkRequest = (service: string) => {
  const name = Buffer.from(service);
  const len: number[] = [];
  let n = name.length;
  do {
    len.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  return Buffer.concat([Buffer.from([0x0a, ...len]), name]);
};

interface CallResult {
  status?: number;
  grpcStatus?: string;
  grpcMessage?: string;
  rstCode?: number;
  error?: string;
  data: Buffer;
}

/** One raw gRPC call on a session; resolves when the stream closes. */
function call(
  session: http2.ClientHttp2Session,
  path: string,
  body: Buffer | undefined,
  extra: http2.OutgoingHttpHeaders = {},
): Promise<CallResult> & { stream: http2.ClientHttp2Stream; result: CallResult } {
  const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...extra });
  const out: CallResult = { data: Buffer.alloc(0) };
  const p = new Promise<CallResult>((resolve) => {
    stream.on("response", (h) => {
      out.status = Number(h[":status"]);
      if (h["grpc-status"] !== undefined) out.grpcStatus = String(h["grpc-status"]);
      if (h["grpc-message"] !== undefined) out.grpcMessage = decodeURIComponent(String(h["grpc-message"]));
    });
    stream.on("trailers", (t) => {
      out.grpcStatus = String(t["grpc-status"]);
      if (t["grpc-message"] !== undefined) out.grpcMessage = decodeURIComponent(String(t["grpc-message"]));
    });
    stream.on("data", (d: Buffer) => (out.data = Buffer.concat([out.data, d])));
    stream.on("error", (e) => (out.error = (e as NodeJS.ErrnoException).code ?? e.message));
    stream.on("close", () => {
      out.rstCode = stream.rstCode;
      resolve(out);
    });
  });
  if (body !== undefined) stream.end(body);
  return Object.assign(p, { stream, result: out });
}

function connect(target: string): http2.ClientHttp2Session {
  const s = target.startsWith("/") ? http2.connect("http://localhost", { createConnection: () => dial(target) }) : http2.connect(`http://${target}`);
  s.on("error", () => {});
  return s;
}

/** Probe over a fresh connection to each listener answers ready. */
async function probeAnswers(g: GatewayProcess): Promise<void> {
  for (const target of [g.socket, g.http]) {
    const s = connect(target);
    const r = await call(s, PROBE, frame(Buffer.alloc(0)));
    s.close();
    expect(r.grpcStatus, `Probe on ${target}`).toBe("0");
    expect(r.data.toString("hex")).toBe("00000000040a020801");
  }
}

async function healthy(g: GatewayProcess, baseline: number): Promise<void> {
  expect(g.child.exitCode).toBeNull();
  await probeAnswers(g);
  await until(`descriptors back to ${baseline} (now ${fds(g)})`, () => fds(g) <= baseline);
}

const statusLines = (text: string) => [...text.matchAll(/^HTTP\/1\.1 (\d{3})/gm)].map((m) => Number(m[1]));

async function metric(g: GatewayProcess, reason: string): Promise<number> {
  const text = await (await fetch(`http://${g.http}/metrics`)).text();
  const m = new RegExp(`^probegate_edge_rejected_total\\{reason="${reason}"\\} (\\d+)`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

describe("edge limits under attack (image heap caps)", () => {
  it("refuses oversized requests to the calls it answers itself before decoding them", async () => {
    const g = await start(["--idle-timeout=2s"]);
    const baseline = fds(g);
    for (const target of [g.socket, g.http]) {
      const s = connect(target);
      for (const path of [PROBE, CHECK, INFO]) {
        const r = await call(s, path, frame(UNKNOWN_FIELDS));
        expect(r.grpcStatus, `${path} on ${target}`).toBe("8");
      }
      s.close();
    }
    // The 549-byte original: gzip gRPC-Web Probe over HTTP/1.1.
    const gz = zlib.gzipSync(UNKNOWN_FIELDS, { level: 9 });
    expect(gz.length).toBeLessThan(1024);
    const web = await fetch(`http://${g.http}${PROBE}`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip" },
      body: frame(gz, true),
    });
    const webBody = Buffer.from(await web.arrayBuffer()).toString("latin1");
    expect(web.headers.get("grpc-status") ?? /grpc-status:\s*(\d+)/.exec(webBody)?.[1]).toBe("8");
    // Connect JSON with many keys, gzipped.
    const keys = `{${Array.from({ length: 300_000 }, (_, i) => `"k${i}":0`).join(",")}}`;
    const cj = await fetch(`http://${g.http}${INFO}`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: zlib.gzipSync(keys),
    });
    expect(cj.status).toBe(429);
    expect(((await cj.json()) as { code: string }).code).toBe("resource_exhausted");
    await healthy(g, baseline);
  });

  it("caps streams per connection and open Watch streams; Probe still answers", async () => {
    const g = await start(["--max-watches=20", "--max-streams-per-connection=50"]);
    const baseline = fds(g);
    const s = connect(g.socket);
    await new Promise((r) => s.once("remoteSettings", r));
    expect(s.remoteSettings.maxConcurrentStreams).toBe(50);
    const calls = Array.from({ length: 40 }, () => call(s, WATCH, frame(checkRequest(""))));
    await until("Watch answers", () => calls.filter((c) => c.result.status !== undefined).length === 40, 10_000);
    // 20 Watches stay open; the other 20 are refused at once.
    const refused = await Promise.all(calls.slice(20).map((c) => c));
    const codes = refused.map((r) => r.grpcStatus);
    expect(codes.filter((c) => c === "8").length).toBe(20);
    expect(await metric(g, "watches")).toBeGreaterThanOrEqual(20);
    await probeAnswers(g);
    s.destroy();
    await healthy(g, baseline);
  });

  it("survives the issue's floods at the default caps: 1,000 Watches on one connection, 4 × 250 half-open calls", async () => {
    const g = await start(["--request-timeout=3s", "--idle-timeout=3s"]);
    const baseline = fds(g);
    const w = connect(g.http);
    const watches = Array.from({ length: 1000 }, () => call(w, WATCH, frame(checkRequest(""))));
    // Every Watch is answered: 64 stream (the default cap), the rest are refused with a status or REFUSED_STREAM.
    const answered = (c: (typeof watches)[number]) => c.result.data.length > 0 || c.result.grpcStatus !== undefined || c.stream.closed;
    await until("every Watch answered", () => watches.every(answered), 30_000);
    const statuses = new Map<string, number>();
    for (const c of watches) {
      const k = c.result.data.length > 0 ? "streaming" : String(c.result.grpcStatus ?? `rst ${c.stream.rstCode}`);
      statuses.set(k, (statuses.get(k) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toMatchObject({ streaming: 64 });
    const sessions = Array.from({ length: 4 }, () => connect(g.socket));
    const halfOpen = sessions.flatMap((s) => Array.from({ length: 250 }, () => call(s, INFO, undefined)));
    await probeAnswers(g);
    const done = await Promise.all(halfOpen);
    for (const r of done) expect(["4", "8", undefined]).toContain(r.grpcStatus);
    expect(done.filter((r) => r.grpcStatus === "4").length).toBeGreaterThan(0);
    for (const s of sessions) s.destroy();
    w.destroy();
    await Promise.all(watches);
    await healthy(g, baseline);
  });

  it("sheds in-flight calls over the cap, keeps a reserve for Probe, and times out half-open requests", async () => {
    const g = await start(["--max-inflight=40", "--max-watches=10", "--request-timeout=2s", "--idle-timeout=3s"]);
    const baseline = fds(g);
    const sessions = [connect(g.socket), connect(g.http)];
    // Half-open GetPluginInfo calls: headers only, no body, no half-close.
    const held = sessions.flatMap((s) => Array.from({ length: 30 }, () => call(s, INFO, undefined)));
    const results = await Promise.all(held);
    const codes = results.map((r) => r.grpcStatus);
    // 30 admitted (40 less the Probe reserve of 10), answered DEADLINE_EXCEEDED by the request timeout; 30 refused.
    expect(codes.filter((c) => c === "8").length).toBe(30);
    expect(codes.filter((c) => c === "4").length).toBe(30);
    for (const s of sessions) s.destroy();
    // HTTP/1.1 connections each holding an unfinished gRPC-Web request.
    const h1 = await Promise.all(
      Array.from({ length: 60 }, () =>
        raw(g.http, [`POST ${INFO} HTTP/1.1\r\nhost: x\r\ncontent-type: application/grpc-web+proto\r\ncontent-length: 10\r\n\r\n\0`], 8000),
      ),
    );
    const h1codes = h1.map((r) => /grpc-status: (\d+)/.exec(r.text)?.[1] ?? statusLines(r.text)[0]);
    expect(h1codes.filter((c) => c === "8").length).toBe(30);
    expect(h1codes.filter((c) => c === "4").length).toBe(30);
    expect(await metric(g, "inflight")).toBeGreaterThanOrEqual(60);
    expect(await metric(g, "request_timeout")).toBeGreaterThanOrEqual(60);
    await healthy(g, baseline);
  });

  it("serves pipelined /metrics one at a time and answers every request", async () => {
    const g = await start(["--max-connections=64", "--idle-timeout=2s"]);
    const baseline = fds(g);
    const burst = "GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n".repeat(600);
    const r = await raw(g.http, [burst], 15_000);
    const codes = statusLines(r.text);
    expect(codes.length).toBe(600);
    expect(codes.filter((c) => c === 200).length).toBeGreaterThanOrEqual(17);
    expect(codes.every((c) => c === 200 || c === 503)).toBe(true);
    // Over the cap, each new connection closes the one idle the longest (all of these are idle).
    const many = Array.from({ length: 100 }, () => dial(g.http).resume());
    await until("connections over the cap closed by the server", () => many.filter((m) => m.destroyed || m.readableEnded).length >= 36);
    for (const m of many) m.destroy();
    await until("evictions counted", async () => ((await metric(g, "evicted").catch(() => 0)) >= 36));
    await healthy(g, baseline);
  });

  it("closes HTTP/2 connections after a connection error and idle ones after the idle timeout", async () => {
    const g = await start(["--idle-timeout=1s"]);
    const baseline = fds(g);
    const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    const settings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    const bad = [
      Buffer.from([0, 0, 3, 6, 0, 0, 0, 0, 0, 1, 2, 3]), // PING of the wrong length
      Buffer.from([0, 0, 5, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]), // SETTINGS of the wrong length
      Buffer.from([0, 0, 1, 0, 0, 0, 0, 0, 0, 9]), // DATA on stream 0
    ];
    const sockets = [g.http, g.socket].flatMap((target) =>
      Array.from({ length: 15 }, (_, i) => {
        const s = dial(target);
        s.on("error", () => {});
        s.resume();
        s.write(Buffer.concat([preface, settings, bad[i % bad.length]]));
        return s;
      }),
    );
    // Plus connections that send the preface and then nothing.
    const idle = Array.from({ length: 10 }, () => dial(g.http));
    for (const s of idle) s.resume().end(Buffer.concat([preface, settings]));
    // And a well-behaved client that made a call and went quiet: GOAWAY, then closed.
    const quiet = connect(g.socket);
    expect((await call(quiet, PROBE, frame(Buffer.alloc(0)))).grpcStatus).toBe("0");
    let goaway = false;
    quiet.on("goaway", () => (goaway = true));
    // And one that opens no stream but PINGs every 200 ms: activity is not work.
    const pinger = connect(g.http);
    const pings = setInterval(() => !pinger.closed && !pinger.destroyed && pinger.ping(() => {}), 200);
    await until("sockets closed by the server", () => [...sockets, ...idle].every((s) => s.destroyed || s.readableEnded), 15_000);
    await until("the quiet session closed", () => quiet.closed || quiet.destroyed, 15_000);
    await until("the pinging session closed", () => pinger.closed || pinger.destroyed, 15_000);
    clearInterval(pings);
    expect(goaway).toBe(true);
    await healthy(g, baseline);
  });

  it("enforces HTTP/1.1 header, request and keep-alive timeouts", async () => {
    const g = await start(["--header-timeout=1s", "--request-timeout=2s", "--idle-timeout=2s"]);
    const baseline = fds(g);
    const [lone, trickle, stalled, keepAlive] = await Promise.all([
      raw(g.http, ["G"], 8000),
      raw(g.http, ["GET /healthz HTTP/1.1\r\n", "x-a: 1\r\n"], 8000),
      raw(g.http, [`POST ${INFO} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{`], 8000),
      raw(g.http, ["GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n"], 8000),
    ]);
    expect(statusLines(lone.text)).toEqual([408]);
    expect(statusLines(trickle.text)).toEqual([408]);
    expect(stalled.text).toMatch(/^HTTP\/1\.1 504/);
    expect(stalled.text).toContain("deadline_exceeded");
    expect(statusLines(keepAlive.text)).toEqual([200]);
    for (const r of [lone, trickle, stalled, keepAlive]) expect(r.closed).toBe(true);
    await healthy(g, baseline);
  });

  it("answers a missing or invalid authority and logs bad clients at a bounded rate", async () => {
    const g = await start(["--idle-timeout=2s"]);
    const baseline = fds(g);
    const http10 = await raw(g.http, ["GET /healthz HTTP/1.0\r\n\r\n"], 5000);
    expect(statusLines(http10.text.replace("HTTP/1.0", "HTTP/1.1"))).toEqual([200]);
    const web10 = await raw(g.http, [`POST ${PROBE} HTTP/1.0\r\ncontent-type: application/grpc-web+proto\r\ncontent-length: 5\r\n\r\n`, frame(Buffer.alloc(0))], 5000);
    expect(web10.text).toMatch(/grpc-status:\s*0/);
    const bad = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        raw(g.http, [`POST ${INFO} HTTP/1.1\r\nhost: [\r\ncontent-type: application/${i % 2 ? "json" : "grpc-web"}\r\ncontent-length: 0\r\n\r\n`], 5000),
      ),
    );
    for (const r of bad) expect(r.text).toMatch(/^HTTP\/1\.1 (400|200)/);
    expect(bad.filter((r) => /grpc-status: 3/.test(r.text)).length).toBe(25);
    const s = connect(g.http);
    const h2 = await Promise.all(Array.from({ length: 50 }, () => call(s, INFO, frame(Buffer.alloc(0)), { ":authority": "[" })));
    for (const r of h2) expect(r.grpcStatus).toBe("3");
    s.close();
    const absolute = await raw(g.http, [`POST http://h${PROBE} HTTP/1.1\r\nhost: h\r\ncontent-type: application/grpc-web+proto\r\ncontent-length: 5\r\n\r\n`, frame(Buffer.alloc(0))], 5000);
    expect(absolute.text).toMatch(/^HTTP\/1\.1 200/);
    expect(absolute.text).toMatch(/grpc-status:\s*0/);
    await healthy(g, baseline);
    expect(await metric(g, "bad_authority")).toBe(100);
    const lines = g.logs().filter((l) => l.reason === "bad_authority");
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(g.logs().filter((l) => l.level >= 50).length).toBe(0);
  });

  it("gives Watch, Health and Connect the right answers", async () => {
    const g = await start(["--shutdown-timeout=2s"]);
    const s = connect(g.socket);
    // A deadline past what a timer can hold (30 days) must not end the Watch at once.
    const long = call(s, WATCH, frame(checkRequest("")), { "grpc-timeout": "720H" });
    const short = call(s, WATCH, frame(checkRequest("")), { "grpc-timeout": "500m" });
    expect((await short).grpcStatus).toBe("4");
    expect(long.stream.closed).toBe(false);
    // A long unknown service name: NOT_FOUND, its echo cut short; a huge one: RESOURCE_EXHAUSTED, connection intact.
    const name = "x".repeat(3000);
    const nf = await call(s, CHECK, frame(checkRequest(name)));
    expect(nf.grpcStatus).toBe("5");
    expect(nf.grpcMessage!.length).toBeLessThan(300);
    expect((await call(s, CHECK, frame(checkRequest("y".repeat(70_000))))).grpcStatus).toBe("8");
    expect((await call(s, PROBE, frame(Buffer.alloc(0)))).grpcStatus).toBe("0");
    // A malformed Connect binary body is the caller's fault.
    const cb = await fetch(`http://${g.http}${INFO}`, { method: "POST", headers: { "content-type": "application/proto" }, body: Buffer.from([0x0a, 0x05, 0x01]) });
    expect(cb.status).toBe(400);
    expect(((await cb.json()) as { code: string }).code).toBe("invalid_argument");
    // SIGTERM with streams open: the Watch ends UNAVAILABLE, the process exits within the shutdown timeout and a second.
    const halfOpen = call(s, INFO, undefined);
    await until("half-open call admitted", () => halfOpen.stream.id !== undefined);
    const t0 = Date.now();
    g.child.kill("SIGTERM");
    expect((await long).grpcStatus).toBe("14");
    expect(await g.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(3000);
    s.destroy();
  });

  it("gateway mode: forwards a large NodeGetVolumeStats without decoding it, and bounds forwarded requests", async () => {
    const dir = tempDir("pg-edge-driver-");
    driver = await new FakeCsiDriver(`${dir}/driver.sock`, ["Identity", "Node"]).start();
    const STATS = "/csi.v1.Node/NodeGetVolumeStats";
    driver.script(STATS, { message: new Uint8Array() });
    // The bundled plugins include volume checks, so NodeGetVolumeStats replies are rewritten (its request read).
    const g = await start([`--upstream=unix://${dir}/driver.sock`, `--plugins-dir=${ROOT}/dist/plugins`, "--max-request-bytes=1048576", "--idle-timeout=2s"]);
    const s = connect(g.socket);
    // The upstream connection and the plugin sandbox start on first use: warm up before the baseline.
    expect((await call(s, STATS, frame(Buffer.from([0x0a, 0x01, 0x76])), { "grpc-timeout": "20S" })).grpcStatus).toBe("0");
    await new Promise((r) => setTimeout(r, 1500));
    const baseline = fds(g) - 1; // less the test's own connection, closed below
    // vol id, then 512 KiB of unknown fields: forwarded, answered by the driver.
    const big = Buffer.concat([Buffer.from([0x0a, 0x01, 0x76]), UNKNOWN_FIELDS]);
    const r1 = await call(s, STATS, frame(big), { "grpc-timeout": "20S" });
    expect(r1.grpcStatus).toBe("0");
    expect(driver.callsTo(STATS).length).toBe(2);
    // 32 KiB of unknown fields: small enough to be decoded for the volume check, without keeping them.
    const small = Buffer.concat([Buffer.from([0x0a, 0x01, 0x76]), UNKNOWN_FIELDS.subarray(0, 32 * 1024)]);
    expect((await call(s, STATS, frame(small), { "grpc-timeout": "20S" })).grpcStatus).toBe("0");
    // Over --max-request-bytes: RESOURCE_EXHAUSTED, and the driver sees no complete call.
    const tooBig = await call(s, STATS, frame(Buffer.alloc(2 * 1024 * 1024)), { "grpc-timeout": "20S" });
    expect(tooBig.grpcStatus).toBe("8");
    expect(tooBig.grpcMessage).toContain("--max-request-bytes");
    expect(driver.callsTo(STATS).length).toBe(3);
    s.close();
    expect(g.child.exitCode).toBeNull();
    const p = connect(g.socket);
    expect((await call(p, PROBE, frame(Buffer.alloc(0)))).grpcStatus).toBeDefined();
    p.close();
    await until(`descriptors back to ${baseline} (now ${fds(g)})`, () => fds(g) <= baseline);
  });
});
