// Can LNet reach its own NID (`lnetctl ping <lnet.selfNid>`)? The reply must
// name the NID; lnetctl's error document fails the check even with exit 0.
// lnetConfiguredAt: mount (lnet-self-ping.yaml): before LNet is configured
// (at the first mount) there is nothing to ping, and the check passes saying so.
// With `peers:` (NIDs, e.g. a file system's MGS pair from its StorageClass)
// the verdict is whether the peers answer (`require: any`, the default, or
// `all`; source lnet.peer_pings): a self-ping never leaves the node, so with
// peers it stays a fact (lnet.selfPing), not the verdict. On lnetConfiguredAt:
// mount nodes the peers count once LNet is configured, like the self-ping.
import {
  Manifest, Result, Source, CheckInput, clip, findLnetErrorIn, respond,
  oneLine, joinStrings, parseError, parseYaml, sourceFailed, textProblem, toLowerAscii, lnetPhase, phasedManifest,
} from "../sdk";

const SOURCE = "lnetctl.ping";
const PEERS = "lnet.peer_pings";
const FACT = "lnet.selfNid";

export function manifest(): string {
  return phasedManifest(new Manifest("lnet-self-ping", "1.2.1", "LNet answers a ping of its own NID (and of the configured peers)")
    .source(SOURCE)
    .source(PEERS)
    .stringsOption("peers", new Array<string>(), "NIDs that must answer an LNet ping for the node to be ready (e.g. the MGS NIDs of the StorageClass); empty: the self-ping decides")
    .stringOption("require", "any", "with peers: any (one answering is enough) or all"))
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
  const self = verdict(src, inp.fact(FACT));
  const peers = inp.configStrings("peers", new Array<string>());
  if (peers.length == 0) return answer(self);
  return answer(peerVerdict(inp, peers, self));
}

/** Readiness toward the configured peers; the self-ping's outcome is kept as the fact lnet.selfPing. */
function peerVerdict(inp: CheckInput, peers: Array<string>, self: Result): Result {
  const require = inp.configString("require", "any");
  if (require != "any" && require != "all") return Result.fail("ConfigInvalid", "require must be any or all, not \"" + clip(oneLine(require), 40) + "\"");
  const src = inp.source(PEERS);
  if (src === null) return Result.fail("SourceMissing", "source " + PEERS + " was not provided to the check");
  if (!src.ok) return Result.fail("PeersUnchecked", "cannot ping the configured peers: " + clip(oneLine(src.error), 300)).fact("lnet.selfPing", self.reason);
  const answered = new Array<string>();
  const silent = new Array<string>();
  const lines = src.stdout.split("\n");
  for (let i = 0; i < peers.length; i++) {
    let result = "missing";
    for (let k = 0; k < lines.length; k++) {
      const l = lines[k];
      if (l.startsWith("peer " + peers[i] + "=")) result = l.substring(6 + peers[i].length);
    }
    if (result.startsWith("ok/")) answered.push(peers[i]);
    else silent.push(peers[i] + " (" + result.replace("/", " ") + ")");
  }
  const ok = require == "any" ? answered.length > 0 : silent.length == 0;
  const summary = answered.length.toString() + " of " + peers.length.toString() + " peer(s) answer" + (require == "all" ? " (all required)" : "");
  const detail = silent.length > 0 ? "; no answer from " + joinStrings(silent, ", ") : "";
  const r = ok ? Result.pass("PeersReachable", summary + detail) : Result.fail("PeersUnreachable", summary + detail);
  return r.fact("lnet.selfPing", self.reason);
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
    // `peer ni:` up to 2.15; the 2.16+ netlink path prints `peer_ni:` (api-ni.c ping_props_list).
    let peers = reply.get("peer ni");
    if (peers === null) peers = reply.get("peer_ni");
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
