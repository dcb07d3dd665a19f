// Just enough of the WebAssembly binary format to cap a module's memory.
// WebAssembly.Module exposes no way to bound a memory the module defines
// itself, so the cap is written into the binary before compilation: from then
// on memory.grow beyond it fails inside the plugin (AS traps) instead of
// growing the gateway's RSS.

export const WASM_PAGE = 64 * 1024;
const MEMORY_SECTION = 5;

export class WasmFormatError extends Error {}

interface Cursor {
  bytes: Uint8Array;
  pos: number;
}

function readU32(c: Cursor): number {
  let result = 0;
  let shift = 0;
  for (let i = 0; i < 5; i++) {
    if (c.pos >= c.bytes.length) throw new WasmFormatError(`unexpected end of module at byte ${c.pos}`);
    const b = c.bytes[c.pos++]!;
    result += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) {
      if (result > 0xffffffff) throw new WasmFormatError(`LEB128 value too large at byte ${c.pos}`);
      return result;
    }
    shift += 7;
  }
  throw new WasmFormatError(`LEB128 value too long at byte ${c.pos}`);
}

/** Unsigned LEB128, as the binary format writes every count and index. */
export function encodeU32(value: number): number[] {
  const out: number[] = [];
  let v = value >>> 0;
  do {
    let b = v & 0x7f;
    v >>>= 7;
    if (v !== 0) b |= 0x80;
    out.push(b);
  } while (v !== 0);
  return out;
}

export function hasWasmMagic(bytes: Uint8Array): boolean {
  return (
    bytes.length >= 8 &&
    bytes[0] === 0x00 && bytes[1] === 0x61 && bytes[2] === 0x73 && bytes[3] === 0x6d &&
    bytes[4] === 0x01 && bytes[5] === 0x00 && bytes[6] === 0x00 && bytes[7] === 0x00
  );
}

export interface MemoryCapResult {
  bytes: Uint8Array;
  /** Declared minimum and the maximum in force after capping, in pages; null without a memory section. */
  memory: { minPages: number; maxPages: number } | null;
}

export class MemoryTooLargeError extends Error {}

/**
 * Returns a copy of the module with its (single, 32-bit, unshared) memory's
 * maximum set to min(declared max, capPages). Refuses a minimum above the cap.
 * Other sections are copied byte for byte; the compiler validates them later.
 */
export function capMemory(input: Uint8Array, capPages: number): MemoryCapResult {
  if (!hasWasmMagic(input)) throw new WasmFormatError("not a WebAssembly module (bad magic or version)");
  const c: Cursor = { bytes: input, pos: 8 };
  const parts: Uint8Array[] = [input.subarray(0, 8)];
  let memory: MemoryCapResult["memory"] = null;
  while (c.pos < input.length) {
    const start = c.pos;
    const id = input[c.pos++]!;
    const size = readU32(c);
    const payloadStart = c.pos;
    const end = payloadStart + size;
    if (end > input.length) throw new WasmFormatError(`section ${id} runs past the end of the module (truncated file?)`);
    if (id !== MEMORY_SECTION) {
      parts.push(input.subarray(start, end));
      c.pos = end;
      continue;
    }
    const body: Cursor = { bytes: input.subarray(payloadStart, end), pos: 0 };
    const count = readU32(body);
    if (count > 1) throw new WasmFormatError(`module defines ${count} memories; one is allowed`);
    const payload: number[] = encodeU32(count);
    if (count === 1) {
      if (body.pos >= body.bytes.length) throw new WasmFormatError("memory section truncated");
      const flags = body.bytes[body.pos++]!;
      if (flags !== 0x00 && flags !== 0x01) {
        throw new WasmFormatError(`memory limits flags 0x${flags.toString(16)} (shared or 64-bit memory) are not supported`);
      }
      const min = readU32(body);
      const declaredMax = flags === 0x01 ? readU32(body) : Infinity;
      if (min > capPages) {
        throw new MemoryTooLargeError(`initial memory ${min} pages exceeds the cap of ${capPages} pages`);
      }
      const max = Math.min(declaredMax, capPages);
      memory = { minPages: min, maxPages: max };
      payload.push(0x01, ...encodeU32(min), ...encodeU32(max));
    }
    if (body.pos !== body.bytes.length) throw new WasmFormatError("memory section has trailing bytes");
    parts.push(Uint8Array.of(MEMORY_SECTION, ...encodeU32(payload.length), ...payload));
    c.pos = end;
  }
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return { bytes: out, memory };
}
