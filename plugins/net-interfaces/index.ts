// Are the network interfaces LNet uses operationally up?
// `unknown` passes: virtual and tunnel devices (and many VM NICs) never report
// carrier state, so treating it as down would fail healthy nodes; the message
// still names them.
import { Manifest, Result, respond, fields, humanList, isValidIfName, openSource, parseError, splitLines, clip, oneLine } from "../sdk";

const SOURCE = "sys.net.operstate";

export function manifest(): string {
  return new Manifest("net-interfaces", "1.0.0", "network interfaces used by LNet are operationally up")
    .source(SOURCE)
    .toJson();
}

export function check(input: string): string {
  return respond(evaluate(input));
}

function evaluate(input: string): Result {
  const o = openSource(input, SOURCE);
  const failure = o.failure;
  if (failure !== null) return failure;

  const up = new Array<string>();
  const unknown = new Array<string>();
  const bad = new Array<string>();
  const lines = splitLines(o.text);
  for (let i = 0; i < lines.length; i++) {
    const f = fields(lines[i]);
    if (f.length == 0) continue;
    if (f.length != 2 || !isValidIfName(f[0])) {
      return parseError(o.source, "expected `IFACE STATE` on line " + (i + 1).toString() + ": " + clip(oneLine(lines[i]), 60));
    }
    const state = f[1];
    if (state == "up") up.push(f[0]);
    else if (state == "unknown") unknown.push(f[0]);
    else bad.push(f[0] + " (" + clip(state, 20) + ")");
  }
  if (up.length + unknown.length + bad.length == 0) return parseError(o.source, "no interfaces listed");
  if (bad.length > 0) return Result.fail("InterfaceDown", "interface(s) not up: " + humanList(bad));
  let msg = "interface(s) up: " + humanList(up.concat(unknown));
  if (unknown.length > 0) msg += "; operstate unknown (counted as up): " + humanList(unknown);
  return Result.pass("InterfacesUp", msg);
}
