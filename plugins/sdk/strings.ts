// Text helpers shared by plugins. Everything here is total: no input makes
// these functions trap, because a trap would be reported as a plugin crash
// rather than as a failed check.

/** Splits on LF, dropping a CR before it (CRLF output from some wrappers). */
export function splitLines(s: string): Array<string> {
  const out = new Array<string>();
  const n = s.length;
  let start = 0;
  for (let i = 0; i < n; i++) {
    if (s.charCodeAt(i) == 10) {
      let end = i;
      if (end > start && s.charCodeAt(end - 1) == 13) end--;
      out.push(s.substring(start, end));
      start = i + 1;
    }
  }
  if (start < n) {
    let end = n;
    if (s.charCodeAt(end - 1) == 13) end--;
    out.push(s.substring(start, end));
  }
  return out;
}

export function isSpace(c: i32): bool {
  return c == 32 || c == 9 || c == 10 || c == 13 || c == 11 || c == 12;
}

export function isDigit(c: i32): bool {
  return c >= 48 && c <= 57;
}

export function isLowerAlpha(c: i32): bool {
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
    while (i < n && isSpace(s.charCodeAt(i))) i++;
    const start = i;
    while (i < n && !isSpace(s.charCodeAt(i))) i++;
    if (i > start) out.push(s.substring(start, i));
  }
  return out;
}

/**
 * Why `s` is not usable as command text, or "" when it is. Output decoded by
 * the host from non-UTF-8 bytes carries U+FFFD; NUL and other C0 controls never
 * appear in lnetctl/lctl/procfs text, so any of them means binary garbage.
 */
export function textProblem(s: string): string {
  let nonBlank = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c == 0xfffd || c == 0x7f || (c < 32 && c != 9 && c != 10 && c != 13)) {
      return "contains binary data";
    }
    if (!isSpace(c)) nonBlank = true;
  }
  return nonBlank ? "" : "is empty";
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
  return parts.join("");
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

/** "a, b and c"; beyond `max` names, "a, b, … and 7 more". */
export function humanList(names: Array<string>, max: i32 = 10): string {
  const n = names.length;
  if (n == 0) return "";
  if (n == 1) return names[0];
  if (n <= max) {
    return names.slice(0, n - 1).join(", ") + " and " + names[n - 1];
  }
  return names.slice(0, max).join(", ") + " and " + (n - max).toString() + " more";
}

/** Appends `s` unless already present (keeps first-seen order). Linear: for short lists. */
export function pushUnique(list: Array<string>, s: string): void {
  for (let i = 0; i < list.length; i++) if (list[i] == s) return;
  list.push(s);
}

/** Insertion-ordered set of strings; hashed, so 1,024 interface names stay cheap. */
export class UniqueList {
  items: Array<string> = new Array<string>();
  private seen: Set<string> = new Set<string>();

  add(s: string): void {
    if (this.seen.has(s)) return;
    this.seen.add(s);
    this.items.push(s);
  }

  get length(): i32 {
    return this.items.length;
  }
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
