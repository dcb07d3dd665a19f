// Reader for the block-YAML subset lnetctl prints. It works on character
// offsets into the original text (no per-line substrings), reading one line
// ahead, because a 1,024-NI `net show` is ~4,000 lines (~15,000 with -v) and
// must parse in well under a millisecond. Lines that fit no structure
// (stderr noise, tab indentation, stray text) are skipped and counted so
// callers can decide how strict to be.
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
import { clip } from "./strings";
import { YamlTree, quotedEnd } from "./yamltree";
import { countUnitPair, findUnit, skipUnit } from "./scan";

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
  len: i32;
  doc: YamlDoc = new YamlDoc();
  // The parser only ever looks at one structural line, the current one, so
  // lines are read as it advances instead of being indexed up front.
  /** Content start and end (trailing blanks and CR removed), indentation column, 1-based line number. */
  cs: i32 = 0;
  ce: i32 = 0;
  ind: i32 = 0;
  num: i32 = 0;
  /** No structural line is left. */
  eof: bool = false;
  /** keyColon of the current line; -2 until computed. */
  colon: i32 = -2;
  /** Where the next line starts, and its number. */
  next: i32 = 0;
  nextNum: i32 = 1;
  tree: YamlTree;
  /** Children of the containers being read, innermost last. */
  stack: StaticArray<i32> = new StaticArray<i32>(64);
  sp: i32 = 0;

  constructor(src: string) {
    this.src = src;
    this.base = changetype<usize>(src);
    this.len = src.length;
    // One node per structural line plus one per `- key:` item: lines are at
    // most LFs + 1 and items at most the `-` units, so the tree's arrays are
    // allocated once (growth would leave the smaller copies as holes in the
    // heap, and the next big call would grow memory to fit).
    const counts = countUnitPair(changetype<usize>(src), 0, src.length, 10, 45);
    this.tree = new YamlTree(src, <i32>(counts >> 32) + 1 + <i32>(counts & 0xffffffff) + 8);
  }

  // @ts-ignore: decorator
  @inline ch(i: i32): i32 {
    return <i32>load<u16>(this.base + (<usize>i << 1));
  }

  run(): YamlDoc {
    this.doc.tree = this.tree;
    this.advance();
    // Leading noise (a warning printed before the document) must not become
    // the document's root scalar.
    while (!this.eof && !this.isItem() && this.keyColon() < 0) {
      this.stray();
      this.advance();
    }
    if (!this.eof) this.doc.root = Value.view(this.tree, this.parseNode(0));
    while (!this.eof) {
      this.stray();
      this.advance();
    }
    return this.doc;
  }

  /** Moves to the next structural line, skipping blanks, comments, markers and tab-indented noise. */
  private advance(): void {
    const len = this.len;
    while (this.next <= len) {
      const start = this.next;
      const nl = findUnit(this.base, start, len, 10);
      const lineNo = this.nextNum;
      this.next = nl + 1;
      this.nextNum = lineNo + 1;
      if (this.structural(start, nl, lineNo)) return;
    }
    this.eof = true;
  }

  /** Makes [start, end) the current line if it carries structure; false when it is skipped. */
  private structural(start: i32, end: i32, lineNo: i32): bool {
    const s = this.src;
    while (end > start) {
      const c = this.ch(end - 1);
      if (c != 32 && c != 9 && c != 13) break;
      end--;
    }
    const p = skipUnit(this.base, start, end, 32);
    if (p == end) return false; // blank
    const c = this.ch(p);
    if (c == 9) {
      // YAML forbids tabs in indentation; treat such lines as noise.
      this.doc.stray++;
      if (this.doc.stray == 1) {
        this.doc.firstStray = clip(s.substring(start, end).trim(), 120);
        this.doc.firstStrayLine = lineNo;
      }
      return false;
    }
    if (c == 35) return false; // comment
    if (p == start && end - p >= 3) {
      const m = this.ch(p);
      const isMarker = (m == 45 || m == 46) && this.ch(p + 1) == m && this.ch(p + 2) == m;
      if (isMarker && (end - p == 3 || this.ch(p + 3) == 32)) return false;
      if (c == 37) return false; // %YAML directive
    }
    this.cs = p;
    this.ce = end;
    this.ind = p - start;
    this.num = lineNo;
    this.colon = -2;
    return true;
  }

  private stray(): void {
    this.doc.stray++;
    if (this.doc.stray == 1) {
      this.doc.firstStray = clip(this.src.substring(this.cs, this.ce), 120);
      this.doc.firstStrayLine = this.num;
    }
  }

  private isItem(): bool {
    const p = this.cs;
    if (this.ch(p) != 45) return false; // -
    return p + 1 == this.ce || this.ch(p + 1) == 32;
  }

  /**
   * Offset of the colon ending a mapping key on the current line, or -1. A
   * key ends at the first ": " (or a final ":"), so IPv6 addresses and
   * `descr: a: b` values stay intact.
   */
  private keyColon(): i32 {
    if (this.colon == -2) this.colon = this.findKeyColon();
    return this.colon;
  }

  private findKeyColon(): i32 {
    const p = this.cs;
    const e = this.ce;
    const c = this.ch(p);
    if (c == 34 || c == 39) {
      const q = quotedEnd(this.base, p, e);
      if (q < 0) return -1;
      let j = q;
      while (j < e && this.ch(j) == 32) j++;
      if (j < e && this.ch(j) == 58 && (j + 1 == e || this.ch(j + 1) == 32)) return j;
      return -1;
    }
    if (c == 91 || c == 123 || c == 45 && this.isItem()) return -1;
    for (let i = findUnit(this.base, p, e, 58); i < e; i = findUnit(this.base, i + 1, e, 58)) {
      if (i + 1 == e || this.ch(i + 1) == 32) return i == p ? -1 : i;
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
    store<i32>(changetype<usize>(st) + (<usize>sp << 2), node);
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
    if (depth > YAML_MAX_DEPTH) return this.skipBlock(this.ind);
    if (this.isItem()) return this.parseSeq(this.ind, depth);
    if (this.keyColon() >= 0) return this.parseMap(this.ind, depth);
    const v = this.scalar(this.cs, this.ce, this.num);
    this.advance();
    return v;
  }

  private skipBlock(col: i32): i32 {
    const line = this.num;
    this.stray();
    this.advance();
    while (!this.eof && this.ind >= col) {
      this.stray();
      this.advance();
    }
    return this.tree.add(Kind.Null, 0, 0, line);
  }

  private parseMap(col: i32, depth: i32): i32 {
    const from = this.sp;
    const line = this.num;
    const tree = this.tree;
    while (!this.eof) {
      const c = this.ind;
      if (c < col) break;
      const colon = c == col ? this.keyColon() : -1;
      if (colon < 0) {
        // Deeper text with no owner, a sequence item where keys belong, or
        // plain text: none of it is lnetctl structure.
        this.stray();
        this.advance();
        continue;
      }
      const ks = this.cs;
      let ke = colon;
      while (ke > ks && this.ch(ke - 1) == 32) ke--;
      const e = this.ce;
      const vs = skipUnit(this.base, colon + 1, e, 32);
      const keyLine = this.num;
      let child: i32;
      if (vs < e && this.ch(vs) != 35) {
        child = this.scalar(vs, e, keyLine);
        this.advance();
      } else {
        this.advance();
        if (!this.eof && this.ind > col) {
          child = this.parseNode(depth + 1);
        } else if (!this.eof && this.ind == col && this.isItem()) {
          // Sequence written at the key's own indentation (`key:` / `- item`).
          child = this.parseSeq(col, depth + 1);
        } else {
          child = tree.add(Kind.Null, 0, 0, keyLine);
        }
      }
      tree.setF(child, 1, ks);
      tree.setF(child, 2, ke);
      this.push(child);
    }
    return this.close(Kind.Object, from, line);
  }

  private parseSeq(col: i32, depth: i32): i32 {
    const from = this.sp;
    const line = this.num;
    while (!this.eof) {
      const c = this.ind;
      if (c < col) break;
      if (c > col) {
        this.stray();
        this.advance();
        continue;
      }
      if (!this.isItem()) break; // a sibling key in the compact form
      const e = this.ce;
      const p = skipUnit(this.base, this.cs + 1, e, 32);
      if (p >= e) {
        const itemLine = this.num;
        this.advance();
        if (!this.eof && this.ind > col) this.push(this.parseNode(depth + 1));
        else this.push(this.tree.add(Kind.Null, 0, 0, itemLine));
        continue;
      }
      // Re-read the rest of the line as if it started at its own column, so
      // `-     nid: x` followed by `      status: up` forms one mapping.
      this.ind = c + (p - this.cs);
      this.cs = p;
      this.colon = -2;
      this.push(this.parseNode(depth + 1));
    }
    return this.close(Kind.Array, from, line);
  }

  /** Scalar node: plain text trimmed of blanks and a ` #` comment; quoted text decoded on read. */
  private scalar(p: i32, e: i32, line: i32): i32 {
    const c = this.ch(p);
    if (c == 34 || c == 39) return this.tree.add(Kind.String, p, e, line);
    let end = e;
    for (let i = findUnit(this.base, p + 1, e, 35); i < e; i = findUnit(this.base, i + 1, e, 35)) {
      if (this.ch(i - 1) == 32) {
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
