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
//
// The document is a YamlTree (flat integer arrays, see yamltree.ts); `root`
// and everything reached from it are views, and keys and scalars stay offsets
// into the text until a plugin reads them.

import { Kind, Value } from "./value";
import { clip, countLf, lineEnd } from "./strings";
import { YamlTree, quotedEnd } from "./yamltree";

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
  tree: YamlTree | null = null;

  /**
   * Whether some mapping anywhere has an entry `key` (e.g. lnetctl's `errno`),
   * checked over the parsed keys without building a string per key.
   */
  hasKey(key: string): bool {
    const t = this.tree;
    return t !== null && t.hasKeyAnywhere(key);
  }
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
  /** Structural lines opening with `-` (sizes the tree; see run). */
  items: i32 = 0;
  cur: i32 = 0;
  tree: YamlTree;
  /** Children of the containers being read, innermost last. */
  stack: StaticArray<i32> = new StaticArray<i32>(64);
  sp: i32 = 0;

  constructor(src: string) {
    this.src = src;
    const base = changetype<usize>(src);
    this.base = base;
    const lines = countLf(src) + 1;
    this.cs = new StaticArray<i32>(lines);
    this.ce = new StaticArray<i32>(lines);
    this.ind = new StaticArray<i32>(lines);
    this.num = new StaticArray<i32>(lines);
    this.tree = new YamlTree(src, 0);
  }

  @inline ch(i: i32): i32 {
    return <i32>load<u16>(this.base + (<usize>i << 1));
  }

  run(): YamlDoc {
    this.index();
    // One node per structural line plus one per `- key:` item covers lnetctl
    // output exactly, so the tree's arrays are allocated once (growth would
    // leave the smaller copies as holes in the heap).
    this.tree = new YamlTree(this.src, this.n + this.items + 8);
    this.doc.tree = this.tree;
    // Leading noise (a warning printed before the document) must not become
    // the document's root scalar.
    while (this.cur < this.n && !this.isItem(this.cur) && this.keyColon(this.cur) < 0) {
      this.stray(this.cur);
      this.cur++;
    }
    if (this.cur < this.n) this.doc.root = Value.view(this.tree, this.parseNode(0));
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
    if (c == 45) this.items++;
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
      const q = quotedEnd(this.base, p, e);
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

  private push(node: i32): void {
    const sp = this.sp;
    let st = this.stack;
    if (sp >= st.length) {
      const grown = new StaticArray<i32>(st.length * 2);
      memory.copy(changetype<usize>(grown), changetype<usize>(st), <usize>sp << 2);
      this.stack = st = grown;
    }
    unchecked((st[sp] = node));
    this.sp = sp + 1;
  }

  /** Closes a container whose children were pushed since stack depth `from`. */
  private close(kind: i32, from: i32, line: i32): i32 {
    const n = this.sp - from;
    const first = this.tree.addKids(this.stack, from, n);
    this.sp = from;
    return this.tree.add(kind, first, n, line);
  }

  private parseNode(depth: i32): i32 {
    const k = this.cur;
    if (depth > YAML_MAX_DEPTH) return this.skipBlock(unchecked(this.ind[k]));
    if (this.isItem(k)) return this.parseSeq(unchecked(this.ind[k]), depth);
    if (this.keyColon(k) >= 0) return this.parseMap(unchecked(this.ind[k]), depth);
    const v = this.scalar(unchecked(this.cs[k]), unchecked(this.ce[k]), unchecked(this.num[k]));
    this.cur++;
    return v;
  }

  private skipBlock(col: i32): i32 {
    const line = unchecked(this.num[this.cur]);
    this.stray(this.cur);
    this.cur++;
    while (this.cur < this.n && unchecked(this.ind[this.cur]) >= col) {
      this.stray(this.cur);
      this.cur++;
    }
    return this.tree.add(Kind.Null, 0, 0, line);
  }

  private parseMap(col: i32, depth: i32): i32 {
    const from = this.sp;
    const line = unchecked(this.num[this.cur]);
    const tree = this.tree;
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
      const ks = unchecked(this.cs[k]);
      let ke = colon;
      while (ke > ks && this.ch(ke - 1) == 32) ke--;
      let vs = colon + 1;
      const e = unchecked(this.ce[k]);
      while (vs < e && this.ch(vs) == 32) vs++;
      this.cur++;
      let child: i32;
      if (vs < e && this.ch(vs) != 35) {
        child = this.scalar(vs, e, unchecked(this.num[k]));
      } else if (this.cur < this.n && unchecked(this.ind[this.cur]) > col) {
        child = this.parseNode(depth + 1);
      } else if (this.cur < this.n && unchecked(this.ind[this.cur]) == col && this.isItem(this.cur)) {
        // Sequence written at the key's own indentation (`key:` / `- item`).
        child = this.parseSeq(col, depth + 1);
      } else {
        child = tree.add(Kind.Null, 0, 0, unchecked(this.num[k]));
      }
      tree.setF(child, 1, ks);
      tree.setF(child, 2, ke);
      this.push(child);
    }
    return this.close(Kind.Object, from, line);
  }

  private parseSeq(col: i32, depth: i32): i32 {
    const from = this.sp;
    const line = unchecked(this.num[this.cur]);
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
        if (this.cur < this.n && unchecked(this.ind[this.cur]) > col) this.push(this.parseNode(depth + 1));
        else this.push(this.tree.add(Kind.Null, 0, 0, unchecked(this.num[k])));
        continue;
      }
      // Re-read the rest of the line as if it started at its own column, so
      // `-     nid: x` followed by `      status: up` forms one mapping.
      unchecked((this.ind[k] = c + (p - unchecked(this.cs[k]))));
      unchecked((this.cs[k] = p));
      this.push(this.parseNode(depth + 1));
    }
    return this.close(Kind.Array, from, line);
  }

  /** Scalar node: plain text trimmed of blanks and a ` #` comment; quoted text decoded on read. */
  private scalar(p: i32, e: i32, line: i32): i32 {
    const c = this.ch(p);
    if (c == 34 || c == 39) return this.tree.add(Kind.String, p, e, line);
    let end = e;
    for (let i = p + 1; i < e; i++) {
      if (this.ch(i) == 35 && this.ch(i - 1) == 32) {
        end = i;
        break;
      }
    }
    while (end > p && this.ch(end - 1) == 32) end--;
    const len = end - p;
    if (len == 0) return this.tree.add(Kind.Null, 0, 0, line);
    if (len == 1 && c == 126) return this.tree.add(Kind.Null, 0, 0, line); // ~
    if (len == 4 && c == 110 && this.ch(p + 1) == 117 && this.ch(p + 2) == 108 && this.ch(p + 3) == 108) {
      return this.tree.add(Kind.Null, 0, 0, line); // null
    }
    return this.tree.add(Kind.String, p, end, line);
  }
}
