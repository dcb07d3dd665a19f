// Flat storage behind YAML `Value`s. The reader records every node as a few
// integers (kind, key range, scalar range or child block, line) in shared
// arrays instead of allocating an object, a key string and a scalar string
// per entry: a 1,024-NI `net show -v` has ~20,000 nodes and plugins look at a
// handful of them. Keys are compared in place against the wanted key and
// scalars become strings only when read (`Value.text()` / `getText`).
//
// Node layout (STRIDE i32s):
//   [0] kind (value.ts Kind: Null, String, Array, Object)
//   [1] key start  (-1: no key)   [2] key end   (source offsets, key trimmed)
//   [3] String: scalar start; containers: first child slot in `kids`
//   [4] String: scalar end;   containers: child count
//   [5] 1-based source line
// A plain scalar's range is already trimmed of blanks and comments; a quoted
// one starts at its quote and runs to the end of the line (decoded on read).

import { hexValue, joinStrings, slice } from "./strings";

export const STRIDE: i32 = 6;


const K_STRING: i32 = 3; // Kind.String (value.ts imports this file)

export class YamlTree {
  src: string;
  base: usize;
  nodes: StaticArray<i32>;
  count: i32 = 0;
  /** Child node indices, each container's children contiguous. */
  kids: StaticArray<i32>;
  kidsLen: i32 = 0;

  constructor(src: string, capacity: i32) {
    this.src = src;
    this.base = changetype<usize>(src);
    if (capacity < 4) capacity = 4;
    this.nodes = new StaticArray<i32>(capacity * STRIDE);
    this.kids = new StaticArray<i32>(capacity);
  }

  // @ts-ignore: decorator
  @inline ch(i: i32): i32 {
    return <i32>load<u16>(this.base + (<usize>i << 1));
  }

  // Raw loads and stores rather than unchecked(): StaticArray's unchecked
  // accessors are calls unless Binaryen inlines them, which it does not when
  // optimising for size.
  // @ts-ignore: decorator
  @inline f(node: i32, field: i32): i32 {
    return load<i32>(changetype<usize>(this.nodes) + (<usize>(node * STRIDE + field) << 2));
  }

  // @ts-ignore: decorator
  @inline setF(node: i32, field: i32, v: i32): void {
    store<i32>(changetype<usize>(this.nodes) + (<usize>(node * STRIDE + field) << 2), v);
  }

  // @ts-ignore: decorator
  @inline kid(slot: i32): i32 {
    return load<i32>(changetype<usize>(this.kids) + (<usize>slot << 2));
  }

  add(kind: i32, a: i32, b: i32, line: i32): i32 {
    const k = this.count;
    let cap = this.nodes.length;
    if ((k + 1) * STRIDE > cap) {
      const grown = new StaticArray<i32>(cap * 2);
      memory.copy(changetype<usize>(grown), changetype<usize>(this.nodes), <usize>cap << 2);
      this.nodes = grown;
    }
    const p = changetype<usize>(this.nodes) + (<usize>(k * STRIDE) << 2);
    store<i32>(p, kind);
    store<i32>(p, -1, 4);
    store<i32>(p, -1, 8);
    store<i32>(p, a, 12);
    store<i32>(p, b, 16);
    store<i32>(p, line, 20);
    this.count = k + 1;
    return k;
  }

  /** Appends `len` child indices from `from[start…]`; returns their first slot. */
  addKids(from: StaticArray<i32>, start: i32, len: i32): i32 {
    const at = this.kidsLen;
    let cap = this.kids.length;
    if (at + len > cap) {
      while (at + len > cap) cap *= 2;
      const grown = new StaticArray<i32>(cap);
      memory.copy(changetype<usize>(grown), changetype<usize>(this.kids), <usize>at << 2);
      this.kids = grown;
    }
    const dst = changetype<usize>(this.kids) + (<usize>at << 2);
    const src = changetype<usize>(from) + (<usize>start << 2);
    // Most containers have one to three children, where a memory.copy call
    // costs more than the copy.
    if (len <= 8) {
      for (let i = 0; i < len; i++) store<i32>(dst + (<usize>i << 2), load<i32>(src + (<usize>i << 2)));
    } else {
      memory.copy(dst, src, <usize>len << 2);
    }
    this.kidsLen = at + len;
    return at;
  }

  // @ts-ignore: decorator
  @inline kind(node: i32): i32 {
    return this.f(node, 0);
  }

  // @ts-ignore: decorator
  @inline line(node: i32): i32 {
    return this.f(node, 5);
  }

  /** Children of a container; 0 for scalars. */
  // @ts-ignore: decorator
  @inline length(node: i32): i32 {
    const k = this.f(node, 0);
    return k == 4 || k == 5 ? this.f(node, 4) : 0;
  }

  /** i-th child node, or -1. */
  // @ts-ignore: decorator
  @inline child(node: i32, i: i32): i32 {
    if (i < 0 || i >= this.length(node)) return -1;
    return this.kid(this.f(node, 3) + i);
  }

  /** Child whose key equals `key` (the last one on duplicates), or -1. */
  find(node: i32, key: string): i32 {
    const n = this.length(node);
    if (n == 0 || this.f(node, 0) != 5) return -1;
    const first = this.f(node, 3);
    const klen = key.length;
    const kb = changetype<usize>(key);
    for (let i = n - 1; i >= 0; i--) {
      const c = this.kid(first + i);
      if (this.keyIs(c, kb, klen)) return c;
    }
    return -1;
  }

  /** Whether node c's key is the klen units at kb; plain keys are compared in place. */
  private keyIs(c: i32, kb: usize, klen: i32): bool {
    const ks = this.f(c, 1);
    if (ks < 0) return false;
    const q = this.ch(ks);
    if (q == 34 || q == 39) return this.keyText(c) == changetype<string>(kb);
    return this.f(c, 2) - ks == klen && sameUnits(this.base + (<usize>ks << 1), kb, klen);
  }

  /** Whether any mapping entry anywhere in the tree has key `key`. */
  hasKeyAnywhere(key: string): bool {
    const klen = key.length;
    const kb = changetype<usize>(key);
    const n = this.count;
    for (let c = 0; c < n; c++) if (this.keyIs(c, kb, klen)) return true;
    return false;
  }

  keyText(node: i32): string {
    const ks = this.f(node, 1);
    if (ks < 0) return "";
    const ke = this.f(node, 2);
    return this.decode(ks, ke);
  }

  /** Scalar text of a String node ("" for anything else). */
  text(node: i32): string {
    if (this.f(node, 0) != K_STRING) return "";
    return this.decode(this.f(node, 3), this.f(node, 4));
  }

  /** Whether String node's text equals `want`, without building it when plain. */
  textIs(node: i32, want: string): bool {
    if (this.f(node, 0) != K_STRING) return false;
    const p = this.f(node, 3);
    const e = this.f(node, 4);
    const q = this.ch(p);
    if (q == 34 || q == 39) return this.decode(p, e) == want;
    const len = e - p;
    return len == want.length && sameUnits(this.base + (<usize>p << 1), changetype<usize>(want), len);
  }

  private decode(p: i32, e: i32): string {
    if (e <= p) return "";
    const s = this.src;
    const c = this.ch(p);
    if (c == 34) return this.doubleQuoted(p, e);
    if (c == 39) {
      const q = quotedEnd(this.base, p, e);
      const inner = s.substring(p + 1, q < 0 ? e : q - 1);
      return inner.includes("''") ? inner.replaceAll("''", "'") : inner;
    }
    return slice(s, p, e);
  }

  /** Unterminated quotes are tolerated: the rest of the line is the value. */
  private doubleQuoted(p: i32, e: i32): string {
    const s = this.src;
    const parts = new Array<string>();
    let seg = p + 1;
    let i = p + 1;
    while (i < e) {
      const c = this.ch(i);
      if (c == 34) break;
      if (c != 92 || i + 1 >= e) {
        i++;
        continue;
      }
      if (i > seg) parts.push(s.substring(seg, i));
      const x = this.ch(i + 1);
      i += 2;
      if (x == 110) parts.push("\n");
      else if (x == 116) parts.push("\t");
      else if (x == 114) parts.push("\r");
      else if (x == 48) parts.push("\0");
      else if (x == 120 || x == 117) {
        const digits = x == 120 ? 2 : 4;
        let code = 0;
        let okHex = i + digits <= e;
        for (let d = 0; okHex && d < digits; d++) {
          const h = hexValue(this.ch(i + d));
          if (h < 0) okHex = false;
          else code = (code << 4) | h;
        }
        if (okHex) {
          parts.push(String.fromCharCode(code));
          i += digits;
        } else parts.push(String.fromCharCode(x));
      } else parts.push(String.fromCharCode(x)); // \" \\ \/ and unknowns
      seg = i;
    }
    if (i > seg) parts.push(s.substring(seg, i < e ? i : e));
    if (parts.length == 1) return parts[0];
    return joinStrings(parts);
  }
}

/**
 * Whether n UTF-16 units at a and b are equal. Keys and scalars compared here
 * are a few units long, where a call to memory.compare costs more than this.
 */
// @ts-ignore: decorator
@inline function sameUnits(a: usize, b: usize, n: i32): bool {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    if (load<u64>(a + (<usize>i << 1)) != load<u64>(b + (<usize>i << 1))) return false;
  }
  for (; i < n; i++) {
    if (load<u16>(a + (<usize>i << 1)) != load<u16>(b + (<usize>i << 1))) return false;
  }
  return true;
}

/** Offset just past the closing quote of the scalar opening at p, or -1. */
export function quotedEnd(base: usize, p: i32, e: i32): i32 {
  const q = <i32>load<u16>(base + (<usize>p << 1));
  let i = p + 1;
  while (i < e) {
    const c = <i32>load<u16>(base + (<usize>i << 1));
    if (q == 34 && c == 92) {
      i += 2;
      continue;
    }
    if (c == q) {
      if (q == 39 && i + 1 < e && <i32>load<u16>(base + (<usize>(i + 1) << 1)) == 39) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return -1;
}
