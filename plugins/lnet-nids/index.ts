// Does LNet have at least one valid non-loopback NID? Publishes the first one
// as `lnet.selfNid` for the self-ping check.
import { Manifest, Result, respond, humanList, openSource, parseError, parseNid, splitLines, clip, oneLine } from "../sdk";

const SOURCE = "lctl.list_nids";

export function manifest(): string {
  return new Manifest("lnet-nids", "1.0.0", "LNet has a valid non-loopback NID")
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

  const remote = new Array<string>();
  const ignored = new Array<string>();
  let loopback = 0;
  const lines = splitLines(o.text);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line.length == 0) continue;
    const nid = parseNid(line);
    if (nid === null) ignored.push(clip(oneLine(line), 40));
    else if (nid.isLoopback) loopback++;
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
  if (ignored.length > 0) r.message += "; ignored line(s): " + humanList(ignored, 3);
  return r;
}
