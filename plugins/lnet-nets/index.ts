// Is at least one non-loopback LNet network configured, with every NI up?
// `0@lo` is always up, so it must not count towards health (the reference
// driver's readiness script is fooled by exactly that).
import {
  Manifest, Result, checkSource, Value, findLnetError, humanList, isLoopbackNid, isValidIfName,
  isValidNid, Opened, parseError, parseYaml, oneLine, clip, UniqueList, textIs, joinStrings,
} from "../sdk";

const SOURCE = "lnetctl.net_show";

export function manifest(): string {
  return new Manifest("lnet-nets", "1.0.0", "a non-loopback LNet network is configured and all its NIs are up")
    .source(SOURCE)
    .toJson();
}

export function check(input: string): string {
  return checkSource(input, SOURCE, evaluate);
}

function evaluate(o: Opened): Result {
  if (o.source.truncated) return parseError(o.source, "output was truncated");

  const doc = parseYaml(o.text);
  // Only an error document mentions errno; skip walking a big healthy tree.
  const err = doc.hasKey("errno") ? findLnetError(doc.root) : null;
  if (err !== null) {
    return Result.fail("LNetError", "lnetctl net show reported errno " + err.errno + ": " + clip(oneLine(err.descr), 300));
  }
  const root = doc.root;
  const nets = root !== null ? root.get("net") : null;
  if (nets === null || !nets.isArray) {
    let why = "no `net:` list";
    if (doc.stray > 0) why += "; unexpected line " + doc.firstStrayLine.toString() + ": " + doc.firstStray;
    return parseError(o.source, why);
  }

  const down = new Array<string>();
  const ifaces = new UniqueList();
  const badIfaces = new UniqueList();
  let remoteNis = 0;
  for (let n = 0; n < nets.length; n++) {
    const net = nets.at(n);
    if (net === null || !net.isObject || net.getText("net type").length == 0) {
      return parseError(o.source, "net entry " + (n + 1).toString() + " has no `net type`");
    }
    const nis = net.get("local NI(s)");
    if (nis === null || !nis.isArray) continue; // a net without NIs does not count
    for (let i = 0; i < nis.length; i++) {
      const ni = nis.at(i);
      const nid = ni !== null ? ni.getText("nid") : "";
      if (ni === null || !isValidNid(nid)) {
        return parseError(o.source, "NI entry without a valid `nid` in net " + net.getText("net type"));
      }
      if (isLoopbackNid(nid)) continue;
      remoteNis++;
      // Compared in place: no string for the common `status: up`.
      if (textIs(ni, "status", "up")) {
        collectInterfaces(ni.get("interfaces"), ifaces, badIfaces);
        continue;
      }
      const status = ni.getText("status");
      down.push(nid + " (" + (status.length > 0 ? status : "no status") + ")");
      collectInterfaces(ni.get("interfaces"), ifaces, badIfaces);
    }
  }

  let r: Result;
  if (remoteNis == 0) {
    r = Result.fail("NoNonLoopbackNet", "no non-loopback LNet network with NIs is configured (only 0@lo)");
  } else if (down.length > 0) {
    r = Result.fail("NiDown", "LNet NI(s) not up: " + humanList(down));
  } else {
    r = Result.pass("NetsUp", remoteNis.toString() + " non-loopback NI(s) up");
  }
  if (badIfaces.length > 0) r.message += "; ignored invalid interface name(s): " + humanList(badIfaces.items, 3);
  if (doc.stray > 0) r.message += "; ignored " + doc.stray.toString() + " non-YAML line(s)";
  if (ifaces.length > 0) r.fact("lnet.interfaces", joinStrings(ifaces.items, ","));
  return r;
}

function collectInterfaces(v: Value | null, out: UniqueList, bad: UniqueList): void {
  if (v === null) return;
  // `interfaces:` is a map `0: eth0`; some emitters print a list instead.
  for (let i = 0; i < v.length; i++) {
    const name = v.textAt(i);
    if (isValidIfName(name)) out.add(name);
    else bad.add(clip(oneLine(name), 20));
  }
}
