// Vector scans over UTF-16 text, eight code units per step (wasm SIMD,
// enabled in asconfig.json). A 1,024-NI `net show` is ~100k units and ~4,000
// lines, and the per-character passes over it (JSON unescape, binary check,
// line splitting, indentation, key colons) are where the time goes, so they
// all go through here. Offsets are in code units; `base` is the string's
// address. Callers guarantee [from, end) lies inside the string.

// @ts-ignore: decorator
@inline function at(base: usize, i: i32): v128 {
  return v128.load(base + (<usize>i << 1));
}

/** First offset in [from, end) holding unit `c`, or `end`. */
export function findUnit(base: usize, from: i32, end: i32, c: i32): i32 {
  const needle = i16x8.splat(<i16>c);
  let i = from;
  while (i + 8 <= end) {
    const m = i16x8.bitmask(i16x8.eq(at(base, i), needle));
    if (m != 0) return i + ctz(m);
    i += 8;
  }
  while (i < end && <i32>load<u16>(base + (<usize>i << 1)) != c) i++;
  return i;
}

/** First offset in [from, end) holding a unit other than `c`, or `end`. */
export function skipUnit(base: usize, from: i32, end: i32, c: i32): i32 {
  const needle = i16x8.splat(<i16>c);
  let i = from;
  while (i + 8 <= end) {
    const m = ~i16x8.bitmask(i16x8.eq(at(base, i), needle)) & 0xff;
    if (m != 0) return i + ctz(m);
    i += 8;
  }
  while (i < end && <i32>load<u16>(base + (<usize>i << 1)) == c) i++;
  return i;
}

/** Number of units equal to `c` in [from, end). */
export function countUnit(base: usize, from: i32, end: i32, c: i32): i32 {
  const needle = i16x8.splat(<i16>c);
  let n = 0;
  let i = from;
  while (i + 8 <= end) {
    n += <i32>popcnt(i16x8.bitmask(i16x8.eq(at(base, i), needle)));
    i += 8;
  }
  for (; i < end; i++) if (<i32>load<u16>(base + (<usize>i << 1)) == c) n++;
  return n;
}

/**
 * Counts of units `a` and of units `b` in [from, end) in one pass, packed as
 * (count of a) << 32 | (count of b).
 */
export function countUnitPair(base: usize, from: i32, end: i32, a: i32, b: i32): u64 {
  const na = i16x8.splat(<i16>a);
  const nb = i16x8.splat(<i16>b);
  let ca = 0;
  let cb = 0;
  let i = from;
  while (i + 8 <= end) {
    const v = at(base, i);
    ca += <i32>popcnt(i16x8.bitmask(i16x8.eq(v, na)));
    cb += <i32>popcnt(i16x8.bitmask(i16x8.eq(v, nb)));
    i += 8;
  }
  for (; i < end; i++) {
    const u = <i32>load<u16>(base + (<usize>i << 1));
    if (u == a) ca++;
    if (u == b) cb++;
  }
  return (<u64>ca << 32) | <u64>cb;
}

/**
 * First offset in [from, end) holding `"`, `\` or a control unit (< 0x20):
 * the units a JSON string scanner must stop at. `end` when there is none.
 */
export function findJsonSpecial(base: usize, from: i32, end: i32): i32 {
  const quote = i16x8.splat(34);
  const backslash = i16x8.splat(92);
  const space = i16x8.splat(32);
  let i = from;
  while (i + 8 <= end) {
    const v = at(base, i);
    const hit = v128.or(v128.or(i16x8.eq(v, quote), i16x8.eq(v, backslash)), i16x8.lt_u(v, space));
    const m = i16x8.bitmask(hit);
    if (m != 0) return i + ctz(m);
    i += 8;
  }
  while (i < end) {
    const c = <i32>load<u16>(base + (<usize>i << 1));
    if (c == 34 || c == 92 || c < 32) break;
    i++;
  }
  return i;
}

/**
 * Copies the units of [from, end) that precede the first `c` to `dst`, and
 * returns the offset of that `c` (or `end`). Whole vectors are stored before
 * they are tested, but never past `dstEnd`; the rest goes unit by unit.
 */
export function copyUntilUnit(base: usize, from: i32, end: i32, c: i32, dst: usize, dstEnd: usize): i32 {
  const needle = i16x8.splat(<i16>c);
  let i = from;
  let d = dst;
  while (i + 8 <= end && d + 16 <= dstEnd) {
    const v = at(base, i);
    v128.store(d, v);
    const m = i16x8.bitmask(i16x8.eq(v, needle));
    if (m != 0) return i + ctz(m);
    i += 8;
    d += 16;
  }
  while (i < end) {
    const u = load<u16>(base + (<usize>i << 1));
    if (<i32>u == c) break;
    store<u16>(d, u);
    i++;
    d += 2;
  }
  return i;
}

/**
 * Whether [from, end) holds a unit that no text output has: a control unit
 * other than TAB/LF/CR, DEL, or U+FFFD (what invalid UTF-8 decodes to).
 */
export function hasBinaryUnit(base: usize, from: i32, end: i32): bool {
  const space = i16x8.splat(32);
  const tab = i16x8.splat(9);
  const lf = i16x8.splat(10);
  const cr = i16x8.splat(13);
  const del = i16x8.splat(0x7f);
  const replacement = i16x8.splat(<i16>0xfffd);
  let i = from;
  while (i + 8 <= end) {
    const v = at(base, i);
    const allowedControl = v128.or(v128.or(i16x8.eq(v, tab), i16x8.eq(v, lf)), i16x8.eq(v, cr));
    const control = v128.andnot(i16x8.lt_u(v, space), allowedControl);
    const bad = v128.or(control, v128.or(i16x8.eq(v, del), i16x8.eq(v, replacement)));
    if (v128.any_true(bad)) return true;
    i += 8;
  }
  for (; i < end; i++) {
    const c = <i32>load<u16>(base + (<usize>i << 1));
    if (c == 0xfffd || c == 0x7f || (c < 32 && c != 9 && c != 10 && c != 13)) return true;
  }
  return false;
}

/** Whether [from, end) holds a unit other than space, TAB, LF and CR. */
export function hasNonBlankUnit(base: usize, from: i32, end: i32): bool {
  const space = i16x8.splat(32);
  const tab = i16x8.splat(9);
  const lf = i16x8.splat(10);
  const cr = i16x8.splat(13);
  let i = from;
  while (i + 8 <= end) {
    const v = at(base, i);
    const blank = v128.or(v128.or(i16x8.eq(v, space), i16x8.eq(v, tab)), v128.or(i16x8.eq(v, lf), i16x8.eq(v, cr)));
    if (!i16x8.all_true(blank)) return true;
    i += 8;
  }
  for (; i < end; i++) {
    const c = <i32>load<u16>(base + (<usize>i << 1));
    if (c != 32 && c != 9 && c != 10 && c != 13) return true;
  }
  return false;
}
