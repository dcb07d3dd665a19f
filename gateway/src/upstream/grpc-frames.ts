// The gRPC length-prefixed message: 1 byte compressed flag, 4 bytes big-endian
// length, then the message. Only the buffered interceptions parse frames; the
// plain proxy never looks inside the body.

export interface GrpcFrame {
  compressed: boolean;
  data: Buffer;
}

export function encodeFrame(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** Splits a complete body into frames; null when it is truncated or malformed. */
export function decodeFrames(body: Buffer): GrpcFrame[] | null {
  const frames: GrpcFrame[] = [];
  let off = 0;
  while (off < body.length) {
    if (body.length - off < 5) return null;
    const flag = body[off];
    if (flag > 1) return null;
    const len = body.readUInt32BE(off + 1);
    if (body.length - off - 5 < len) return null;
    frames.push({ compressed: flag === 1, data: body.subarray(off + 5, off + 5 + len) });
    off += 5 + len;
  }
  return frames;
}

/** The single uncompressed message of a unary body, or undefined. */
export function singleMessage(body: Buffer): Buffer | undefined {
  const frames = decodeFrames(body);
  if (!frames || frames.length !== 1 || frames[0].compressed) return undefined;
  return frames[0].data;
}
