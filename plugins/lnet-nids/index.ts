// Does LNet have at least one valid non-loopback NID? Publishes the first one
// as `lnet.selfNid` for the self-ping check.
import { Manifest, Result, checkSource, humanList, Opened, parseError, nidKind, NID_INVALID, NID_LOOPBACK, clip, oneLine, lineEnd, isSpace } from "../sdk";

const SOURCE = "lctl.list_nids";

export function manifest(): string {
  return new Manifest("lnet-nids", "1.0.0", "LNet has a valid non-loopback NID")
    .source(SOURCE)
    .toJson();
}

export function check(input: string): string {
  return checkSource(input, SOURCE, evaluate);
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
