// Storage health (probe "storage"): can LNet carry this node's Lustre
// traffic? From `lnetctl net show -v 3`: each non-loopback NI's `status` and
// its `health value` (1000 = healthy; every failed send takes
// health_sensitivity off it, and an NI below 1000 is in recovery).
//   no usable NI (none configured, or all down / at health 0) → STORAGE_UNREACHABLE LnetNoUsableNi
//   several NIs, some down or below 1000                       → STORAGE_DEGRADED LnetNiDegraded
// A single NI below 1000 but up is still the only path: told in the message,
// not reported (a multi-rail node has somewhere else to send).
// With lnetConfiguredAt: mount, nothing is reported before LNet is configured
// (the first mount does that), so a fresh node is not called unreachable.
import {
  Manifest, Result, CheckInput, Value, respond, clip, oneLine, humanList, isLoopbackNid, isValidNid, findLnetError,
  findLnetErrorIn, parseYaml, sourceFailed, parseError, programMissing, lnetPhase, phasedManifest,
  STORAGE_DEGRADED, STORAGE_UNREACHABLE,
} from "../sdk";

const SOURCE = "lnetctl.net_show_health";
const MAX_HEALTH: i32 = 1000;

export function manifest(): string {
  return phasedManifest(new Manifest("lnet-health", "1.0.0", "LNet has a usable NI, and on a multi-NI node every NI is up at full health")
    .source(SOURCE)
    .probeKind("storage")
    .stringsOption("ignoreNids", new Array<string>(), "NIDs not looked at (neither counted nor judged)"))
    .toJson();
}

export function check(input: string): string {
  const inp = CheckInput.parse(input);
  if (inp.error.length > 0) return respond(unknown(Result.fail("BadInput", inp.error)));
  const phase = lnetPhase(inp);
  if (phase.error.length > 0) return respond(unknown(Result.fail("ConfigInvalid", phase.error)));
  if (!phase.configured) return answer(Result.pass("LnetNotYetConfigured", phase.label() + ": nothing to report until the first mount configures it"));
  return answer(evaluate(inp));
}

/**
 * Stable unless it cannot tell (as the Lustre storage checks): nothing here
 * depends on the round (no epoch, no events), so the host may keep a verdict
 * while `lnetctl` prints the same.
 */
function answer(r: Result): string {
  for (let i = 0; i < r.healthEntries.length; i++) if (r.healthEntries[i].reason == "HealthUnknown") return respond(r);
  return respond(r.stable());
}

function unknown(r: Result): Result {
  return r.health(STORAGE_DEGRADED, "HealthUnknown", "cannot tell whether LNet is usable: " + clip(oneLine(r.message), 400));
}

function noUsable(msg: string): Result {
  return Result.fail("LnetNoUsableNi", msg).health(STORAGE_UNREACHABLE, "LnetNoUsableNi", msg);
}

function evaluate(input: CheckInput): Result {
  const src = input.source(SOURCE);
  if (src === null) return unknown(Result.fail("SourceMissing", "source " + SOURCE + " was not provided to the check"));
  // LNet down or not configured: lnetctl answers with an error document (errno/descr).
  let err = findLnetErrorIn(src.stdout);
  if (err === null && !src.ok) err = findLnetErrorIn(src.stderr);
  if (err !== null && !programMissing(src) && !src.truncated && src.exitCode >= 0) {
    return noUsable("LNet has no usable NI: lnetctl net show: " + clip(oneLine(err.descr.length > 0 ? err.descr : "errno " + err.errno), 200));
  }
  if (!src.ok) return unknown(sourceFailed(src));
  if (src.truncated) return unknown(parseError(src, "output was truncated"));
  const doc = parseYaml(src.stdout);
  const derr = doc.hasKey("errno") ? findLnetError(doc.root) : null;
  if (derr !== null) return noUsable("LNet has no usable NI: lnetctl net show reported errno " + derr.errno + ": " + clip(oneLine(derr.descr), 200));
  const root = doc.root;
  const nets = root !== null ? root.get("net") : null;
  if (nets === null || !nets.isArray) return unknown(parseError(src, "no `net:` list"));

  const ignore = input.configStrings("ignoreNids", new Array<string>());
  const bad = new Array<string>();
  const low = new Array<string>();
  let remote = 0;
  let usable = 0;
  let withHealth = 0;
  for (let n = 0; n < nets.length; n++) {
    const net = nets.at(n);
    if (net === null || !net.isObject) return unknown(parseError(src, "net entry " + (n + 1).toString() + " is not a map"));
    const nis = net.get("local NI(s)");
    if (nis === null || !nis.isArray) continue;
    for (let i = 0; i < nis.length; i++) {
      const ni = nis.at(i);
      const nid = ni !== null ? ni.getText("nid") : "";
      if (ni === null || !isValidNid(nid)) return unknown(parseError(src, "NI entry without a valid `nid`"));
      if (isLoopbackNid(nid) || ignore.includes(nid)) continue;
      remote++;
      const status = ni.getText("status");
      const hv = healthValue(ni.get("health stats"));
      if (hv >= 0) withHealth++;
      if (status != "up") {
        bad.push(nid + " (" + (status.length > 0 ? status : "no status") + ")");
      } else if (hv == 0) {
        bad.push(nid + " (health value 0)");
      } else {
        usable++;
        if (hv >= 0 && hv < MAX_HEALTH) low.push(nid + " (health value " + hv.toString() + ")");
      }
    }
  }
  if (remote == 0) return noUsable("LNet has no non-loopback NI configured (only 0@lo)");
  if (usable == 0) return noUsable("no usable LNet NI: " + humanList(bad));
  let r: Result;
  if (remote > 1 && (bad.length > 0 || low.length > 0)) {
    const parts = new Array<string>();
    if (bad.length > 0) parts.push(humanList(bad) + " not usable");
    if (low.length > 0) parts.push(humanList(low) + " in recovery");
    const msg = usable.toString() + " of " + remote.toString() + " LNet NIs usable: " + parts.join("; ");
    r = Result.warn("LnetNiDegraded", msg).health(STORAGE_DEGRADED, "LnetNiDegraded", msg);
  } else {
    r = Result.pass("LnetHealthy", remote.toString() + " LNet NI(s) up" + (withHealth > 0 ? " at full health" : ""));
    if (low.length > 0) r.message = "the only LNet NI is up but " + humanList(low) + " is in recovery";
  }
  if (withHealth == 0) r.message += "; no `health stats` printed (lnetctl older than 2.12?): only NI status judged";
  return r;
}

/** `health value` under `health stats`, or -1 when not printed or not a whole number. */
function healthValue(stats: Value | null): i32 {
  if (stats === null || !stats.isObject) return -1;
  const t = stats.getText("health value");
  if (t.length == 0 || t.length > 7) return -1;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
  }
  return I32.parseInt(t);
}
