// The cheapest possible new-connection Probe client, so the load generator is
// not the bottleneck: one pre-encoded write (connection preface, SETTINGS,
// HEADERS, DATA) on a fresh socket, then a minimal HTTP/2 frame reader. It
// acknowledges the server's SETTINGS, and accepts the answer only when the
// response starts with `:status: 200` (HPACK static index 8, as nghttp2 and
// grpc-go encode it), carries exactly the canned ProbeResponse{ready:true}
// message, and ends with a trailers HEADERS frame (END_STREAM). A gRPC error
// (trailers-only) or a reset counts as an error. probe-client.ts (node:http2,
// full decoding incl. grpc-status) validates each server before the load runs.
import net from "node:net";
import { PROBE_PATH, PROBE_READY_FRAME } from "../lib/grpc.js";
import type { Dial, ProbeResult } from "./probe-client.js";

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream, 5);
  return Buffer.concat([h, payload]);
}

function literal(nameIndex: number, value: string): Buffer {
  // Literal Header Field without Indexing — Indexed Name (RFC 7541 §6.2.2), 4-bit prefix.
  const idx = nameIndex < 15 ? [nameIndex] : [15, nameIndex - 15];
  const v = Buffer.from(value, "latin1");
  return Buffer.from([...idx, v.length, ...v]);
}

function literalNewName(name: string, value: string): Buffer {
  const n = Buffer.from(name, "latin1");
  const v = Buffer.from(value, "latin1");
  return Buffer.from([0, n.length, ...n, v.length, ...v]);
}

const HEADER_BLOCK = Buffer.concat([
  Buffer.from([0x83, 0x86]), // :method POST, :scheme http
  literal(4, PROBE_PATH), // :path
  literal(1, "localhost"), // :authority
  literal(31, "application/grpc"), // content-type
  literalNewName("te", "trailers"),
]);

/** Everything the client sends, in one write. */
export const REQUEST_BYTES = Buffer.concat([
  Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1"),
  frame(4, 0, 0, Buffer.alloc(0)), // SETTINGS (defaults)
  frame(1, 0x4, 1, HEADER_BLOCK), // HEADERS, END_HEADERS, stream 1
  frame(0, 0x1, 1, Buffer.from([0, 0, 0, 0, 0])), // DATA: empty ProbeRequest, END_STREAM
]);
const SETTINGS_ACK = frame(4, 0x1, 0, Buffer.alloc(0));

export function rawProbe(dial: Dial, timeoutMs = 3000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const sock = "socketPath" in dial ? net.connect(dial.socketPath) : net.connect(dial.port, dial.host);
    let done = false;
    let buf: Buffer = Buffer.alloc(0);
    let status200: boolean | null = null;
    let data: Buffer = Buffer.alloc(0);
    const finish = (r: ProbeResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ok: false, error: "timeout" }), timeoutMs);
    sock.on("error", (e) => finish({ ok: false, error: `socket: ${e.message}` }));
    sock.on("close", () => finish({ ok: false, error: "connection closed before the response ended" }));
    sock.on("connect", () => sock.write(REQUEST_BYTES));
    sock.on("data", (chunk: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      while (buf.length >= 9) {
        const len = buf.readUIntBE(0, 3);
        if (buf.length < 9 + len) return;
        const type = buf[3];
        const flags = buf[4];
        const stream = buf.readUInt32BE(5) & 0x7fffffff;
        const payload = buf.subarray(9, 9 + len);
        buf = buf.subarray(9 + len);
        if (type === 4 && !(flags & 1)) sock.write(SETTINGS_ACK);
        else if (type === 7) return finish({ ok: false, error: "GOAWAY" });
        else if (stream !== 1) continue;
        else if (type === 3) return finish({ ok: false, error: `RST_STREAM ${payload.readUInt32BE(0)}` });
        else if (type === 1) {
          if (!(flags & 4)) return finish({ ok: false, error: "CONTINUATION not supported by the bench client" });
          let block = payload;
          if (flags & 0x8) block = block.subarray(1, block.length - block[0]); // PADDED
          if (flags & 0x20) block = block.subarray(5); // PRIORITY
          if (status200 === null) status200 = block[0] === 0x88;
          if (flags & 1) {
            if (!status200) return finish({ ok: false, error: "HTTP status is not 200" });
            if (data.length === 0) return finish({ ok: false, error: "trailers-only response (gRPC error)" });
            if (!data.equals(PROBE_READY_FRAME)) return finish({ ok: false, error: `unexpected response message ${data.toString("hex")}` });
            return finish({ ok: true, ready: true, grpcStatus: "0" });
          }
        } else if (type === 0) {
          let p = payload;
          if (flags & 0x8) p = p.subarray(1, p.length - p[0]);
          data = data.length ? Buffer.concat([data, p]) : Buffer.from(p);
          if (flags & 1) return finish({ ok: false, error: "stream ended without trailers" });
        }
      }
    });
  });
}
