// Storage health (probe "storage"): does LNet consider the paths to its peers
// (the Lustre servers, routers) healthy? From `lnetctl peer show -v 3`: each
// peer NI's `health value` under `health stats` (1000 = healthy; a failed
// send or a timeout to that NI takes health_sensitivity off it, and LNet
// prefers the peer's other NIs while it recovers). A peer NI below 1000 gives
// STORAGE_DEGRADED `LnetPeerNiDegraded` naming it, its peer's primary NID and
// the counters LNet kept (dropped, timeout, error, network timeout). Same
// shape in 2.12–2.17 (2.16+ may quote NIDs; the YAML reader unquotes). The
// node's own NIs are lnet-health's (`net show -v 3`).
import {
  Manifest, Result, CheckInput, Value, respond, clip, oneLine, humanList, findLnetErrorIn, parseYaml, sourceFailed, parseError,
  programMissing, STORAGE_DEGRADED,
} from "../sdk";

const SOURCE = "lnetctl.peer_show_health";
const MAX_HEALTH: i32 = 1000;

export function manifest(): string {
  return new Manifest("lnet-peer-health", "1.0.0", "every LNet peer NI (servers, routers) is at full LNet health")
    .source(SOURCE)
    .probeKind("storage")
    .toJson();
}

export function check(input: string): string {
  const inp = CheckInput.parse(input);
  if (inp.error.length > 0) return respond(unknown(Result.fail("BadInput", inp.error)));
  const r = evaluate(inp);
  return r.healthEntries.length == 0 ? respond(r.stable()) : respond(r);
}

function unknown(r: Result): Result {
  const msg = "cannot tell the health of LNet peers: " + clip(oneLine(r.message), 400);
  return Result.warn("HealthUnknown", msg).health(STORAGE_DEGRADED, "HealthUnknown", msg);
}

function counter(stats: Value, key: string): string {
  const t = stats.getText(key);
  return t.length > 0 && t != "0" ? key + " " + t : "";
}

function evaluate(input: CheckInput): Result {
  const src = input.source(SOURCE);
  if (src === null) return unknown(Result.fail("SourceMissing", "source " + SOURCE + " was not provided to the check"));
  // LNet down: lnet-health says so; nothing about peers to report here.
  let err = findLnetErrorIn(src.stdout);
  if (err === null && !src.ok) err = findLnetErrorIn(src.stderr);
  if (err !== null && !programMissing(src) && !src.truncated) return Result.pass("NoPeers", "no LNet peers to judge: " + clip(oneLine(err.descr), 200));
  // Not run by the gateway: nothing Lustre is mounted, so a client has no servers to judge.
  if (!src.ok && src.error.startsWith("not run: ")) return Result.pass("NoPeers", "no LNet peers to judge: " + clip(oneLine(src.error.substring(9)), 200));
  if (!src.ok) return unknown(sourceFailed(src));
  if (src.truncated) return unknown(parseError(src, "output was truncated"));
  if (src.stdout.trim().length == 0) return Result.pass("NoPeers", "LNet has no peers yet");
  const doc = parseYaml(src.stdout);
  const root = doc.root;
  const peers = root !== null ? root.get("peer") : null;
  if (peers === null || !peers.isArray) return unknown(parseError(src, "no `peer:` list"));
  const low = new Array<string>();
  let nis = 0;
  let withHealth = 0;
  for (let p = 0; p < peers.length; p++) {
    const peer = peers.at(p);
    if (peer === null || !peer.isObject) return unknown(parseError(src, "peer entry " + (p + 1).toString() + " is not a map"));
    const primary = peer.getText("primary nid");
    const list = peer.get("peer ni");
    if (list === null || !list.isArray) continue;
    for (let i = 0; i < list.length; i++) {
      const ni = list.at(i);
      if (ni === null || !ni.isObject) continue;
      nis++;
      const stats = ni.get("health stats");
      if (stats === null || !stats.isObject) continue;
      const t = stats.getText("health value");
      if (t.length == 0 || t.length > 7) continue;
      let digits = true;
      for (let k = 0; k < t.length; k++) if (t.charCodeAt(k) < 48 || t.charCodeAt(k) > 57) digits = false;
      if (!digits) continue;
      withHealth++;
      const hv = I32.parseInt(t);
      if (hv >= MAX_HEALTH) continue;
      const nid = ni.getText("nid");
      const counters = new Array<string>();
      const keys = ["dropped", "timeout", "error", "network timeout"];
      for (let k = 0; k < keys.length; k++) {
        const c = counter(stats!, keys[k]);
        if (c.length > 0) counters.push(c);
      }
      low.push(nid + (primary.length > 0 && primary != nid ? " of peer " + primary : "") + " (health value " + hv.toString() + (counters.length > 0 ? "; " + counters.join(", ") : "") + ")");
    }
  }
  if (low.length > 0) {
    const msg = low.length.toString() + " of " + nis.toString() + " LNet peer NI(s) below full health: " + humanList(low, 8);
    return Result.warn("LnetPeerNiDegraded", msg).health(STORAGE_DEGRADED, "LnetPeerNiDegraded", msg);
  }
  const r = Result.pass("LnetPeersHealthy", nis.toString() + " LNet peer NI(s) of " + peers.length.toString() + " peer(s) at full health");
  if (withHealth == 0 && nis > 0) r.message += "; no `health stats` printed: nothing judged";
  return r;
}
