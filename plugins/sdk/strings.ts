// Text helpers shared by plugins. Everything here is total: no input makes
// these functions trap, because a trap would be reported as a plugin crash
// rather than as a failed check.

import { countUnit, findUnit, hasBinaryUnit, hasNonBlankUnit } from "./scan";

/**
 * UTF-16 unit at `i` without a range check. Only for indices the caller has
 * already bounded to [0, s.length); hot loops over megabytes of output use it.
 */
// @ts-ignore: decorator
@inline export function unitAt(s: string, i: i32): i32 {
  return <i32>load<u16>(changetype<usize>(s) + (<usize>i << 1));
}

/**
 * s.substring(start, end) for 0 <= start <= end <= s.length. Short ranges
 * (NIDs, interface names, keys) are copied inline: memory.copy is a call
 * into the engine that costs more than copying a dozen units.
 */
export function slice(s: string, start: i32, end: i32): string {
  const n = end - start;
  if (n <= 0) return "";
  if (n > 16) return s.substring(start, end);
  const out = changetype<string>(__new(<usize>n << 1, idof<string>()));
  const dst = changetype<usize>(out);
  const src = changetype<usize>(s) + (<usize>start << 1);
  let i = 0;
  for (; i + 4 <= n; i += 4) store<u64>(dst + (<usize>i << 1), load<u64>(src + (<usize>i << 1)));
  for (; i < n; i++) store<u16>(dst + (<usize>i << 1), load<u16>(src + (<usize>i << 1)));
  return out;
}

/** Offset of the first LF at or after `from`, or `s.length`. */
export function lineEnd(s: string, from: i32): i32 {
  return findUnit(changetype<usize>(s), from < 0 ? 0 : from, s.length, 10);
}

/** Number of LF units in `s`. */
export function countLf(s: string): i32 {
  return countUnit(changetype<usize>(s), 0, s.length, 10);
}

/** Splits on LF, dropping a CR before it (CRLF output from some wrappers). */
export function splitLines(s: string): Array<string> {
  const out = new Array<string>();
  const n = s.length;
  let start = 0;
  while (start < n) {
    const nl = lineEnd(s, start);
    let end = nl;
    if (end > start && unitAt(s, end - 1) == 13) end--;
    out.push(s.substring(start, end));
    start = nl + 1;
  }
  return out;
}

/**
 * Offset of `needle` in `s` at or after `from`, or -1. Same answers as
 * String#indexOf for a non-empty needle, without a full compare per position.
 */
export function findText(s: string, needle: string, from: i32 = 0): i32 {
  const m = needle.length;
  const n = s.length;
  if (from < 0) from = 0;
  if (m == 0) return from <= n ? from : n;
  const base = changetype<usize>(s);
  const nb = changetype<usize>(needle);
  const first = load<u16>(nb);
  const last = n - m;
  for (let i = from; i <= last; i++) {
    if (load<u16>(base + (<usize>i << 1)) != first) continue;
    if (m == 1 || memory.compare(base + (<usize>(i + 1) << 1), nb + 2, <usize>(m - 1) << 1) == 0) return i;
  }
  return -1;
}

export function isSpace(c: i32): bool {
  return c == 32 || c == 9 || c == 10 || c == 13 || c == 11 || c == 12;
}

// @ts-ignore: decorator
@inline export function isDigit(c: i32): bool {
  return c >= 48 && c <= 57;
}

// @ts-ignore: decorator
@inline export function isLowerAlpha(c: i32): bool {
  return c >= 97 && c <= 122;
}

export function isHexDigit(c: i32): bool {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);
}

export function hexValue(c: i32): i32 {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/** True when every character is an ASCII digit (and there is at least one). */
export function allDigits(s: string): bool {
  if (s.length == 0) return false;
  for (let i = 0; i < s.length; i++) if (!isDigit(s.charCodeAt(i))) return false;
  return true;
}

/** Splits on runs of spaces/tabs, dropping empty fields. */
export function fields(s: string): Array<string> {
  const out = new Array<string>();
  const n = s.length;
  let i = 0;
  while (i < n) {
    while (i < n && isSpace(unitAt(s, i))) i++;
    const start = i;
    while (i < n && !isSpace(unitAt(s, i))) i++;
    if (i > start) out.push(s.substring(start, i));
  }
  return out;
}

/**
 * Allocation-free field splitter for one line of a larger text: `reset(s,
 * start, end)` finds the fields of s[start, end) exactly as `fields` would,
 * and `text(i)` materialises one of them only when asked.
 */
export class LineFields {
  src: string = "";
  count: i32 = 0;
  private starts: StaticArray<i32> = new StaticArray<i32>(16);
  private ends: StaticArray<i32> = new StaticArray<i32>(16);

  reset(s: string, start: i32, end: i32): LineFields {
    this.src = s;
    let k = 0;
    let i = start;
    while (i < end) {
      while (i < end && isSpace(unitAt(s, i))) i++;
      const fs = i;
      while (i < end && !isSpace(unitAt(s, i))) i++;
      if (i > fs) {
        if (k == this.starts.length) this.grow();
        unchecked((this.starts[k] = fs));
        unchecked((this.ends[k] = i));
        k++;
      }
    }
    this.count = k;
    return this;
  }

  private grow(): void {
    const n = this.starts.length << 1;
    const s2 = new StaticArray<i32>(n);
    const e2 = new StaticArray<i32>(n);
    for (let i = 0; i < this.starts.length; i++) {
      unchecked((s2[i] = this.starts[i]));
      unchecked((e2[i] = this.ends[i]));
    }
    this.starts = s2;
    this.ends = e2;
  }

  /** Field i as a new string; "" when out of range. */
  text(i: i32): string {
    if (i < 0 || i >= this.count) return "";
    return this.src.substring(unchecked(this.starts[i]), unchecked(this.ends[i]));
  }

  length(i: i32): i32 {
    if (i < 0 || i >= this.count) return 0;
    return unchecked(this.ends[i]) - unchecked(this.starts[i]);
  }

  /** Field i equals `t` (false when out of range). */
  is(i: i32, t: string): bool {
    if (i < 0 || i >= this.count) return false;
    const p = unchecked(this.starts[i]);
    const len = unchecked(this.ends[i]) - p;
    if (len != t.length) return false;
    return memory.compare(changetype<usize>(this.src) + (<usize>p << 1), changetype<usize>(t), <usize>len << 1) == 0;
  }

  /** Field i is all ASCII digits (and non-empty). */
  isDigits(i: i32): bool {
    if (i < 0 || i >= this.count) return false;
    const e = unchecked(this.ends[i]);
    for (let p = unchecked(this.starts[i]); p < e; p++) if (!isDigit(unitAt(this.src, p))) return false;
    return true;
  }
}

/**
 * Why `s` is not usable as command text, or "" when it is. Output decoded by
 * the host from non-UTF-8 bytes carries U+FFFD; NUL and other C0 controls never
 * appear in lnetctl/lctl/procfs text, so any of them means binary garbage.
 */
export function textProblem(s: string): string {
  const base = changetype<usize>(s);
  if (hasBinaryUnit(base, 0, s.length)) return "contains binary data";
  return hasNonBlankUnit(base, 0, s.length) ? "" : "is empty";
}

/** Collapses control characters and whitespace runs so a message stays on one line. */
export function oneLine(s: string): string {
  let pendingSpace = false;
  let segStart = -1;
  const parts = new Array<string>();
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const blank = c < 32 || c == 0x7f || c == 32;
    if (blank) {
      if (segStart >= 0) {
        parts.push(s.substring(segStart, i));
        segStart = -1;
      }
      pendingSpace = true;
    } else if (segStart < 0) {
      if (pendingSpace && parts.length > 0) parts.push(" ");
      pendingSpace = false;
      segStart = i;
    }
  }
  if (segStart >= 0) parts.push(s.substring(segStart));
  return joinStrings(parts);
}

/** At most `max` UTF-16 units, never splitting a surrogate pair; marks the cut with "…". */
export function clip(s: string, max: i32): string {
  if (max < 1) return "";
  if (s.length <= max) return s;
  let end = max - 1;
  if (end > 0) {
    const c = s.charCodeAt(end - 1);
    if (c >= 0xd800 && c <= 0xdbff) end--;
  }
  return s.substring(0, end) + "…";
}

/**
 * `parts[0…count)` joined with `sep` (all of them when count < 0) in one
 * allocation. AssemblyScript 0.28's Array#join concatenates pairwise, which
 * is quadratic: joining 1,024 interface names cost ~1 ms and 16 MiB of heap.
 */
export function joinStrings(parts: Array<string>, sep: string = "", count: i32 = -1): string {
  let n = parts.length;
  if (count >= 0 && count < n) n = count;
  if (n <= 0) return "";
  if (n == 1) return parts[0];
  const sepLen = sep.length;
  let total = sepLen * (n - 1);
  for (let i = 0; i < n; i++) total += unchecked(parts[i]).length;
  const out = changetype<string>(__new(<usize>total << 1, idof<string>()));
  const ob = changetype<usize>(out);
  const sb = changetype<usize>(sep);
  let o: usize = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0 && sepLen > 0) {
      memory.copy(ob + o, sb, <usize>sepLen << 1);
      o += <usize>sepLen << 1;
    }
    const part = unchecked(parts[i]);
    const bytes = <usize>part.length << 1;
    memory.copy(ob + o, changetype<usize>(part), bytes);
    o += bytes;
  }
  return out;
}

/** "a, b and c"; beyond `max` names, "a, b, … and 7 more". */
export function humanList(names: Array<string>, max: i32 = 10): string {
  const n = names.length;
  if (n == 0) return "";
  if (n == 1) return names[0];
  if (n <= max) {
    return joinStrings(names, ", ", n - 1) + " and " + names[n - 1];
  }
  // Array#slice semantics for a negative max (counts from the end).
  const shown = max >= 0 ? max : (n + max > 0 ? n + max : 0);
  return joinStrings(names, ", ", shown) + " and " + (n - max).toString() + " more";
}

/** Appends `s` unless already present (keeps first-seen order). Linear: for short lists. */
export function pushUnique(list: Array<string>, s: string): void {
  for (let i = 0; i < list.length; i++) if (list[i] == s) return;
  list.push(s);
}

/** Insertion-ordered set of strings; hashed, so 1,024 interface names stay cheap. */
export class UniqueList {
  items: Array<string> = new Array<string>();
  // Open addressing over item numbers (index + 1; 0 marks a free slot), with
  // each slot's hash kept so most probes skip the string compare.
  private slots: StaticArray<i32> = new StaticArray<i32>(16);
  private hashes: StaticArray<u32> = new StaticArray<u32>(16);

  add(s: string): void {
    const h = hashUnits(s);
    const mask = this.slots.length - 1;
    let i = <i32>h & mask;
    while (true) {
      const k = unchecked(this.slots[i]);
      if (k == 0) break;
      if (unchecked(this.hashes[i]) == h && unchecked(this.items[k - 1]) == s) return;
      i = (i + 1) & mask;
    }
    this.items.push(s);
    unchecked((this.slots[i] = this.items.length));
    unchecked((this.hashes[i] = h));
    if (this.items.length * 2 > this.slots.length) this.grow();
  }

  get length(): i32 {
    return this.items.length;
  }

  private grow(): void {
    const size = this.slots.length << 2;
    const slots = new StaticArray<i32>(size);
    const hashes = new StaticArray<u32>(size);
    const mask = size - 1;
    const old = this.slots;
    for (let j = 0; j < old.length; j++) {
      const k = unchecked(old[j]);
      if (k == 0) continue;
      const h = unchecked(this.hashes[j]);
      let i = <i32>h & mask;
      while (unchecked(slots[i]) != 0) i = (i + 1) & mask;
      unchecked((slots[i] = k));
      unchecked((hashes[i] = h));
    }
    this.slots = slots;
    this.hashes = hashes;
  }
}

/** FNV-1a over UTF-16 units. */
function hashUnits(s: string): u32 {
  const base = changetype<usize>(s);
  const n = s.length;
  let h: u32 = 2166136261;
  for (let i = 0; i < n; i++) {
    h ^= <u32>load<u16>(base + (<usize>i << 1));
    h *= 16777619;
  }
  return h;
}

export function toLowerAscii(s: string): string {
  let needs = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) {
      needs = true;
      break;
    }
  }
  if (!needs) return s;
  const codes = new Array<i32>(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    codes[i] = c >= 65 && c <= 90 ? c + 32 : c;
  }
  return String.fromCharCodes(codes);
}

/** First non-blank line of `s`, trimmed and clipped; for quoting stderr in messages. */
export function firstLine(s: string, max: i32 = 200): string {
  const lines = splitLines(s);
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i].trim();
    if (t.length > 0) return clip(oneLine(t), max);
  }
  return "";
}
