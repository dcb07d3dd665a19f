// Test-only module exposing SDK pieces to vitest; never shipped as a plugin.
import {
  collectExcept, humanList, joinStrings, textIs, isIPv6, isValidIfName, isValidNid, jsonString, parseJson, parseYaml, splitLines, stringify,
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

/**
 * `KEY|WANT\n` then a YAML document: what the root mapping's lazy lookups say
 * about KEY (getText, textIs against WANT, has, hasKey anywhere, keys in order).
 */
export function yamlLookup(s: string): string {
  const nl = s.indexOf("\n");
  const head = nl < 0 ? s : s.substring(0, nl);
  const bar = head.indexOf("|");
  const key = bar < 0 ? head : head.substring(0, bar);
  const want = bar < 0 ? "" : head.substring(bar + 1);
  const d = parseYaml(nl < 0 ? "" : s.substring(nl + 1));
  const root = d.root;
  const keys = new Array<string>();
  if (root !== null && root.isObject) for (let i = 0; i < root.length; i++) keys.push(jsonString(root.keyAt(i)));
  const out =
    '{"getText":' + jsonString(root !== null ? root.getText(key, "<none>") : "<none>") +
    ',"textIs":' + (textIs(root, key, want) ? "true" : "false") +
    ',"has":' + (root !== null && root.has(key) ? "true" : "false") +
    ',"hasKey":' + (d.hasKey(key) ? "true" : "false") +
    ',"keys":[' + joinStrings(keys, ",") + "]}";
  collectExcept(out);
  return out;
}

/** Splits on "|" and returns [joinStrings with ", ", humanList with max 3] as JSON. */
export function joinProbe(s: string): string {
  const parts = s.length == 0 ? new Array<string>() : s.split("|");
  const out = "[" + jsonString(joinStrings(parts, ", ")) + "," + jsonString(humanList(parts, 3)) + "]";
  collectExcept(out);
  return out;
}
