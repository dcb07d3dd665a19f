// Can LNet reach its own NID (`lnetctl ping <lnet.selfNid>`)? The reply must
// name the NID; lnetctl's error document fails the check even with exit 0.
// lnetConfiguredAt: mount (lnet-self-ping.yaml): before LNet is configured
// (at the first mount) there is nothing to ping, and the check passes saying so.
import {
  Manifest, Result, Source, CheckInput, clip, findLnetErrorIn, respond,
  oneLine, parseError, parseYaml, sourceFailed, textProblem, toLowerAscii, lnetPhase, phasedManifest,
} from "../sdk";

const SOURCE = "lnetctl.ping";
const FACT = "lnet.selfNid";

export function manifest(): string {
  return phasedManifest(new Manifest("lnet-self-ping", "1.1.0", "LNet answers a ping of its own NID")
    .source(SOURCE))
    .toJson();
}

export function check(input: string): string {
  const inp = CheckInput.parse(input);
  if (inp.error.length > 0) return answer(Result.fail("BadInput", inp.error));
  const phase = lnetPhase(inp);
  if (phase.error.length > 0) return answer(Result.fail("ConfigInvalid", phase.error));
  if (!phase.configured) return answer(Result.pass("LnetNotYetConfigured", phase.label() + ": no NID to ping until the first mount configures LNet"));
  const src = inp.source(SOURCE);
  if (src === null) return answer(Result.fail("SourceMissing", "source " + SOURCE + " was not provided to the check"));
  return answer(verdict(src, inp.fact(FACT)));
}

/** Stable: the verdict depends on the ping's output and the NID fact alone (no epoch, no events). */
function answer(r: Result): string {
  return respond(r.stable());
}

function verdict(src: Source, selfNid: string): Result {
  if (src.error.indexOf(FACT) >= 0 || (src.ok && selfNid.length == 0)) {
    return Result.fail("SelfNidUnavailable", "no NID to ping: fact " + FACT + " is not available (see check lnet-nids)");
  }
  // lnetctl puts its error document on stdout or stderr depending on version;
  // it explains a non-zero exit better than the exit status does.
  let err = findLnetErrorIn(src.stdout);
  if (err === null) err = findLnetErrorIn(src.stderr);
  if (err !== null) {
    return Result.fail("PingFailed", "lnetctl ping " + selfNid + " failed: " + clip(oneLine(err.descr.length > 0 ? err.descr : "errno " + err.errno), 300));
  }
  if (!src.ok) {
    if (src.error.startsWith("ETIMEDOUT")) {
      return Result.fail("PingTimeout", "lnetctl ping " + selfNid + " timed out: " + oneLine(src.error));
    }
    return sourceFailed(src);
  }
  const problem = textProblem(src.stdout);
  if (problem.length > 0) return parseError(src, "output " + problem);
  if (src.truncated) return parseError(src, "output was truncated");

  const doc = parseYaml(src.stdout);
  const root = doc.root;
  const replies = root !== null ? root.get("ping") : null;
  if (replies === null || !replies.isArray || replies.length == 0) {
    return parseError(src, "no `ping:` reply list");
  }
  const want = toLowerAscii(selfNid);
  let named = 0;
  for (let i = 0; i < replies.length; i++) {
    const reply = replies.at(i);
    if (reply === null || !reply.isObject) continue;
    if (toLowerAscii(reply.getText("primary nid")) == want) return pingOk(selfNid);
    if (reply.has("primary nid")) named++;
    const peers = reply.get("peer ni");
    if (peers === null) continue;
    for (let p = 0; p < peers.length; p++) {
      const ni = peers.at(p);
      if (ni === null) continue;
      named++;
      if (toLowerAscii(ni.getText("nid")) == want) return pingOk(selfNid);
    }
  }
  if (named == 0) return parseError(src, "ping reply names no NID");
  return Result.fail("PingNidMismatch", "lnetctl ping reply does not name " + selfNid);
}

function pingOk(nid: string): Result {
  return Result.pass("SelfPingOk", "LNet answered a ping of its own NID " + nid);
}
