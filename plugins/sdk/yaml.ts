// Reader for the block-YAML subset lnetctl prints. It works on character
// offsets into the original text (no per-line substrings) because a 1,024-NI
// `net show -v` is tens of thousands of lines and must parse in well under a
// millisecond. Lines that fit no structure (stderr noise, tab indentation,
// stray text) are skipped and counted so callers can decide how strict to be.
//
// Supported: block mappings, block sequences (items under or at the key's
// indentation), `- key: v` items with any padding after the dash, plain,
// single- and double-quoted scalars, comments, CRLF, trailing blanks,
// `---`/`...` markers. Flow collections (`[a, b]`, `{}`) are kept as plain text.

import { Kind, Value } from "./value";
import { clip, hexValue, lineEnd } from "./strings";

/** Indentation deeper than this is skipped instead of recursed into. */
export const YAML_MAX_DEPTH: i32 = 48;

export class YamlDoc {
  /** Null when the text held no YAML structure at all. */
  root: Value | null = null;
  /** Lines skipped because they fit no structure. */
  stray: i32 = 0;
  /** The first skipped line (clipped), for messages. */
  firstStray: string = "";
  firstStrayLine: i32 = 0;
}

export function parseYaml(text: string): YamlDoc {
  const r = new YamlReader(text);
  return r.run();
}

class YamlReader {
  src: string;
  // Raw UTF-16 access: every index below is already bounded by a line's
  // [start, end), so charCodeAt's range check is pure overhead in the hot loops.
  base: usize;
  doc: YamlDoc = new YamlDoc();
  // Per structural line: content start offset, content end offset (trailing
  // blanks and CR removed), indentation column, 1-based line number.
  cs: StaticArray<i32>;
  ce: StaticArray<i32>;
  ind: StaticArray<i32>;
  num: StaticArray<i32>;
  n: i32 = 0;
  cur: i32 = 0;

  constructor(src: string) {
    this.src = src;
    const base = changetype<usize>(src);
    this.base = base;
    let lines = 1;
    const n = src.length;
    for (let i = 0; i < n; i++) if (load<u16>(base + (<usize>i << 1)) == 10) lines++;
    this.cs = new StaticArray<i32>(lines);
    this.ce = new StaticArray<i32>(lines);
    this.ind = new StaticArray<i32>(lines);
    this.num = new StaticArray<i32>(lines);
  }

  @inline ch(i: i32): i32 {
    return <i32>load<u16>(this.base + (<usize>i << 1));
  }

  run(): YamlDoc {
    this.index();
    // Leading noise (a warning printed before the document) must not become
    // the document's root scalar.
    while (this.cur < this.n && !this.isItem(this.cur) && this.keyColon(this.cur) < 0) {
      this.stray(this.cur);
      this.cur++;
    }
    if (this.cur < this.n) this.doc.root = this.parseNode(0);
    while (this.cur < this.n) {
      this.stray(this.cur);
      this.cur++;
    }
    return this.doc;
  }

  private index(): void {
    const s = this.src;
    const len = s.length;
    let lineNo = 0;
    let start = 0;
    while (start <= len) {
      const nl = lineEnd(s, start);
      lineNo++;
      this.addLine(start, nl, lineNo);
      start = nl + 1;
    }
  }

  private addLine(start: i32, end: i32, lineNo: i32): void {
    const s = this.src;
    while (end > start) {
      const c = this.ch(end - 1);
      if (c != 32 && c != 9 && c != 13) break;
      end--;
    }
    let p = start;
    while (p < end && this.ch(p) == 32) p++;
    if (p == end) return; // blank
    const c = this.ch(p);
    if (c == 9) {
      // YAML forbids tabs in indentation; treat such lines as noise.
      this.doc.stray++;
      if (this.doc.stray == 1) {
        this.doc.firstStray = clip(s.substring(start, end).trim(), 120);
        this.doc.firstStrayLine = lineNo;
      }
      return;
    }
    if (c == 35) return; // comment
    if (p == start && end - p >= 3) {
      const m = this.ch(p);
      const isMarker = (m == 45 || m == 46) && this.ch(p + 1) == m && this.ch(p + 2) == m;
      if (isMarker && (end - p == 3 || this.ch(p + 3) == 32)) return;
      if (c == 37) return; // %YAML directive
    }
    const k = this.n;
    unchecked(this.cs[k] = p);
    unchecked(this.ce[k] = end);
    unchecked(this.ind[k] = p - start);
    unchecked(this.num[k] = lineNo);
    this.n = k + 1;
  }

  private stray(k: i32): void {
    this.doc.stray++;
    if (this.doc.stray == 1) {
      this.doc.firstStray = clip(this.src.substring(unchecked(this.cs[k]), unchecked(this.ce[k])), 120);
      this.doc.firstStrayLine = unchecked(this.num[k]);
    }
  }

  private isItem(k: i32): bool {
    const p = unchecked(this.cs[k]);
    if (this.ch(p) != 45) return false; // -
    return p + 1 == unchecked(this.ce[k]) || this.ch(p + 1) == 32;
  }

  /**
   * Offset of the colon ending a mapping key on line k, or -1. A key ends at
   * the first ": " (or a final ":"), so IPv6 addresses and `descr: a: b`
   * values stay intact.
   */
  private keyColon(k: i32): i32 {
    const s = this.src;
    const p = unchecked(this.cs[k]);
    const e = unchecked(this.ce[k]);
    const c = this.ch(p);
    if (c == 34 || c == 39) {
      const q = this.quotedEnd(p, e);
      if (q < 0) return -1;
      let j = q;
      while (j < e && this.ch(j) == 32) j++;
      if (j < e && this.ch(j) == 58 && (j + 1 == e || this.ch(j + 1) == 32)) return j;
      return -1;
    }
    if (c == 91 || c == 123 || c == 45 && this.isItem(k)) return -1;
    for (let i = p; i < e; i++) {
      if (this.ch(i) == 58 && (i + 1 == e || this.ch(i + 1) == 32)) {
        return i == p ? -1 : i;
      }
    }
    return -1;
  }

  /** Offset just past the closing quote of the scalar opening at p, or -1. */
  private quotedEnd(p: i32, e: i32): i32 {
    const s = this.src;
    const q = this.ch(p);
    let i = p + 1;
    while (i < e) {
      const c = this.ch(i);
      if (q == 34 && c == 92) {
        i += 2;
        continue;
      }
      if (c == q) {
        if (q == 39 && i + 1 < e && this.ch(i + 1) == 39) {
          i += 2;
          continue;
        }
        return i + 1;
      }
      i++;
    }
    return -1;
  }

  private parseNode(depth: i32): Value {
    const k = this.cur;
    if (depth > YAML_MAX_DEPTH) return this.skipBlock(unchecked(this.ind[k]));
    if (this.isItem(k)) return this.parseSeq(unchecked(this.ind[k]), depth);
    if (this.keyColon(k) >= 0) return this.parseMap(unchecked(this.ind[k]), depth);
    const v = this.scalar(unchecked(this.cs[k]), unchecked(this.ce[k]));
    v.line = unchecked(this.num[k]);
    this.cur++;
    return v;
  }

  private skipBlock(col: i32): Value {
    this.stray(this.cur);
    this.cur++;
    while (this.cur < this.n && unchecked(this.ind[this.cur]) >= col) {
      this.stray(this.cur);
      this.cur++;
    }
    return Value.newNull();
  }

  private parseMap(col: i32, depth: i32): Value {
    const m = Value.newObject();
    m.line = unchecked(this.num[this.cur]);
    while (this.cur < this.n) {
      const k = this.cur;
      const c = unchecked(this.ind[k]);
      if (c < col) break;
      const colon = c == col ? this.keyColon(k) : -1;
      if (colon < 0) {
        // Deeper text with no owner, a sequence item where keys belong, or
        // plain text: none of it is lnetctl structure.
        this.stray(k);
        this.cur++;
        continue;
      }
      const key = this.keyText(unchecked(this.cs[k]), colon);
      let vs = colon + 1;
      const e = unchecked(this.ce[k]);
      while (vs < e && this.ch(vs) == 32) vs++;
      this.cur++;
      if (vs < e && this.ch(vs) != 35) {
        const v = this.scalar(vs, e);
        v.line = unchecked(this.num[k]);
        m.set(key, v);
        continue;
      }
      if (this.cur < this.n && unchecked(this.ind[this.cur]) > col) {
        m.set(key, this.parseNode(depth + 1));
      } else if (this.cur < this.n && unchecked(this.ind[this.cur]) == col && this.isItem(this.cur)) {
        // Sequence written at the key's own indentation (`key:` / `- item`).
        m.set(key, this.parseSeq(col, depth + 1));
      } else {
        const nul = Value.newNull();
        nul.line = unchecked(this.num[k]);
        m.set(key, nul);
      }
    }
    return m;
  }

  private parseSeq(col: i32, depth: i32): Value {
    const seq = Value.newArray();
    seq.line = unchecked(this.num[this.cur]);
    while (this.cur < this.n) {
      const k = this.cur;
      const c = unchecked(this.ind[k]);
      if (c < col) break;
      if (c > col) {
        this.stray(k);
        this.cur++;
        continue;
      }
      if (!this.isItem(k)) break; // a sibling key in the compact form
      const e = unchecked(this.ce[k]);
      let p = unchecked(this.cs[k]) + 1;
      while (p < e && this.ch(p) == 32) p++;
      if (p >= e) {
        this.cur++;
        if (this.cur < this.n && unchecked(this.ind[this.cur]) > col) seq.push(this.parseNode(depth + 1));
        else seq.push(Value.newNull());
        continue;
      }
      // Re-read the rest of the line as if it started at its own column, so
      // `-     nid: x` followed by `      status: up` forms one mapping.
      unchecked(this.ind[k] = c + (p - unchecked(this.cs[k])));
      unchecked(this.cs[k] = p);
      seq.push(this.parseNode(depth + 1));
    }
    return seq;
  }

  private keyText(p: i32, colon: i32): string {
    const s = this.src;
    const c = this.ch(p);
    if (c == 34 || c == 39) {
      let e = colon;
      while (e > p && this.ch(e - 1) == 32) e--;
      return this.scalar(p, e).text();
    }
    let e = colon;
    while (e > p && this.ch(e - 1) == 32) e--;
    return this.intern(p, e);
  }

  // The same few keys (`nid`, `status`, …) repeat on thousands of lines;
  // reusing one string per key avoids most of the parser's allocations.
  private keyCache: StaticArray<string> = new StaticArray<string>(64);

  private intern(p: i32, e: i32): string {
    const len = e - p;
    if (len <= 0) return "";
    const h = (len * 31 + this.ch(p) * 7 + this.ch(e - 1)) & 63;
    const cached = unchecked(this.keyCache[h]);
    if (changetype<usize>(cached) != 0 && cached.length == len) {
      if (memory.compare(changetype<usize>(cached), this.base + (<usize>p << 1), <usize>len << 1) == 0) return cached;
    }
    const key = this.src.substring(p, e);
    unchecked(this.keyCache[h] = key);
    return key;
  }

  private scalar(p: i32, e: i32): Value {
    const s = this.src;
    const c = this.ch(p);
    if (c == 34) return Value.newString(this.doubleQuoted(p, e));
    if (c == 39) {
      const q = this.quotedEnd(p, e);
      const inner = s.substring(p + 1, q < 0 ? e : q - 1);
      return Value.newString(inner.includes("''") ? inner.replaceAll("''", "'") : inner);
    }
    // Plain scalar: a comment starts at " #".
    let end = e;
    for (let i = p + 1; i < e; i++) {
      if (this.ch(i) == 35 && this.ch(i - 1) == 32) {
        end = i;
        break;
      }
    }
    while (end > p && this.ch(end - 1) == 32) end--;
    if (end == p) return Value.newNull();
    const text = s.substring(p, end);
    if (text == "~" || text == "null") return new Value(Kind.Null, text);
    return Value.newString(text);
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
    return parts.join("");
  }
}
