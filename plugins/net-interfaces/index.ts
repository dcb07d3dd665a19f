// Are the network interfaces LNet uses operationally up?
// `unknown` passes: virtual and tunnel devices (and many VM NICs) never report
// carrier state, so treating it as down would fail healthy nodes; the message
// still names them.
// Every verdict is marked stable: it is made from the operstate text, the
// interface list and the configuration alone (no clock, no history), so the
// host reuses it while those are equal and calls no plugin on a round where
// no interface changed (plugins/ABI.md, `stable`). The fixtures do not assert
// it: its Rust and C twins run them too, and their plain ABI cannot say it
// (plugins/test/examples.test.ts holds this build to it on every fixture).
// Configuration (net-interfaces.yaml):
//   ignoreInterfaces: [eth1]
import { Manifest, Result, openSource, respond, humanList, isValidIfName, Opened, parseError, clip, oneLine, LineFields, lineEnd } from "../sdk";

const SOURCE = "sys.net.operstate";
const FACT = "lnet.interfaces";

export function manifest(): string {
  return new Manifest("net-interfaces", "1.2.0", "network interfaces used by LNet are operationally up")
    .source(SOURCE)
    .stringsOption("ignoreInterfaces", new Array<string>(), "interfaces whose state is not checked, e.g. [eth1]")
    .toJson();
}

export function check(input: string): string {
  const o = openSource(input, SOURCE);
  // lnet-nets hands on an empty list while LNet, configured only at the first
  // mount, names no interface yet: there is nothing to judge, and failing would
  // gate the very mount that configures LNet.
  if (o.input.hasFact(FACT) && namesNone(o.input.fact(FACT))) return respond(Result.pass("NoInterfacesNamed", "LNet names no interface yet (lnet.interfaces is empty, lnetConfiguredAt: mount): none to check until it is configured").stable());
  const failure = o.failure;
  return respond((failure !== null ? failure : evaluate(o)).stable());
}

/** Only commas and blanks (space, tab, CR, LF): the host reads no interface for such a list. */
function namesNone(list: string): bool {
  for (let i = 0; i < list.length; i++) {
    const c = list.charCodeAt(i);
    if (c != 44 && c != 32 && c != 9 && c != 10 && c != 13) return false;
  }
  return true;
}

function evaluate(o: Opened): Result {
  const ignore = o.input.configStrings("ignoreInterfaces", new Array<string>());
  const ignored = new Array<string>();
  const up = new Array<string>();
  const unknown = new Array<string>();
  const bad = new Array<string>();
  const text = o.text;
  const n = text.length;
  const f = new LineFields();
  let lineNo = 0;
  let start = 0;
  while (start < n) {
    const nl = lineEnd(text, start);
    lineNo++;
    f.reset(text, start, nl);
    if (f.count == 0) {
      start = nl + 1;
      continue;
    }
    const name = f.text(0);
    if (f.count != 2 || !isValidIfName(name)) {
      let end = nl;
      if (end > start && text.charCodeAt(end - 1) == 13) end--;
      return parseError(o.source, "expected `IFACE STATE` on line " + lineNo.toString() + ": " + clip(oneLine(text.substring(start, end)), 60));
    }
    start = nl + 1;
    if (ignore.includes(name)) ignored.push(name);
    else if (f.is(1, "up")) up.push(name);
    else if (f.is(1, "unknown")) unknown.push(name);
    else bad.push(name + " (" + clip(f.text(1), 20) + ")");
  }
  if (up.length + unknown.length + bad.length + ignored.length == 0) return parseError(o.source, "no interfaces listed");
  const note = ignored.length > 0 ? "; ignored by configuration: " + humanList(ignored) : "";
  if (bad.length > 0) return Result.fail("InterfaceDown", "interface(s) not up: " + humanList(bad) + note);
  if (up.length + unknown.length == 0) return Result.pass("InterfacesIgnored", "every listed interface is ignored by configuration: " + humanList(ignored));
  let msg = "interface(s) up: " + humanList(up.concat(unknown));
  if (unknown.length > 0) msg += "; operstate unknown (counted as up): " + humanList(unknown);
  return Result.pass("InterfacesUp", msg + note);
}
