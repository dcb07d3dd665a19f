// Validation of values that come from facts (i.e. from plugin output) before
// they reach an argv array or a filesystem path. Plugins are untrusted: a NID
// that starts with "-" would be read by lnetctl as an option, and an interface
// name like "../../x" would walk out of /sys/class/net. Both checks are
// deliberately stricter than what the kernel accepts where the difference
// cannot matter for a real node.

import { isIPv6 } from "node:net";

const IPV4_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const IPV4 = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`);
// LNet network names: type then optional network number (tcp, tcp1, o2ib,
// o2ib3, gni, kfi). Digits inside the type ("o2ib") are why this is not
// simply [a-z]+[0-9]*.
const NET = /^[a-z][a-z0-9]*$/;
const MAX_NET_LENGTH = 16;
// Non-IP LNDs (gni, kfi, ptl…) address peers by an unsigned 32-bit integer.
const DECIMAL_ADDR = /^(?:0|[1-9][0-9]{0,9})$/;
// These LNDs take IP addresses only; "5@tcp" is not something lnetctl prints.
const IP_ONLY_NET_TYPES = new Set(["tcp", "o2ib"]);

export interface ParsedNid {
  addr: string;
  net: string;
}

/**
 * Splits `ADDR@NET` when it is a NID probegate is willing to pass to lnetctl.
 * Accepted: `0@lo`; IPv4 (no leading zeros) or IPv6 (no zone index) on any
 * other network; a decimal address on non-IP network types (e.g. `27@gni`).
 */
export function parseNid(s: unknown): ParsedNid | null {
  if (typeof s !== "string" || s.length > 64) return null;
  const at = s.lastIndexOf("@");
  if (at <= 0) return null;
  const addr = s.slice(0, at);
  const net = s.slice(at + 1);
  if (net.length > MAX_NET_LENGTH || !NET.test(net)) return null;
  const netType = net.replace(/[0-9]+$/, "");
  if (netType === "lo") return addr === "0" && net === "lo" ? { addr, net } : null;
  if (IPV4.test(addr)) return { addr, net };
  // isIPv6 accepts "fe80::1%eth0"; a zone index has no meaning in a NID.
  if (!addr.includes("%") && isIPv6(addr)) return { addr, net };
  if (!IP_ONLY_NET_TYPES.has(netType) && DECIMAL_ADDR.test(addr) && Number(addr) <= 0xffff_ffff) {
    return { addr, net };
  }
  return null;
}

export function isValidNid(s: string): boolean {
  return parseNid(s) !== null;
}

const IFNAMSIZ = 16;
// String.prototype.isWellFormed is ES2024; the project targets ES2023 typings.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Linux interface names (net/core/dev.c dev_valid_name): 1..15 bytes, not "."
 * or "..", no "/", ":" or whitespace. ":" is rejected like the kernel does:
 * "eth0:1" is an IPv4 address label, not a device with a sysfs directory.
 * Stricter than the kernel: control characters and malformed UTF-16 are
 * refused too, so a name is always safe to print and to use as a path segment.
 */
export function isValidIfaceName(s: string): boolean {
  if (typeof s !== "string" || s.length === 0 || s.length >= IFNAMSIZ) return false;
  if (s === "." || s === "..") return false;
  if (LONE_SURROGATE.test(s)) return false;
  if (Buffer.byteLength(s, "utf8") >= IFNAMSIZ) return false;
  // \s covers the kernel's isspace() set and Unicode spaces; \p{Cc} the controls.
  return !/[/:\s\p{Cc}]/u.test(s);
}

/** Shortens untrusted text before it is quoted in an error message. */
export function quoteForMessage(s: string, max = 80): string {
  return JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s);
}

/** The longest path a volume may have (PATH_MAX). */
export const VOLUME_PATH_MAX_BYTES = 4096;

/**
 * Why `path` cannot be a volume's path, or "" when it can: absolute, no NUL,
 * no `..` segment (kubelet never sends one; a request that does is probing
 * the file system), at most PATH_MAX bytes. Only the text is checked: the
 * path itself is never touched on a call path.
 */
export function volumePathProblem(path: string): string {
  if (Buffer.byteLength(path, "utf8") > VOLUME_PATH_MAX_BYTES) return `is longer than ${VOLUME_PATH_MAX_BYTES} bytes`;
  if (path.includes("\0")) return "contains a NUL byte";
  if (!path.startsWith("/")) return `is not an absolute path: ${quoteForMessage(path)}`;
  if (path.split("/").includes("..")) return `has a ".." segment: ${quoteForMessage(path)}`;
  return "";
}
