// Does LNet have at least one valid non-loopback NID? Publishes the first one
// as `lnet.selfNid` for the self-ping check.
// lnetConfiguredAt: mount (lnet-nids.yaml): before LNet is configured (at the
// first mount) there is no NID yet; the check then asks that the client
// tools the mount needs, lctl and mount.lustre, are present.
import {
  Manifest, Result, humanList, Opened, parseError, nidKind, NID_INVALID, NID_LOOPBACK, clip, oneLine, lineEnd, isSpace,
  CheckInput, LnetPhase, checkSourcePhased, phasedManifest, programMissing, missingDetail,
} from "../sdk";

const SOURCE = "lctl.list_nids";
const MOUNT_TOOL = "mount_lustre.version";

export function manifest(): string {
  return phasedManifest(new Manifest("lnet-nids", "1.1.0", "LNet has a valid non-loopback NID")
    .source(SOURCE)
    .source(MOUNT_TOOL))
    .toJson();
}

export function check(input: string): string {
  // Stable: nothing here depends on the round (no epoch, no events); the host may keep a verdict while the sources read the same.
  return checkSourcePhased(input, SOURCE, evaluate, beforeConfigured, true);
}

/** A tool is present when running it did anything but "not found" (lctl fails without LNet; that is an answer). */
function beforeConfigured(input: CheckInput, phase: LnetPhase): Result {
  const lctl = input.source(SOURCE);
  const mount = input.source(MOUNT_TOOL);
  if (lctl === null) return Result.fail("SourceMissing", "source " + SOURCE + " was not provided to the check");
  if (mount === null) return Result.fail("SourceMissing", "source " + MOUNT_TOOL + " was not provided to the check");
  const missing = new Array<string>();
  if (programMissing(lctl)) missing.push("lctl (" + missingDetail(lctl) + ")");
  if (programMissing(mount)) missing.push("mount.lustre (" + missingDetail(mount) + ")");
  if (missing.length > 0) return Result.fail("ToolsMissing", phase.label() + ": Lustre client tool(s) not found: " + missing.join("; "));
  return Result.pass("LnetNotYetConfigured", phase.label() + ": lctl and mount.lustre present; NIDs appear at the first mount");
}

function evaluate(o: Opened): Result {
  const remote = new Array<string>();
  const ignored = new Array<string>();
  let loopback = 0;
  let ignoredCount = 0;
  const text = o.text;
  const n = text.length;
  let start = 0;
  while (start < n) {
    const nl = lineEnd(text, start);
    // Trim ASCII blanks in place; String#trim also strips Unicode spaces, so
    // lines with any non-ASCII edge take the general path.
    let a = start;
    let b = nl;
    while (a < b && isSpace(text.charCodeAt(a))) a++;
    while (b > a && isSpace(text.charCodeAt(b - 1))) b--;
    const edgesAscii = a == b || (text.charCodeAt(a) < 128 && text.charCodeAt(b - 1) < 128);
    const line = edgesAscii ? text.substring(a, b) : text.substring(start, nl).trim();
    start = nl + 1;
    if (line.length == 0) continue;
    const kind = nidKind(line);
    if (kind == NID_INVALID) {
      // The message names at most three; the rest are only counted.
      if (ignored.length < 3) ignored.push(clip(oneLine(line), 40));
      ignoredCount++;
    } else if (kind == NID_LOOPBACK) loopback++;
    else remote.push(line);
  }
  if (remote.length == 0 && loopback == 0) {
    return parseError(o.source, "no NID in output (first line: " + (ignored.length > 0 ? ignored[0] : "") + ")");
  }
  let r: Result;
  if (remote.length == 0) {
    r = Result.fail("NoNonLoopbackNid", "LNet has only the loopback NID 0@lo");
  } else {
    r = Result.pass("NidsValid", "non-loopback NID(s): " + humanList(remote)).fact("lnet.selfNid", remote[0]);
  }
  if (ignoredCount > 0) {
    const more = ignoredCount - ignored.length;
    r.message += "; ignored line(s): " + (more > 0 ? ignored.join(", ") + " and " + more.toString() + " more" : humanList(ignored, 3));
  }
  return r;
}
