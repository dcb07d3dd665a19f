// LNet vocabulary: NIDs, interface names and lnetctl's error documents.

import { Value } from "./value";
import { allDigits, isDigit, isHexDigit, isLowerAlpha } from "./strings";
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
  const at = s.lastIndexOf("@");
  if (at <= 0 || at == s.length - 1) return null;
  const net = s.substring(at + 1);
  if (net.length > 16 || !isLowerAlpha(net.charCodeAt(0))) return null;
  // Net type is everything up to the trailing digits; `o2ib` keeps its 2.
  let numStart = net.length;
  while (numStart > 0 && isDigit(net.charCodeAt(numStart - 1))) numStart--;
  for (let i = 1; i < numStart; i++) {
    const c = net.charCodeAt(i);
    if (!isLowerAlpha(c) && !isDigit(c)) return null;
  }
  const digits = net.length - numStart;
  if (digits > 5) return null;
  const nid = new Nid();
  nid.addr = s.substring(0, at);
  nid.net = net;
  nid.netType = net.substring(0, numStart);
  nid.netNum = digits > 0 ? I32.parseInt(net.substring(numStart)) : 0;
  if (nid.netType == "lo") return nid.addr == "0" && digits == 0 ? nid : null;
  if (isIPv4(nid.addr) || isIPv6(nid.addr)) return nid;
  if ((nid.netType == "gni" || nid.netType == "kfi") && allDigits(nid.addr) && nid.addr.length <= 10) {
    return nid;
  }
  return null;
}

export function isValidNid(s: string): bool {
  return parseNid(s) !== null;
}

/** A valid NID on a network other than `lo`. */
export function isRemoteNid(s: string): bool {
  const n = parseNid(s);
  return n !== null && !n.isLoopback;
}

/** Syntactic loopback test that does not require the NID to be otherwise valid. */
export function isLoopbackNid(s: string): bool {
  return s.endsWith("@lo");
}

export function isIPv4(s: string): bool {
  let parts = 0;
  let i = 0;
  const n = s.length;
  while (parts < 4) {
    const start = i;
    let v = 0;
    while (i < n && isDigit(s.charCodeAt(i)) && i - start < 3) {
      v = v * 10 + (s.charCodeAt(i) - 48);
      i++;
    }
    if (i == start || v > 255) return false;
    parts++;
    if (parts == 4) break;
    if (i >= n || s.charCodeAt(i) != 46) return false;
    i++;
  }
  return i == n;
}

/** RFC 4291 text form: up to 8 hex groups, one `::`, optional dotted IPv4 tail; no zone. */
export function isIPv6(s: string): bool {
  const n = s.length;
  if (n < 2 || n > 45) return false;
  let groups = 0;
  let compressed = false;
  let i = 0;
  if (s.charCodeAt(0) == 58) {
    if (s.charCodeAt(1) != 58) return false;
    compressed = true;
    i = 2;
    if (i == n) return true; // "::"
  }
  while (i < n) {
    const start = i;
    while (i < n && isHexDigit(s.charCodeAt(i)) && i - start < 5) i++;
    const len = i - start;
    if (i < n && s.charCodeAt(i) == 46) {
      // Embedded IPv4 must be the last 32 bits.
      if (!isIPv4(s.substring(start))) return false;
      groups += 2;
      i = n;
      break;
    }
    if (len == 0 || len > 4) return false;
    groups++;
    if (i == n) break;
    if (s.charCodeAt(i) != 58) return false;
    i++;
    if (i < n && s.charCodeAt(i) == 58) {
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
  if (n < 1 || n > 15 || s == "." || s == "..") return false;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
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
  if (text.indexOf("errno") < 0) return null;
  return findLnetError(parseYaml(text).root);
}
