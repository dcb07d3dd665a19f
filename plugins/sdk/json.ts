// Strict JSON reader (RFC 8259) that reports errors instead of trapping: the
// host's input is trusted to be JSON, but a plugin must stay total anyway.

import { Kind, Value } from "./value";
import { hexValue, isDigit, unitAt } from "./strings";
import { copyUntilUnit, findJsonSpecial } from "./scan";

/** Deeper input is refused rather than risking the wasm call stack. */
export const JSON_MAX_DEPTH: i32 = 64;

export class JsonResult {
  value: Value | null = null;
  error: string = "";
  get ok(): bool {
    return this.value !== null;
  }
}

export function parseJson(text: string): JsonResult {
  const p = new JsonParser(text);
  const res = new JsonResult();
  p.skipWs();
  const v = p.parseValue(0);
  if (v === null) {
    res.error = p.error;
    return res;
  }
  p.skipWs();
  if (p.pos < p.len) {
    res.error = p.fail("unexpected trailing data");
    return res;
  }
  res.value = v;
  return res;
}

class JsonParser {
  src: string;
  pos: i32 = 0;
  len: i32;
  error: string = "";

  constructor(src: string) {
    this.src = src;
    this.len = src.length;
  }

  fail(msg: string): string {
    if (this.error.length == 0) this.error = msg + " at offset " + this.pos.toString();
    return this.error;
  }

  peek(): i32 {
    return this.pos < this.len ? unitAt(this.src, this.pos) : -1;
  }

  skipWs(): void {
    while (this.pos < this.len) {
      const c = unitAt(this.src, this.pos);
      if (c != 32 && c != 9 && c != 10 && c != 13) break;
      this.pos++;
    }
  }

  parseValue(depth: i32): Value | null {
    if (depth > JSON_MAX_DEPTH) {
      this.fail("nesting deeper than " + JSON_MAX_DEPTH.toString());
      return null;
    }
    const c = this.peek();
    if (c == 123) return this.parseObject(depth);
    if (c == 91) return this.parseArray(depth);
    if (c == 34) {
      const s = this.parseString();
      return s === null ? null : Value.newString(s);
    }
    if (c == 45 || isDigit(c)) return this.parseNumber();
    if (this.literal("true")) return new Value(Kind.Bool, "", 1);
    if (this.literal("false")) return new Value(Kind.Bool, "", 0);
    if (this.literal("null")) return Value.newNull();
    this.fail(c < 0 ? "unexpected end of input" : "unexpected character");
    return null;
  }

  literal(word: string): bool {
    const n = word.length;
    if (this.pos + n > this.len) return false;
    for (let i = 0; i < n; i++) {
      if (this.src.charCodeAt(this.pos + i) != word.charCodeAt(i)) return false;
    }
    this.pos += n;
    return true;
  }

  parseObject(depth: i32): Value | null {
    this.pos++; // {
    const obj = Value.newObject();
    this.skipWs();
    if (this.peek() == 125) {
      this.pos++;
      return obj;
    }
    while (true) {
      this.skipWs();
      if (this.peek() != 34) {
        this.fail("expected a string key");
        return null;
      }
      const key = this.parseString();
      if (key === null) return null;
      this.skipWs();
      if (this.peek() != 58) {
        this.fail("expected ':'");
        return null;
      }
      this.pos++;
      this.skipWs();
      const v = this.parseValue(depth + 1);
      if (v === null) return null;
      obj.set(key, v);
      this.skipWs();
      const c = this.peek();
      if (c == 44) {
        this.pos++;
        continue;
      }
      if (c == 125) {
        this.pos++;
        return obj;
      }
      this.fail("expected ',' or '}'");
      return null;
    }
  }

  parseArray(depth: i32): Value | null {
    this.pos++; // [
    const arr = Value.newArray();
    this.skipWs();
    if (this.peek() == 93) {
      this.pos++;
      return arr;
    }
    while (true) {
      this.skipWs();
      const v = this.parseValue(depth + 1);
      if (v === null) return null;
      arr.push(v);
      this.skipWs();
      const c = this.peek();
      if (c == 44) {
        this.pos++;
        continue;
      }
      if (c == 93) {
        this.pos++;
        return arr;
      }
      this.fail("expected ',' or ']'");
      return null;
    }
  }

  parseNumber(): Value | null {
    const start = this.pos;
    if (this.peek() == 45) this.pos++;
    if (this.peek() == 48) {
      this.pos++;
    } else if (isDigit(this.peek())) {
      while (isDigit(this.peek())) this.pos++;
    } else {
      this.fail("malformed number");
      return null;
    }
    if (this.peek() == 46) {
      this.pos++;
      if (!isDigit(this.peek())) {
        this.fail("malformed number");
        return null;
      }
      while (isDigit(this.peek())) this.pos++;
    }
    const e = this.peek();
    if (e == 101 || e == 69) {
      this.pos++;
      const sign = this.peek();
      if (sign == 43 || sign == 45) this.pos++;
      if (!isDigit(this.peek())) {
        this.fail("malformed number");
        return null;
      }
      while (isDigit(this.peek())) this.pos++;
    }
    return new Value(Kind.Number, "", toNumber(this.src.substring(start, this.pos)));
  }

  /**
   * Two passes, both vectorised: the first validates and measures (jumping
   * from one quote, backslash or control unit to the next), the second
   * copies the runs between escapes into a string of the exact decoded
   * length. A string without escapes (keys, short values) is a substring.
   * Allocating exactly, rather than a buffer as long as the rest of the input
   * shrunk afterwards, keeps the heap from growing across calls with big
   * outputs (the input itself is already that size).
   */
  parseString(): string | null {
    const src = this.src;
    const base = changetype<usize>(src);
    const len = this.len;
    const start = this.pos + 1;
    let i = start;
    let decoded = 0;
    while (true) {
      const next = findJsonSpecial(base, i, len);
      decoded += next - i;
      i = next;
      if (i >= len) return this.stringError(i, "unterminated string");
      const c = unitAt(src, i);
      if (c == 34) break;
      if (c < 32) return this.stringError(i, "control character in string");
      // A backslash.
      if (i + 1 >= len) return this.stringError(i, "unterminated escape");
      const e = unitAt(src, i + 1);
      if (e == 117) {
        if (i + 5 >= len) return this.stringError(i, "truncated \\u escape");
        for (let k = 2; k < 6; k++) {
          if (hexValue(unitAt(src, i + k)) < 0) return this.stringError(i, "bad \\u escape");
        }
        i += 6;
      } else if (e == 34 || e == 92 || e == 47 || e == 98 || e == 102 || e == 110 || e == 114 || e == 116) {
        i += 2;
      } else {
        return this.stringError(i, "bad escape");
      }
      decoded++;
    }
    const end = i;
    this.pos = end + 1;
    if (decoded == end - start) return src.substring(start, end);

    // UTF-16 code units are copied as-is, so \uD83D\uDE00 becomes the pair it
    // encodes and a lone surrogate stays a lone surrogate (as in JSON.parse).
    const out = changetype<string>(__new(<usize>decoded << 1, idof<string>()));
    let o = changetype<usize>(out);
    const outEnd = o + (<usize>decoded << 1);
    i = start;
    while (i < end) {
      const bs = copyUntilUnit(base, i, end, 92, o, outEnd);
      o += <usize>(bs - i) << 1;
      if (bs >= end) break;
      const e = unitAt(src, bs + 1);
      let c: i32;
      if (e == 117) {
        c =
          (hexValue(unitAt(src, bs + 2)) << 12) |
          (hexValue(unitAt(src, bs + 3)) << 8) |
          (hexValue(unitAt(src, bs + 4)) << 4) |
          hexValue(unitAt(src, bs + 5));
        i = bs + 6;
      } else {
        if (e == 110) c = 10;
        else if (e == 116) c = 9;
        else if (e == 114) c = 13;
        else if (e == 98) c = 8;
        else if (e == 102) c = 12;
        else c = e; // " \ /
        i = bs + 2;
      }
      store<u16>(o, <u16>c);
      o += 2;
    }
    return out;
  }

  private stringError(at: i32, msg: string): string | null {
    this.pos = at;
    this.fail(msg);
    return null;
  }
}

/**
 * AssemblyScript 0.28's parseFloat mis-scales mantissas of 16+ significant
 * digits (9.010366698072332e+38 reads as ~9e37). Such numbers are rewritten
 * with 15 significant digits first: magnitude stays right, precision drops to
 * ~1e-15 relative. ABI numbers (exit codes, ages) are small integers anyway.
 */
function toNumber(text: string): f64 {
  const n = text.length;
  let sig = 0;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c == 101 || c == 69) break;
    if (isDigit(c) && (sig > 0 || c != 48)) sig++;
  }
  if (sig <= 15) return parseFloat(text);
  // Integers up to 18 digits are exact in i64, and i64 -> f64 rounds
  // correctly, so safe integers such as 1388617509139421 round-trip exactly.
  const neg0 = text.charCodeAt(0) == 45;
  if (n - (neg0 ? 1 : 0) <= 18) {
    let whole: i64 = 0;
    let integral = true;
    for (let i = neg0 ? 1 : 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (!isDigit(c)) {
        integral = false;
        break;
      }
      whole = whole * 10 + <i64>(c - 48);
    }
    if (integral) return neg0 ? -(<f64>whole) : <f64>whole;
  }
  let neg = false;
  let digits = "";
  let pointExp = 0; // power-of-ten shift implied by the decimal point
  let seenPoint = false;
  let exp = 0;
  let i = 0;
  if (text.charCodeAt(0) == 45) {
    neg = true;
    i = 1;
  }
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c == 46) {
      seenPoint = true;
      continue;
    }
    if (c == 101 || c == 69) {
      exp = I32.parseInt(text.substring(i + 1));
      break;
    }
    if (digits.length == 0 && c == 48) {
      if (seenPoint) pointExp--;
      continue;
    }
    if (digits.length < 15) {
      digits += String.fromCharCode(c);
      if (seenPoint) pointExp--;
    } else if (!seenPoint) {
      pointExp++;
    }
  }
  const value = parseFloat(digits + "e" + (exp + pointExp).toString());
  return neg ? -value : value;
}
