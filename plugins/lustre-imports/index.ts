// Storage health (probe "storage"): can this node reach the targets of every
// Lustre file system it has mounted? Reads each client import's state file
// (`lctl get_param {osc,mdc,mgc}.*.state`: current state and state history;
// the target, file system and mount instance are in the device name) and
// which mount is which (`lfs getname`). Not the `*.import` listing: it holds
// nothing more this check judges and costs ~10x the bytes to move and parse
// every round (issue #30's round cost and RSS).
//
// FULL and IDLE are healthy (IDLE: an OSC that let an unused connection go).
// Any other state is normal for a few seconds during a reconnect, so it counts
// only once held longer than `importGraceSeconds` (default 75 s: three 25 s
// ping intervals); EVICTED counts at once, and an eviction seen in a state
// history after the previous round is reported as an event even when the
// import is FULL again by now (evictions recover on their own within seconds,
// and the applications that were writing lost their data all the same).
//
// The verdict is `stable` (the host may keep it while the listing is byte for
// byte the same, plugins/ABI.md "Health") when nothing in it depends on the
// round: no Lustre mounted, or every MDC/OSC/MGC FULL or IDLE (nothing within
// or beyond a grace, nothing EVICTED, no "for N s"), no event, and no
// eviction in a history stamped after this round's epoch (one a later round
// would report as new). Anything that cannot be read is never stable.
import {
  Manifest, Result, CheckInput, Source, respond, clip, oneLine, humanList, UniqueList,
  parseLustreStates, noSuchLustreParam, lustreParamUsable, parseLfsGetname, mountpointsOf,
  groupByMount, mgcsOf, judgeMount, mgcDown, describeImport, LustreImport, LustreImports, LustreMount, LustreMountName, HealthReport,
  STORAGE_DEGRADED, STORAGE_UNREACHABLE, sourceFailed, parseError,
} from "../sdk";

const STATES = "lctl.import_states";
const GETNAME = "lfs.getname";
const GRACE_DEFAULT: i32 = 75;

export function manifest(): string {
  return new Manifest("lustre-imports", "1.0.0", "every target of every mounted Lustre file system is connected (imports FULL or IDLE)")
    .source(STATES)
    .source(GETNAME)
    .probeKind("storage")
    .intOption("importGraceSeconds", GRACE_DEFAULT, 0, "seconds an import may stay in a state other than FULL/IDLE (reconnecting, recovering) before it counts as unreachable")
    .toJson();
}

export function check(input: string): string {
  const inp = CheckInput.parse(input);
  if (inp.error.length > 0) return respond(unknown(Result.fail("BadInput", inp.error), "the check input"));
  return respond(evaluate(inp));
}

/** "Cannot tell" is never healthy, nor proof of an outage: one STORAGE_DEGRADED/HealthUnknown entry. */
function unknown(r: Result, what: string): Result {
  return r.health(STORAGE_DEGRADED, "HealthUnknown", "cannot tell whether Lustre targets are reachable: " + what + ": " + clip(oneLine(r.message), 400));
}

function label(m: LustreMount, names: Array<LustreMountName>, namesOk: bool, mounts: Array<LustreMount>): string {
  const at = mountpointsOf(names, m.key);
  if (at.length > 0) return m.fs + " at " + humanList(at, 3);
  // Two mounts of one file system are told apart by instance when lfs getname did not say.
  let same = 0;
  for (let i = 0; i < mounts.length; i++) if (mounts[i].fs == m.fs) same++;
  return same > 1 || !namesOk ? m.fs + " (instance " + m.instance + ")" : m.fs;
}

function evaluate(input: CheckInput): Result {
  const src = input.source(STATES);
  if (src === null) return unknown(Result.fail("SourceMissing", "source " + STATES + " was not provided to the check"), STATES);
  if (noSuchLustreParam(src)) return Result.pass("NoLustreMounts", "no Lustre file system is mounted (lctl get_param finds no import)").stable();
  if (!lustreParamUsable(src)) return unknown(sourceFailed(src), "lctl get_param *.state");
  if (src.truncated) return unknown(parseError(src, "output was truncated"), "lctl get_param *.state");
  const parsed = parseLustreStates(src.stdout);
  if (parsed.error.length > 0) return unknown(parseError(src, parsed.error), "lctl get_param *.state");
  if (parsed.imports.length == 0) {
    return unknown(parseError(src, src.stdout.trim().length == 0 ? "output is empty" : "no state block"), "lctl get_param *.state");
  }

  const epoch = input.roundEpoch;
  const grace = <i64>input.configInt("importGraceSeconds", GRACE_DEFAULT);
  const gn = input.source(GETNAME);
  const namesOk = gn !== null && gn.ok;
  const names = namesOk ? parseLfsGetname(gn!.stdout) : new Array<LustreMountName>();

  const mounts = groupByMount(parsed);
  const report = new HealthReport();
  const r = new Result("pass", "ImportsHealthy", "");
  let settling = 0;
  let targets = 0;
  for (let i = 0; i < mounts.length; i++) {
    const m = mounts[i];
    const j = judgeMount(m, epoch, grace);
    settling += j.settling;
    targets += j.mdtCount + j.ostCount;
    const name = label(m, names, namesOk, mounts);
    if (j.allMdtsDown && j.badMdts.length > 0) {
      report.add(STORAGE_UNREACHABLE, "MdtUnreachable", m.fs, name + ": every MDT unreachable: " + humanList(j.badMdts) + beyond(grace));
    } else if (j.badMdts.length > 0) {
      report.add(STORAGE_DEGRADED, "MdtUnreachable", m.fs, name + ": " + humanList(j.badMdts) + " not FULL/IDLE" + beyond(grace) + " (" + j.badMdts.length.toString() + " of " + j.mdtCount.toString() + " MDTs)");
    }
    if (j.evictedMdts.length > 0) report.add(STORAGE_UNREACHABLE, "Evicted", m.fs, name + ": evicted by " + humanList(j.evictedMdts));
    if (j.badOsts.length > 0) {
      report.add(STORAGE_DEGRADED, "OstUnreachable", m.fs, name + ": " + humanList(j.badOsts) + " not FULL/IDLE" + beyond(grace) + " (" + j.badOsts.length.toString() + " of " + j.ostCount.toString() + " OSTs)");
    }
    if (j.evictedOsts.length > 0) report.add(STORAGE_DEGRADED, "Evicted", m.fs, name + ": evicted by " + humanList(j.evictedOsts));
    // Evictions that happened since the previous round, recovered or not.
    const prev = input.previousEpoch;
    if (prev > 0) {
      addEvents(r, m.mdts, prev, epoch);
      addEvents(r, m.osts, prev, epoch);
    }
  }
  const mgcs = mgcsOf(parsed);
  const fsNames = new UniqueList();
  for (let i = 0; i < mounts.length; i++) fsNames.add(mounts[i].fs);
  for (let i = 0; i < mgcs.length; i++) {
    if (!mgcDown(mgcs[i], epoch, grace)) continue;
    const fs = fsNames.length == 1 ? fsNames.items[0] : "";
    report.add(STORAGE_DEGRADED, "MgsUnreachable", fs, "MGS unreachable through " + mgcs[i].device + " " + describeImport(mgcs[i], epoch).substring(4) + (fsNames.length > 0 ? "; mounted: " + humanList(fsNames.items, 5) : ""));
  }

  if (!report.applyTo(r)) {
    r.message = targets.toString() + " target(s) of " + humanList(fsNames.items, 5) + " FULL or IDLE" + (mgcs.length > 0 ? ", MGS connected" : "");
    if (mounts.length == 0) r.message = "no Lustre mount has imports; " + mgcs.length.toString() + " MGC(s) connected";
  }
  if (settling > 0) r.message += "; " + settling.toString() + " target(s) reconnecting within the " + grace.toString() + " s grace";
  if (r.events.length > 0) r.message += "; " + r.events.length.toString() + " eviction(s) since the previous round";
  if (parsed.stray > 0) r.message += "; ignored " + parsed.stray.toString() + " unexpected line(s)";
  return timeless(parsed, epoch, r) ? r.stable() : r;
}

/** Whether the verdict would be the same at any later round on the same listing (see the top of this file). */
function timeless(parsed: LustreImports, epoch: i64, r: Result): bool {
  if (r.events.length > 0 || r.healthEntries.length > 0) return false;
  for (let i = 0; i < parsed.imports.length; i++) {
    const imp = parsed.imports[i];
    if (!imp.healthy) return false;
    for (let k = 0; k < imp.evictedAt.length; k++) if (epoch <= 0 || imp.evictedAt[k] > epoch) return false;
  }
  return true;
}

function beyond(grace: i64): string {
  return " beyond the " + grace.toString() + " s grace";
}

function addEvents(r: Result, imps: Array<LustreImport>, prev: i64, epoch: i64): void {
  for (let i = 0; i < imps.length; i++) {
    const imp = imps[i];
    for (let k = 0; k < imp.evictedAt.length; k++) {
      const at = imp.evictedAt[k];
      if (at > prev && (epoch <= 0 || at <= epoch)) r.event("Evicted", imp.fs, imp.targetName, at);
    }
  }
}
