// Test-only module exposing SDK pieces to vitest; never shipped as a plugin.
import {
  collectExcept, isIPv6, isValidIfName, isValidNid, jsonString, parseJson, parseYaml, splitLines, stringify,
} from "../../sdk";

export function jsonRoundtrip(s: string): string {
  const r = parseJson(s);
  const out = r.value !== null ? stringify(r.value) : "ERR:" + r.error;
  collectExcept(out);
  return out;
}

export function yamlToJson(s: string): string {
  const d = parseYaml(s);
  const out = '{"root":' + stringify(d.root) + ',"stray":' + d.stray.toString() + "}";
  collectExcept(out);
  return out;
}

export function quote(s: string): string {
  return jsonString(s);
}

export function nidValid(s: string): bool {
  return isValidNid(s);
}

export function ipv6Valid(s: string): bool {
  return isIPv6(s);
}

export function ifNameValid(s: string): bool {
  return isValidIfName(s);
}

export function lineCount(s: string): i32 {
  return splitLines(s).length;
}
