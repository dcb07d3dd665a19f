// Just enough HTTP/2 wire format to speak to a server from a raw socket:
// frames, a literal-only HPACK encoder, and a frame reader that checks the
// server's framing. Used by the edge fuzzer, which must be able to send what
// no well-behaved client library would, and by the connection flood and the
// listener tests, which hold HTTP/2 connections open without a client library.
import type { Socket } from "node:net";

export const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export const FRAME = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;

/** RFC 9113 §4.1: 24-bit length, type, flags, 31-bit stream id. `declaredLength` lets a fuzzer lie. */
export function frame(type: number, flags: number, stream: number, payload: Uint8Array, declaredLength?: number): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE((declaredLength ?? payload.length) & 0xffffff, 0, 3);
  h[3] = type & 0xff;
  h[4] = flags & 0xff;
  h.writeUInt32BE(stream >>> 0, 5);
  return Buffer.concat([h, payload]);
}

/** HPACK integer (RFC 7541 §5.1) with an N-bit prefix and the given high bits of the first byte. */
export function hpackInt(value: number, prefixBits: number, firstByteHigh = 0): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [firstByteHigh | value];
  const out = [firstByteHigh | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}

function hpackString(s: Uint8Array): number[] {
  return [...hpackInt(s.length, 7, 0), ...s];
}

/** A header block of literals without indexing, new names (§6.2.2): no dynamic table to keep in sync. */
export function headerBlock(headers: ReadonlyArray<readonly [string | Uint8Array, string | Uint8Array]>): Buffer {
  const bytes: number[] = [];
  const b = (x: string | Uint8Array) => (typeof x === "string" ? Buffer.from(x, "latin1") : x);
  for (const [name, value] of headers) bytes.push(0x00, ...hpackString(b(name)), ...hpackString(b(value)));
  return Buffer.from(bytes);
}

export interface ServerFrame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/**
 * Splits what the server sent into frames. A frame longer than the largest
 * frame size we allowed (the default 16,384: we never raise it) or a stream id
 * with the reserved bit set is malformed output.
 */
export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  readonly frames: ServerFrame[] = [];
  malformed: string | undefined;
  constructor(private readonly maxFrameSize = 16_384) {}

  push(chunk: Buffer): ServerFrame[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const got: ServerFrame[] = [];
    while (this.buf.length >= 9 && !this.malformed) {
      const len = this.buf.readUIntBE(0, 3);
      if (len > this.maxFrameSize) {
        this.malformed = `frame of ${len} bytes exceeds SETTINGS_MAX_FRAME_SIZE ${this.maxFrameSize}`;
        break;
      }
      if (this.buf.length < 9 + len) break;
      const raw = this.buf.readUInt32BE(5);
      if (raw & 0x80000000) this.malformed = "reserved stream-id bit set";
      const f = { type: this.buf[3], flags: this.buf[4], stream: raw & 0x7fffffff, payload: this.buf.subarray(9, 9 + len) };
      this.buf = this.buf.subarray(9 + len);
      this.frames.push(f);
      got.push(f);
    }
    return got;
  }

  /** Bytes left over that are not a whole frame (at connection close: truncated output). */
  get pending(): number {
    return this.buf.length;
  }
}

/**
 * Answers the server's PINGs on a raw client socket: a client that did not
 * would be cut as not speaking HTTP/2. `onPing` sees each PING answered.
 */
export function ackPings(socket: Socket, onPing?: (payload: Buffer) => void): void {
  const reader = new FrameReader();
  socket.on("data", (chunk: Buffer) => {
    for (const f of reader.push(chunk)) {
      if (f.type !== FRAME.PING || f.flags & FLAG.ACK || f.payload.length !== 8) continue;
      onPing?.(f.payload);
      socket.write(frame(FRAME.PING, FLAG.ACK, 0, f.payload));
    }
    // A flood holds its connections for hours: keep no frames it will never read.
    reader.frames.length = 0;
  });
}
