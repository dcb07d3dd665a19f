// JSON text production. Escaping follows JSON.stringify (well-formed variant):
// quote, backslash and C0 controls are escaped, and so are lone surrogates so
// the host never sees ill-formed UTF-16 it would have to repair.

import { Kind, Value, formatNumber } from "./value";
import { joinStrings } from "./strings";

const HEX = "0123456789abcdef";

function needsEscape(s: string, i: i32, c: i32): bool {
  if (c == 34 || c == 92 || c < 32) return true;
  if (c >= 0xd800 && c <= 0xdfff) return !isPairAt(s, i, c);
  return false;
}

function isPairAt(s: string, i: i32, c: i32): bool {
  if (c <= 0xdbff) {
    const n = s.charCodeAt(i + 1);
    return n >= 0xdc00 && n <= 0xdfff;
  }
  const p = i > 0 ? s.charCodeAt(i - 1) : -1;
  return p >= 0xd800 && p <= 0xdbff;
}

function escapeOne(c: i32): string {
  if (c == 34) return '\\"';
  if (c == 92) return "\\\\";
  if (c == 10) return "\\n";
  if (c == 13) return "\\r";
  if (c == 9) return "\\t";
  if (c == 8) return "\\b";
  if (c == 12) return "\\f";
  return (
    "\\u" +
    HEX.charAt((c >> 12) & 15) +
    HEX.charAt((c >> 8) & 15) +
    HEX.charAt((c >> 4) & 15) +
    HEX.charAt(c & 15)
  );
}

/** `s` as a JSON string literal, quotes included. */
export function jsonString(s: string): string {
  const n = s.length;
  let first = -1;
  for (let i = 0; i < n; i++) {
    if (needsEscape(s, i, s.charCodeAt(i))) {
      first = i;
      break;
    }
  }
  if (first < 0) return '"' + s + '"';
  const parts = new Array<string>();
  parts.push('"');
  let segStart = 0;
  for (let i = first; i < n; i++) {
    const c = s.charCodeAt(i);
    if (needsEscape(s, i, c)) {
      if (i > segStart) parts.push(s.substring(segStart, i));
      parts.push(escapeOne(c));
      segStart = i + 1;
    }
  }
  if (segStart < n) parts.push(s.substring(segStart));
  parts.push('"');
  return joinStrings(parts);
}

/** Builds one JSON object; values are appended in call order. */
export class JsonObjectWriter {
  private parts: Array<string> = new Array<string>();

  string(key: string, value: string): JsonObjectWriter {
    this.parts.push(jsonString(key) + ":" + jsonString(value));
    return this;
  }

  number(key: string, value: i32): JsonObjectWriter {
    this.parts.push(jsonString(key) + ":" + value.toString());
    return this;
  }

  stringArray(key: string, values: Array<string>): JsonObjectWriter {
    const items = new Array<string>(values.length);
    for (let i = 0; i < values.length; i++) items[i] = jsonString(values[i]);
    this.parts.push(jsonString(key) + ":[" + joinStrings(items, ",") + "]");
    return this;
  }

  /** `raw` must already be JSON (e.g. another writer's output). */
  raw(key: string, raw: string): JsonObjectWriter {
    this.parts.push(jsonString(key) + ":" + raw);
    return this;
  }

  toString(): string {
    return "{" + joinStrings(this.parts, ",") + "}";
  }
}

/** Bytes `s` occupies as UTF-8; lone surrogates count as U+FFFD (3 bytes). */
export function utf8Length(s: string): i32 {
  let n = 0;
  const len = s.length;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < len) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** Serialises a decoded tree back to JSON (YAML scalars become strings). */
export function stringify(v: Value | null): string {
  if (v === null) return "null";
  if (v.kind == Kind.String) return jsonString(v.text());
  if (v.kind == Kind.Number) return isFinite(v.num) ? formatNumber(v.num) : "null";
  if (v.kind == Kind.Bool) return v.num != 0 ? "true" : "false";
  if (v.kind == Kind.Array) {
    const parts = new Array<string>(v.length);
    for (let i = 0; i < v.length; i++) parts[i] = stringify(v.at(i));
    return "[" + joinStrings(parts, ",") + "]";
  }
  if (v.kind == Kind.Object) {
    const parts = new Array<string>(v.length);
    for (let i = 0; i < v.length; i++) parts[i] = jsonString(v.keyAt(i)) + ":" + stringify(v.at(i));
    return "{" + joinStrings(parts, ",") + "}";
  }
  return "null";
}
