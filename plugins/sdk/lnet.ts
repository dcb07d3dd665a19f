// LNet vocabulary: NIDs, interface names and lnetctl's error documents.

import { Value } from "./value";
import { allDigits, findText, isDigit, isHexDigit, isLowerAlpha, unitAt } from "./strings";
import { parseYaml } from "./yaml";

export class Nid {
  addr: string = "";
  /** Full network, e.g. "tcp1", "o2ib". */
  net: string = "";
  /** Network type without its number, e.g. "tcp", "o2ib". */
  netType: string = "";
  /** Network number; 0 when the network has none ("tcp" == "tcp0"). */
  netNum: i32 = 0;

  get isLoopback(): bool {
    return this.netType == "lo";
  }
}

/**
 * Parses `ADDR@NET` where NET is a lowercase LND name with an optional number
 * (`tcp`, `tcp1`, `o2ib`, `o2ib3`, `gni`, `kfi`, …) and ADDR is IPv4 or IPv6,
 * `0` for `lo`, or a decimal node number for the non-IP LNDs gni and kfi.
 * Returns null when `s` is not such a NID (no trimming is done).
 */
export function parseNid(s: string): Nid | null {
  if (nidKind(s) < 0) return null;
  const at = s.lastIndexOf("@");
  const net = s.substring(at + 1);
  let numStart = net.length;
  while (numStart > 0 && isDigit(net.charCodeAt(numStart - 1))) numStart--;
  const digits = net.length - numStart;
  const nid = new Nid();
  nid.addr = s.substring(0, at);
  nid.net = net;
  nid.netType = net.substring(0, numStart);
  nid.netNum = digits > 0 ? I32.parseInt(net.substring(numStart)) : 0;
  return nid;
}

/** NID_INVALID, NID_LOOPBACK or NID_REMOTE for `s`, allocating nothing. */
export const NID_INVALID: i32 = -1;
export const NID_LOOPBACK: i32 = 0;
export const NID_REMOTE: i32 = 1;

/** What parseNid would make of `s` (see NID_*), without building the Nid. */
export function nidKind(s: string): i32 {
  const len = s.length;
  let at = len - 1;
  while (at >= 0 && unitAt(s, at) != 64) at--;
  if (at <= 0 || at == len - 1) return NID_INVALID;
  const ns = at + 1; // net start
  const netLen = len - ns;
  if (netLen > 16 || !isLowerAlpha(unitAt(s, ns))) return NID_INVALID;
  // Net type is everything up to the trailing digits; `o2ib` keeps its 2.
  let numStart = len;
  while (numStart > ns && isDigit(unitAt(s, numStart - 1))) numStart--;
  for (let i = ns + 1; i < numStart; i++) {
    const c = unitAt(s, i);
    if (!isLowerAlpha(c) && !isDigit(c)) return NID_INVALID;
  }
  const digits = len - numStart;
  if (digits > 5) return NID_INVALID;
  const typeLen = numStart - ns;
  if (typeLen == 2 && unitAt(s, ns) == 108 && unitAt(s, ns + 1) == 111) {
    // lo
    return at == 1 && unitAt(s, 0) == 48 && digits == 0 ? NID_LOOPBACK : NID_INVALID;
  }
  if (ipv4Range(s, 0, at) || ipv6Range(s, 0, at)) return NID_REMOTE;
  if (typeLen == 3 && at <= 10) {
    const a = unitAt(s, ns), b = unitAt(s, ns + 1), c = unitAt(s, ns + 2);
    if ((a == 103 && b == 110 && c == 105) || (a == 107 && b == 102 && c == 105)) {
      // gni, kfi: decimal node number
      for (let i = 0; i < at; i++) if (!isDigit(unitAt(s, i))) return NID_INVALID;
      return NID_REMOTE;
    }
  }
  return NID_INVALID;
}

export function isValidNid(s: string): bool {
  return nidKind(s) != NID_INVALID;
}

/** A valid NID on a network other than `lo`. */
export function isRemoteNid(s: string): bool {
  return nidKind(s) == NID_REMOTE;
}

/** Syntactic loopback test that does not require the NID to be otherwise valid. */
export function isLoopbackNid(s: string): bool {
  return s.endsWith("@lo");
}

export function isIPv4(s: string): bool {
  return ipv4Range(s, 0, s.length);
}

/** isIPv4 of s[start, n). */
function ipv4Range(s: string, start: i32, n: i32): bool {
  let parts = 0;
  let i = start;
  while (parts < 4) {
    const ps = i;
    let v = 0;
    while (i < n && isDigit(unitAt(s, i)) && i - ps < 3) {
      v = v * 10 + (unitAt(s, i) - 48);
      i++;
    }
    if (i == ps || v > 255) return false;
    parts++;
    if (parts == 4) break;
    if (i >= n || unitAt(s, i) != 46) return false;
    i++;
  }
  return i == n;
}

/** RFC 4291 text form: up to 8 hex groups, one `::`, optional dotted IPv4 tail; no zone. */
export function isIPv6(s: string): bool {
  return ipv6Range(s, 0, s.length);
}

/** isIPv6 of s[from, n). */
function ipv6Range(s: string, from: i32, n: i32): bool {
  const len = n - from;
  if (len < 2 || len > 45) return false;
  let groups = 0;
  let compressed = false;
  let i = from;
  if (unitAt(s, from) == 58) {
    if (unitAt(s, from + 1) != 58) return false;
    compressed = true;
    i = from + 2;
    if (i == n) return true; // "::"
  }
  while (i < n) {
    const start = i;
    while (i < n && isHexDigit(unitAt(s, i)) && i - start < 5) i++;
    const glen = i - start;
    if (i < n && unitAt(s, i) == 46) {
      // Embedded IPv4 must be the last 32 bits.
      if (!ipv4Range(s, start, n)) return false;
      groups += 2;
      i = n;
      break;
    }
    if (glen == 0 || glen > 4) return false;
    groups++;
    if (i == n) break;
    if (unitAt(s, i) != 58) return false;
    i++;
    if (i < n && unitAt(s, i) == 58) {
      if (compressed) return false;
      compressed = true;
      i++;
      if (i == n) break;
    } else if (i == n) {
      return false; // trailing single colon
    }
  }
  return compressed ? groups <= 7 : groups == 8;
}

/**
 * Linux accepts 1..15 bytes (IFNAMSIZ-1), not "." or "..", with no '/', ':'
 * or whitespace (dev_valid_name). Control characters are refused as well, and
 * ',' because `lnet.interfaces` is a comma-separated fact.
 */
export function isValidIfName(s: string): bool {
  const n = s.length;
  if (n < 1 || n > 15) return false;
  if (n <= 2 && unitAt(s, 0) == 46 && unitAt(s, n - 1) == 46) return false; // "." or ".."
  for (let i = 0; i < n; i++) {
    const c = unitAt(s, i);
    if (c <= 32 || c == 0x7f || c == 47 || c == 58 || c == 44) return false;
    if (c >= 0x80) return false; // names are bytes; keep the fact ASCII
  }
  return true;
}

export class LnetError {
  errno: string = "";
  descr: string = "";
  /** Key naming the failed operation (`net`, `ping`, …), when present. */
  op: string = "";
}

/**
 * Finds lnetctl's error shape — a mapping with `errno` (and usually `descr`)
 * — anywhere in a document: `show:`/`manage:` → list → `net:`/`ping:` →
 * {errno, descr}, or the flatter forms older releases print.
 */
export function findLnetError(v: Value | null): LnetError | null {
  return searchError(v, "", 0);
}

function searchError(v: Value | null, op: string, depth: i32): LnetError | null {
  if (v === null || depth > 12) return null;
  if (v.isObject) {
    const errno = v.get("errno");
    if (errno !== null && !errno.isObject && !errno.isArray) {
      const e = new LnetError();
      e.errno = errno.text();
      e.descr = v.getText("descr");
      e.op = op;
      return e;
    }
    for (let i = 0; i < v.length; i++) {
      const r = searchError(v.at(i), v.keyAt(i), depth + 1);
      if (r !== null) return r;
    }
  } else if (v.isArray) {
    for (let i = 0; i < v.length; i++) {
      const r = searchError(v.at(i), op, depth + 1);
      if (r !== null) return r;
    }
  }
  return null;
}

/** Error document in free text (stdout or stderr), or null. */
export function findLnetErrorIn(text: string): LnetError | null {
  if (findText(text, "errno") < 0) return null;
  return findLnetError(parseYaml(text).root);
}
