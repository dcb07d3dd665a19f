// The short network-edge fuzz (issue #14): a fixed seed, a few hundred cases
// per kind, against a real gateway process on its TCP port and CSI socket.
// The long version runs inside `npm run soak` (bench/soak/).
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EdgeFuzzer, type FuzzKind } from "../../bench/soak/fuzz-edge.js";
import { parseH1Response } from "../../bench/soak/h1-wire.js";
import { startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { dial, hostPort } from "./helpers/loopback.js";

const SEED = 1414;

let gw: GatewayProcess;
const fatal: string[] = [];
let baselineFds = 0;
const fds = () => fs.readdirSync(`/proc/${gw.child.pid}/fd`).length;

beforeAll(async () => {
  // info, not the helper's debug: a debug line per bad request would be the
  // fuzzer measuring the logger. A short idle timeout lets the last test see
  // every connection the fuzzer left behind closed without a long wait.
  gw = await startGatewayProcess(["--log-level=info", "--idle-timeout=2s"]);
  gw.child.once("exit", (code, sig) => fatal.push(`gateway exited (${code ?? sig})`));
  baselineFds = fds();
});

afterAll(async () => {
  await gw?.stop();
});

function target() {
  return { ...hostPort(gw.http), socket: gw.socket };
}

async function fuzz(kinds: FuzzKind[], cases = 0) {
  const f = new EdgeFuzzer(target(), { seed: SEED, cases, kinds, compareSplits: true, deadlineMs: 10_000 });
  const stats = await f.run();
  return stats;
}

describe("network edge fuzz (fixed seed)", () => {
  it("answers valid HTTP/1.1 requests split at every byte exactly as unsplit ones", async () => {
    const s = await fuzz(["h1-split"]);
    expect(s.cases["h1-split"]).toBeGreaterThan(300);
    expect(s.violations).toEqual([]);
    expect(fatal).toEqual([]);
  });

  it("answers an h2c Probe split at every byte, on the port and on the socket", async () => {
    const s = await fuzz(["h2-split"]);
    expect(s.cases["h2-split"]).toBeGreaterThan(100);
    expect(s.endings["h2-split:response"]).toBe(s.cases["h2-split"]);
    expect(s.violations).toEqual([]);
    expect(fatal).toEqual([]);
  });

  it("gives random Connect, gRPC-Web and plain requests a well-formed HTTP/1.1 answer", async () => {
    const s = await fuzz(["h1-random"], 300);
    expect(s.cases["h1-random"]).toBe(300);
    expect(s.violations).toEqual([]);
    expect(fatal).toEqual([]);
  });

  it("answers or resets every random HTTP/2 request stream", async () => {
    const s = await fuzz(["h2-request"], 300);
    expect(s.cases["h2-request"]).toBe(300);
    expect(s.violations).toEqual([]);
    expect(fatal).toEqual([]);
  });

  it("writes only well-formed frames in reply to random and mutated HTTP/2 frames, and keeps serving", async () => {
    const s = await fuzz(["h2-frames"], 200);
    expect(s.cases["h2-frames"]).toBe(200);
    expect(s.violations).toEqual([]);
    expect(fatal).toEqual([]);
  });

  it("opens a Health/Watch stream for the random gRPC-Web request the one-hour soak reported as hung", async () => {
    // The case, byte for byte: an envelope with flags 0x02 is a message to a
    // gRPC-Web server, so this is a well-formed Watch, and a Watch stays open.
    const req = Buffer.concat([
      Buffer.from(
        "POST /grpc.health.v1.Health/Watch HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/grpc-web+proto\r\n" +
          "Connect-Protocol-Version: 1\r\ncontent-encoding: zstd\r\ntx: %\r\nik-84t75-d: $\r\ne0tg-94l0f: ?\r\n" +
          "Transfer-Encoding: chunked\r\n\r\n3\r\n",
        "latin1",
      ),
      Buffer.from([2, 0, 0]),
      Buffer.from("\r\n2\r\n", "latin1"),
      Buffer.from([0, 0]),
      Buffer.from("\r\n0\r\n\r\n", "latin1"),
    ]);
    const sock = dial(gw.http);
    let data = Buffer.alloc(0);
    const parsed = await new Promise<ReturnType<typeof parseH1Response>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer: ${data.toString("latin1")}`)), 10_000);
      sock.on("data", (b) => {
        data = Buffer.concat([data, b]);
        const p = parseH1Response(data, false, "POST", true);
        if (p.done) {
          clearTimeout(timer);
          resolve(p);
        }
      });
      sock.on("error", reject);
      sock.write(req);
    });
    sock.destroy();
    expect(parsed).toMatchObject({ done: true, response: { status: 200, open: true } });
    // Read as a unary answer, the same bytes are not done: the stream stays open.
    expect(parseH1Response(data, false, "POST", false).done).toBe(false);
    expect(fatal).toEqual([]);
  });

  it("holds no descriptor for the connections the fuzzer abandoned, once they idle out", async () => {
    // Frames that lie about their length, or a preface and nothing else, leave
    // connections the client has dropped; node:http2 alone keeps their sockets.
    let now = fds();
    for (let i = 0; i < 300 && now > baselineFds + 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      now = fds();
    }
    expect(now).toBeLessThanOrEqual(baselineFds + 2);
    expect(fatal).toEqual([]);
  });
});
