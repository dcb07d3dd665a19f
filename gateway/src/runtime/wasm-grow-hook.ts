// Makes a refused memory.grow visible to the host.
//
// A plugin that allocates past --plugin-memory sees memory.grow return -1 and
// traps in its allocator (AssemblyScript: `unreachable`), which tells the
// operator nothing. The memory size at the trap does not tell either: one
// 100 MB request fails on a nearly empty memory. So every `memory.grow` in
// the module is routed through one appended function that records the number
// of pages it was refused in an appended, exported global. After a trap the
// sandbox reads the global and can name the cap.
//
// Nothing is renumbered: the function, type and global are appended after
// the existing ones, and the code change is `memory.grow 0` → `call $hook`.
// Instructions are decoded only far enough to find instruction boundaries;
// a module using an encoding this decoder does not know (GC types,
// try_table, …) is left as it is, and its traps stay plain PluginTrap.

import { wasm } from "./wasm-api.js";
import { encodeU32 as leb } from "./wasm-binary.js";

export const GROW_REFUSED_EXPORT = "__probegate_grow_refused";

const SECTION = { type: 1, import: 2, function: 3, global: 6, export: 7, code: 10 } as const;
/** The order non-custom sections must appear in (the tag section, 13, sits before globals). */
const SECTION_ORDER = [1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11];

class Unsupported extends Error {}

class Reader {
  pos: number;
  constructor(
    readonly bytes: Uint8Array,
    start = 0,
    readonly end = bytes.length,
  ) {
    this.pos = start;
  }
  byte(): number {
    if (this.pos >= this.end) throw new Unsupported("unexpected end");
    return this.bytes[this.pos++]!;
  }
  u32(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
      if (shift > 35) throw new Unsupported("LEB128 too long");
    }
  }
  /** Skips a signed LEB128 of any width (s32, s33, s64). */
  sleb(): void {
    for (let i = 0; i < 10; i++) if ((this.byte() & 0x80) === 0) return;
    throw new Unsupported("LEB128 too long");
  }
  skip(n: number): void {
    if (this.pos + n > this.end) throw new Unsupported("unexpected end");
    this.pos += n;
  }
}

function section(id: number, payload: number[] | Uint8Array): Uint8Array {
  const p = payload instanceof Uint8Array ? payload : Uint8Array.from(payload);
  return concat([Uint8Array.of(id, ...leb(p.length)), p]);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

/** A vector section with `extra` entries appended (its count rewritten). */
function appendToVector(payload: Uint8Array | undefined, extra: number[]): { payload: Uint8Array; countBefore: number } {
  if (!payload) return { payload: Uint8Array.from([1, ...extra]), countBefore: 0 };
  const r = new Reader(payload);
  const count = r.u32();
  return { payload: concat([Uint8Array.from(leb(count + 1)), payload.subarray(r.pos), Uint8Array.from(extra)]), countBefore: count };
}

function valtype(r: Reader): void {
  const t = r.byte();
  // Typed references (GC proposal) carry a heap type; not needed by any plugin toolchain here.
  if (t === 0x63 || t === 0x64) throw new Unsupported("typed reference");
}

function blocktype(r: Reader): void {
  const b = r.bytes[r.pos];
  if (b === 0x63 || b === 0x64) throw new Unsupported("typed reference block");
  r.sleb();
}

function memarg(r: Reader): void {
  const align = r.u32();
  // Bit 6 announces an explicit memory index (multi-memory).
  if (align & 0x40) r.u32();
  r.u32();
}

/**
 * Walks one function body's instructions and returns the offsets (relative to
 * the body) of each `memory.grow 0`.
 */
function growSites(r: Reader): number[] {
  const sites: number[] = [];
  const start = r.pos;
  const localGroups = r.u32();
  for (let i = 0; i < localGroups; i++) {
    r.u32();
    valtype(r);
  }
  while (r.pos < r.end) {
    const at = r.pos;
    const op = r.byte();
    if (op === 0x40) {
      if (r.u32() !== 0) throw new Unsupported("memory.grow on a second memory");
      if (r.pos - at !== 2) throw new Unsupported("padded memory index");
      sites.push(at - start);
      continue;
    }
    if (op <= 0x01 || op === 0x05 || op === 0x0b || op === 0x0f || op === 0x0a || op === 0x19 || op === 0x1a || op === 0x1b) continue;
    if (op >= 0x02 && op <= 0x04) blocktype(r);
    else if (op === 0x06) blocktype(r);
    else if (op >= 0x07 && op <= 0x09) r.u32();
    else if (op >= 0x0c && op <= 0x0d) r.u32();
    else if (op === 0x0e) {
      const n = r.u32();
      for (let i = 0; i <= n; i++) r.u32();
    } else if (op === 0x10 || op === 0x12 || op === 0x14 || op === 0x15 || op === 0x18) r.u32();
    else if (op === 0x11 || op === 0x13) {
      r.u32();
      r.u32();
    } else if (op === 0x1c) {
      const n = r.u32();
      for (let i = 0; i < n; i++) valtype(r);
    } else if (op >= 0x20 && op <= 0x26) r.u32();
    else if (op >= 0x28 && op <= 0x3e) memarg(r);
    else if (op === 0x3f) r.u32();
    else if (op === 0x41 || op === 0x42) r.sleb();
    else if (op === 0x43) r.skip(4);
    else if (op === 0x44) r.skip(8);
    else if (op >= 0x45 && op <= 0xc4) continue;
    else if (op === 0xd0) blocktype(r);
    else if (op === 0xd1 || op === 0xd3 || op === 0xd4) continue;
    else if (op === 0xd2 || op === 0xd5 || op === 0xd6) r.u32();
    else if (op === 0xfc) miscOp(r);
    else if (op === 0xfd) simdOp(r);
    else if (op === 0xfe) atomicOp(r);
    else throw new Unsupported(`opcode 0x${op.toString(16)}`);
  }
  return sites;
}

function miscOp(r: Reader): void {
  const sub = r.u32();
  if (sub <= 7) return;
  if (sub === 8 || sub === 10 || sub === 12 || sub === 14) {
    r.u32();
    r.u32();
  } else if (sub === 9 || sub === 11 || sub === 13 || (sub >= 15 && sub <= 17)) r.u32();
  else throw new Unsupported(`0xfc ${sub}`);
}

function simdOp(r: Reader): void {
  const sub = r.u32();
  if (sub <= 11 || sub === 92 || sub === 93) memarg(r);
  else if (sub === 12 || sub === 13) r.skip(16);
  else if (sub >= 21 && sub <= 34) r.skip(1);
  else if (sub >= 84 && sub <= 91) {
    memarg(r);
    r.skip(1);
  }
}

function atomicOp(r: Reader): void {
  const sub = r.u32();
  if (sub === 3) r.skip(1);
  else memarg(r);
}

export interface GrowHookResult {
  bytes: Uint8Array;
  /** False when the module never grows memory or uses an encoding left alone. */
  hooked: boolean;
}

/** Returns the module with every `memory.grow` routed through the recording hook. */
export function hookMemoryGrow(input: Uint8Array): GrowHookResult {
  // Only a valid module is rewritten: an invalid one that names the function or
  // global about to be appended must not become valid by it (the compiler then
  // refuses it with its own message).
  if (!wasm.validate(input)) return { bytes: input, hooked: false };
  try {
    return rewrite(input);
  } catch (e) {
    if (e instanceof Unsupported) return { bytes: input, hooked: false };
    throw e;
  }
}

function rewrite(input: Uint8Array): GrowHookResult {
  const r = new Reader(input, 8);
  const sections: Array<{ id: number; payload: Uint8Array }> = [];
  while (r.pos < input.length) {
    const id = r.byte();
    const size = r.u32();
    const payload = input.subarray(r.pos, r.pos + size);
    if (payload.length !== size) throw new Unsupported("truncated section");
    sections.push({ id, payload });
    r.pos += size;
  }
  const find = (id: number) => sections.find((s) => s.id === id);
  const code = find(SECTION.code);
  if (!code) return { bytes: input, hooked: false };

  let importedFuncs = 0;
  let importedGlobals = 0;
  const imports = find(SECTION.import);
  if (imports) {
    const ir = new Reader(imports.payload);
    const n = ir.u32();
    for (let i = 0; i < n; i++) {
      ir.skip(ir.u32());
      ir.skip(ir.u32());
      const kind = ir.byte();
      if (kind === 0x00) {
        importedFuncs++;
        ir.u32();
      } else if (kind === 0x03) {
        importedGlobals++;
        valtype(ir);
        ir.byte();
      } else throw new Unsupported("non-function import");
    }
  }
  const exportsSection = find(SECTION.export);
  if (exportsSection && new TextDecoder().decode(exportsSection.payload).includes(GROW_REFUSED_EXPORT)) {
    throw new Unsupported("export name taken");
  }

  const definedFuncs = find(SECTION.function) ? new Reader(find(SECTION.function)!.payload).u32() : 0;
  const hookIndex = importedFuncs + definedFuncs;
  const cr = new Reader(code.payload);
  const bodies = cr.u32();
  const newBodies: Uint8Array[] = [];
  let sitesTotal = 0;
  const call = Uint8Array.from([0x10, ...leb(hookIndex)]);
  for (let i = 0; i < bodies; i++) {
    const size = cr.u32();
    const bodyStart = cr.pos;
    const body = code.payload.subarray(bodyStart, bodyStart + size);
    const sites = growSites(new Reader(code.payload, bodyStart, bodyStart + size));
    cr.pos = bodyStart + size;
    sitesTotal += sites.length;
    if (sites.length === 0) {
      newBodies.push(concat([Uint8Array.from(leb(size)), body]));
      continue;
    }
    const parts: Uint8Array[] = [];
    let from = 0;
    for (const at of sites) {
      parts.push(body.subarray(from, at), call);
      from = at + 2;
    }
    parts.push(body.subarray(from));
    const rewritten = concat(parts);
    newBodies.push(concat([Uint8Array.from(leb(rewritten.length)), rewritten]));
  }
  if (sitesTotal === 0) return { bytes: input, hooked: false };

  const types = appendToVector(find(SECTION.type)?.payload, [0x60, 1, 0x7f, 1, 0x7f]);
  const funcs = appendToVector(find(SECTION.function)?.payload, leb(types.countBefore));
  const globals = appendToVector(find(SECTION.global)?.payload, [0x7f, 0x01, 0x41, 0x00, 0x0b]);
  const globalIndex = importedGlobals + globals.countBefore;
  const name = new TextEncoder().encode(GROW_REFUSED_EXPORT);
  const exportsNew = appendToVector(exportsSection?.payload, [...leb(name.length), ...name, 0x03, ...leb(globalIndex)]);
  // (param i32) (result i32) (local i32):
  //   local.get 0; memory.grow 0; local.tee 1; i32.const -1; i32.eq
  //   if; local.get 0; global.set G; end; local.get 1
  const hookCode = [0x01, 0x01, 0x7f, 0x20, 0x00, 0x40, 0x00, 0x22, 0x01, 0x41, 0x7f, 0x46, 0x04, 0x40, 0x20, 0x00, 0x24, ...leb(globalIndex), 0x0b, 0x20, 0x01, 0x0b];
  newBodies.push(Uint8Array.from([...leb(hookCode.length), ...hookCode]));
  const codeNew = concat([Uint8Array.from(leb(bodies + 1)), ...newBodies]);

  const replaced = new Map<number, Uint8Array>([
    [SECTION.type, types.payload],
    [SECTION.function, funcs.payload],
    [SECTION.global, globals.payload],
    [SECTION.export, exportsNew.payload],
    [SECTION.code, codeNew],
  ]);
  const out: Uint8Array[] = [input.subarray(0, 8)];
  const rank = (id: number) => SECTION_ORDER.indexOf(id);
  const pending = [...replaced.keys()].filter((id) => !find(id)).sort((a, b) => rank(a) - rank(b));
  for (const s of sections) {
    // Sections this module lacks go in before the first section that must follow them.
    while (s.id !== 0 && pending.length > 0 && rank(pending[0]!) < rank(s.id)) {
      const id = pending.shift()!;
      out.push(section(id, replaced.get(id)!));
    }
    out.push(section(s.id, replaced.get(s.id) ?? s.payload));
  }
  for (const id of pending) out.push(section(id, replaced.get(id)!));
  return { bytes: concat(out), hooked: true };
}
