// The bytes of a CSI Probe over gRPC, and of its answer.

export const PROBE_PATH = "/csi.v1.Identity/Probe";
export const HEALTH_CHECK_PATH = "/grpc.health.v1.Health/Check";

/** Length-prefixed message: uncompressed, zero length (ProbeRequest is empty). */
export const PROBE_REQUEST_FRAME = Buffer.from([0, 0, 0, 0, 0]);

/** ProbeResponse{ready: BoolValue{value: true}}. */
export const PROBE_READY_MESSAGE = Buffer.from([0x0a, 0x02, 0x08, 0x01]);
export const PROBE_READY_FRAME = grpcFrame(PROBE_READY_MESSAGE);

export function grpcFrame(message: Uint8Array): Buffer {
  const b = Buffer.alloc(5 + message.length);
  b.writeUInt32BE(message.length, 1);
  b.set(message, 5);
  return b;
}

/** Splits a gRPC body into messages; throws on compressed or truncated frames. */
export function parseGrpcFrames(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let off = 0;
  while (off < body.length) {
    if (body.length - off < 5) throw new Error("truncated gRPC frame header");
    if (body[off] !== 0) throw new Error("compressed gRPC frame");
    const len = body.readUInt32BE(off + 1);
    if (off + 5 + len > body.length) throw new Error("truncated gRPC frame");
    out.push(body.subarray(off + 5, off + 5 + len));
    off += 5 + len;
  }
  return out;
}

/**
 * Decodes ProbeResponse.ready: true/false, or undefined when the field is absent
 * (CSI: absent means ready). Only what this message can hold.
 */
export function decodeProbeReady(msg: Buffer): boolean | undefined {
  let ready: boolean | undefined;
  let off = 0;
  const varint = (): number => {
    let v = 0;
    let shift = 0;
    for (;;) {
      if (off >= msg.length) throw new Error("truncated varint");
      const byte = msg[off++];
      v += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return v;
      shift += 7;
    }
  };
  while (off < msg.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire === 2) {
      const len = varint();
      const sub = msg.subarray(off, off + len);
      off += len;
      if (field === 1) {
        ready = false; // BoolValue with default value
        let o = 0;
        while (o < sub.length) {
          const t = sub[o++];
          if (t === 0x08) ready = sub[o++] !== 0;
          else throw new Error("unexpected field in BoolValue");
        }
      }
    } else if (wire === 0) varint();
    else throw new Error(`unexpected wire type ${wire}`);
  }
  return ready;
}
