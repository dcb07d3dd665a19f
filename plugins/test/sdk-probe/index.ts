// Test-only module exposing SDK pieces to vitest; never shipped as a plugin.
import {
  collectExcept, humanList, joinStrings, textIs, isIPv6, isValidIfName, isValidNid, jsonString, parseJson, parseYaml, splitLines, stringify,
  slice, UniqueList, openSource, CheckInput, Result, respond,
} from "../../sdk";
import {
  copyUntilUnit, countUnit, countUnitPair, findJsonSpecial, findUnit, hasBinaryUnit, hasNonBlankUnit, skipUnit,
} from "../../sdk/scan";

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

/**
 * Every vector scan of scan.ts from each start offset (0..len) to the end:
 * one row per offset, [findUnit ':', skipUnit ' ', countUnit LF, LFs and
 * '-'s from countUnitPair, findJsonSpecial, hasBinaryUnit, hasNonBlankUnit,
 * copyUntilUnit '\\' stop, and the text it copied], as JSON.
 */
export function scanProbe(s: string): string {
  const base = changetype<usize>(s);
  const n = s.length;
  const rows = new Array<string>();
  const buf = new StaticArray<u16>(n + 1);
  for (let from = 0; from <= n; from++) {
    const pair = countUnitPair(base, from, n, 10, 45);
    const dst = changetype<usize>(buf);
    const stop = copyUntilUnit(base, from, n, 92, dst, dst + (<usize>(n - from) << 1));
    const copied = String.UTF16.decodeUnsafe(dst, <usize>(stop - from) << 1);
    rows.push(
      "[" + findUnit(base, from, n, 58).toString() + "," + skipUnit(base, from, n, 32).toString() + "," +
      countUnit(base, from, n, 10).toString() + "," + (<i32>(pair >> 32)).toString() + "," + (<i32>(pair & 0xffffffff)).toString() + "," +
      findJsonSpecial(base, from, n).toString() + "," + (hasBinaryUnit(base, from, n) ? "true" : "false") + "," +
      (hasNonBlankUnit(base, from, n) ? "true" : "false") + "," + stop.toString() + "," + jsonString(copied) + "]",
    );
  }
  const out = "[" + joinStrings(rows, ",") + "]";
  collectExcept(out);
  return out;
}

/** Splits on ",", keeps the first of each duplicate through UniqueList, joins with ",". */
export function uniqueProbe(s: string): string {
  const u = new UniqueList();
  let start = 0;
  for (let i = 0; i <= s.length; i++) {
    if (i == s.length || s.charCodeAt(i) == 44) {
      u.add(slice(s, start, i));
      start = i + 1;
    }
  }
  const out = joinStrings(u.items, ",");
  collectExcept(out);
  return out;
}

/**
 * The parse share of a `net show` check, for plugins/test/perf-net-show.mjs:
 * decode the ABI input, refuse binary text, read the YAML tree. Returns the
 * tree's node count (-1 when the input is refused).
 */
export function parseNetShowInput(input: string): i32 {
  const o = openSource(input, "lnetctl.net_show");
  let nodes = -1;
  if (o.failure === null) {
    const tree = parseYaml(o.text).tree;
    if (tree !== null) nodes = tree.count;
  }
  collectExcept("");
  return nodes;
}

/**
 * Round and health through the SDK: echoes input.roundEpoch/previousEpoch in
 * the message and adds fact `n` health entries (status fact `status`, message
 * fact `msg` + index, fs fact `fs`) and fact `e` events (at = index, or -1
 * for index 0).
 */
export function healthProbe(json: string): string {
  const input = CheckInput.parse(json);
  const r = Result.warn("Probe", input.roundEpoch.toString() + "/" + input.previousEpoch.toString());
  const n = I32.parseInt(input.fact("n").length > 0 ? input.fact("n") : "0");
  const e = I32.parseInt(input.fact("e").length > 0 ? input.fact("e") : "0");
  for (let i = 0; i < n; i++) r.health(input.fact("status"), "Reason" + i.toString(), input.fact("msg") + i.toString(), input.fact("fs"));
  for (let i = 0; i < e; i++) r.event("Evicted", "fs" + i.toString(), "fs-OST" + i.toString(), i == 0 ? -1 : <i64>i);
  if (input.fact("stable") == "1") r.stable();
  return respond(r);
}
