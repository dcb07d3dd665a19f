// Is at least one non-loopback LNet network configured, with every NI up?
// `0@lo` is always up, so it must not count towards health (the reference
// driver's readiness script is fooled by exactly that).
import {
  Manifest, Result, Value, findLnetError, humanList, isLoopbackNid, isValidIfName,
  isValidNid, Opened, parseError, parseYaml, oneLine, clip, UniqueList, textIs, joinStrings,
  CheckInput, LnetPhase, checkSourcePhased, phasedManifest, programMissing, missingDetail, parseLnetOptions, sourceFailed,
} from "../sdk";

const SOURCE = "lnetctl.net_show";
const OPTIONS = "modprobe.lnet_options";

// Configuration (lnet-nets.yaml), all optional:
//   optionalNets: [tcp]        NIs down on these nets give warn, not fail
//   requiredNets: [o2ib]       fail when one of these nets has no NI
//   minUpPerNet: 1             multi-rail: this many NIs up per net turns the rest's downs into warn (0 = all)
//   ignoreNids: [10.0.0.9@tcp] NIs not looked at
//   lnetConfiguredAt: mount    before LNet is configured (at the first mount):
//                              lnetctl is present, and the interfaces the lnet
//                              module options name become lnet.interfaces
//                              (net-interfaces judges their state)
export function manifest(): string {
  return phasedManifest(new Manifest("lnet-nets", "1.2.0", "a non-loopback LNet network is configured and all its NIs are up")
    .source(SOURCE)
    .source(OPTIONS)
    .stringsOption("optionalNets", new Array<string>(), "nets (net type as lnetctl prints it, e.g. tcp, o2ib1) whose NIs being down gives warn, not fail")
    .stringsOption("requiredNets", new Array<string>(), "nets that must be configured with at least one NI; fail when one is missing")
    .intOption("minUpPerNet", 0, 0, "multi-rail: at least this many NIs up on a net makes its down NIs a warning; 0 requires all")
    .stringsOption("ignoreNids", new Array<string>(), "NIDs not looked at (neither counted nor judged)"))
    .toJson();
}

export function check(input: string): string {
  // Stable: nothing here depends on the round (no epoch, no events); the host may keep a verdict while the sources read the same.
  return checkSourcePhased(input, SOURCE, evaluate, beforeConfigured, true);
}

/**
 * Before the first mount: lnetctl answers (an error document is an answer),
 * and the interfaces named by `options lnet networks=`/`ip2nets=` are handed
 * on as lnet.interfaces, as the NIs' interfaces are once LNet is configured.
 */
function beforeConfigured(input: CheckInput, phase: LnetPhase): Result {
  const ns = input.source(SOURCE);
  if (ns === null) return Result.fail("SourceMissing", "source " + SOURCE + " was not provided to the check");
  if (programMissing(ns)) return Result.fail("ToolsMissing", phase.label() + ": lnetctl is not installed: " + missingDetail(ns));
  const src = input.source(OPTIONS);
  if (src === null) return Result.fail("SourceMissing", "source " + OPTIONS + " was not provided to the check");
  if (!src.ok) {
    const r = sourceFailed(src);
    r.message = phase.label() + ": " + r.message;
    return r;
  }
  const opts = parseLnetOptions(src.stdout);
  if (opts.error.length > 0) return Result.fail("LnetOptionsInvalid", phase.label() + ": lnet module options: " + opts.error);
  if (opts.invalid.length > 0) {
    return Result.fail("LnetOptionsInvalid", phase.label() + ": lnet module options name invalid interface(s) " + humanList(opts.invalid.items, 3) + " (" + clip(opts.where, 200) + ")");
  }
  if (opts.interfaces.length == 0) {
    const why = opts.param.length > 0 ? "the lnet module options (" + clip(opts.where, 200) + ") name no interface" : "no `options lnet networks=` or `ip2nets=` in modprobe.d";
    // An empty list, not none: net-interfaces then knows there is nothing to judge yet
    // (a missing fact would fail it, and with it the mount that configures LNet).
    return Result.pass("LnetNotYetConfigured", phase.label() + ": lnetctl present; " + why + ", so LNet picks an interface at the first mount").fact("lnet.interfaces", "");
  }
  return Result.pass(
    "LnetNotYetConfigured",
    phase.label() + ": lnetctl present; interface(s) " + humanList(opts.interfaces.items) + " named by the lnet module options (" + clip(opts.where, 200) + ")",
  ).fact("lnet.interfaces", joinStrings(opts.interfaces.items, ","));
}

/** Per-net tally of non-loopback NIs. */
class NetTally {
  name: string;
  total: i32 = 0;
  up: i32 = 0;
  down: Array<string> = new Array<string>();
  constructor(name: string) {
    this.name = name;
  }
}

function tallyFor(list: Array<NetTally>, name: string): NetTally {
  for (let i = 0; i < list.length; i++) if (list[i].name == name) return list[i];
  const t = new NetTally(name);
  list.push(t);
  return t;
}

function evaluate(o: Opened): Result {
  if (o.source.truncated) return parseError(o.source, "output was truncated");
  const optionalNets = o.input.configStrings("optionalNets", new Array<string>());
  const requiredNets = o.input.configStrings("requiredNets", new Array<string>());
  const minUp = o.input.configInt("minUpPerNet", 0);
  const ignoreNids = o.input.configStrings("ignoreNids", new Array<string>());

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

  const tallies = new Array<NetTally>();
  const ifaces = new UniqueList();
  const badIfaces = new UniqueList();
  let remoteNis = 0;
  let ignored = 0;
  for (let n = 0; n < nets.length; n++) {
    const net = nets.at(n);
    const netType = net !== null && net.isObject ? net.getText("net type") : "";
    if (net === null || netType.length == 0) {
      return parseError(o.source, "net entry " + (n + 1).toString() + " has no `net type`");
    }
    const nis = net.get("local NI(s)");
    if (nis === null || !nis.isArray) continue; // a net without NIs does not count
    for (let i = 0; i < nis.length; i++) {
      const ni = nis.at(i);
      const nid = ni !== null ? ni.getText("nid") : "";
      if (ni === null || !isValidNid(nid)) {
        return parseError(o.source, "NI entry without a valid `nid` in net " + netType);
      }
      if (isLoopbackNid(nid)) continue;
      if (ignoreNids.length > 0 && ignoreNids.includes(nid)) {
        ignored++;
        continue;
      }
      remoteNis++;
      const t = tallyFor(tallies, netType);
      t.total++;
      // Compared in place: no string for the common `status: up`.
      if (textIs(ni, "status", "up")) {
        t.up++;
      } else {
        const status = ni.getText("status");
        t.down.push(nid + " (" + (status.length > 0 ? status : "no status") + ")");
      }
      collectInterfaces(ni.get("interfaces"), ifaces, badIfaces);
    }
  }

  const missing = new Array<string>();
  for (let i = 0; i < requiredNets.length; i++) {
    let found = false;
    for (let t = 0; t < tallies.length; t++) if (tallies[t].name == requiredNets[i]) found = true;
    if (!found) missing.push(requiredNets[i]);
  }
  const failing = new Array<string>();
  const degraded = new Array<string>();
  for (let t = 0; t < tallies.length; t++) {
    const tally = tallies[t];
    if (tally.down.length == 0) continue;
    const text = humanList(tally.down);
    if (optionalNets.includes(tally.name)) degraded.push(text + " (optional net " + tally.name + ")");
    else if (minUp > 0 && tally.up >= minUp) degraded.push(text + " (" + tally.up.toString() + " of " + tally.total.toString() + " NIs of " + tally.name + " up)");
    else for (let d = 0; d < tally.down.length; d++) failing.push(tally.down[d]);
  }

  let r: Result;
  if (remoteNis == 0) {
    let msg = "no non-loopback LNet network with NIs is configured (only 0@lo)";
    if (ignored > 0) msg += "; " + ignored.toString() + " NI(s) ignored by configuration";
    r = Result.fail("NoNonLoopbackNet", msg);
  } else if (missing.length > 0) {
    r = Result.fail("RequiredNetMissing", "required LNet net(s) not configured: " + humanList(missing));
  } else if (failing.length > 0) {
    r = Result.fail("NiDown", "LNet NI(s) not up: " + humanList(failing));
  } else if (degraded.length > 0) {
    r = Result.warn("NiDegraded", "LNet NI(s) not up, tolerated by configuration: " + joinStrings(degraded, "; "));
  } else {
    r = Result.pass("NetsUp", remoteNis.toString() + " non-loopback NI(s) up");
  }
  if (ignored > 0 && remoteNis > 0) r.message += "; " + ignored.toString() + " NI(s) ignored by configuration";
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
