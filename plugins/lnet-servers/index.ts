// Storage health (probe "storage"): does every server this node's Lustre file
// systems use answer at the LNet level? Reads `lnet.server_pings` (the
// gateway pings each server's NIDs, at most once per NID per interval, and
// prints one line per server: `server FS ROLE TARGETS NID=RESULT…`; see
// plugins/ABI.md). The imports (lustre-imports) notice a lost server only
// after Lustre's own timeouts, and an IDLE OSC says nothing about its server
// now; this check says whether the path to each server works, with its own
// reasons so both can stand:
// - LnetMdsUnreachable: STORAGE_UNREACHABLE when no MDS of a file system
//   answers, STORAGE_DEGRADED when some do not;
// - LnetOssUnreachable, LnetMgsUnreachable: STORAGE_DEGRADED;
// - LnetPingUnknown (STORAGE_DEGRADED): a ping hung, or could not be run or
//   read (lnetctl missing, LNet down here): cannot tell is never healthy.
// A server is reachable when any of its NIDs answered (a failover pair is one
// server); unreachable when every NID timed out or was refused; not yet
// pinged servers are said in the message, never reported healthy by name.
import {
  Manifest, Result, CheckInput, Source, respond, clip, oneLine, humanList, joinStrings, UniqueList, HealthReport,
  STORAGE_DEGRADED, STORAGE_UNREACHABLE, sourceFailed,
} from "../sdk";

const SOURCE = "lnet.server_pings";

export function manifest(): string {
  return new Manifest("lnet-servers", "1.0.0", "every Lustre server (MGS, MDS, OSS) of the mounted file systems answers an LNet ping")
    .source(SOURCE)
    .probeKind("storage")
    .toJson();
}

export function check(input: string): string {
  const inp = CheckInput.parse(input);
  if (inp.error.length > 0) return respond(unknown("the check input: " + inp.error));
  const src = inp.source(SOURCE);
  if (src === null) return respond(unknown("source " + SOURCE + " was not provided to the check"));
  // Stable while it reports nothing wrong: on a node with no Lustre mount (no
  // server to ping) a storage round then calls no plugin. A verdict with
  // entries is judged anew each round, as lnet-peer-health's; and where a
  // server answered, its `ok/MS` changes the source at every ping anyway.
  const r = evaluate(src!);
  return r.healthEntries.length == 0 ? respond(r.stable()) : respond(r);
}

function unknown(what: string): Result {
  return Result.warn("LnetPingUnknown", "cannot tell whether the Lustre servers answer LNet pings: " + clip(oneLine(what), 400))
    .health(STORAGE_DEGRADED, "LnetPingUnknown", "cannot tell whether the Lustre servers answer LNet pings: " + clip(oneLine(what), 400));
}

const REACHABLE: i32 = 0;
const UNREACHABLE: i32 = 1;
const UNKNOWN: i32 = 2;
const PENDING: i32 = 3;

class Server {
  fs: string = "";
  role: string = "";
  targets: string = "";
  nids: Array<string> = new Array<string>();
  results: Array<string> = new Array<string>();
  verdict: i32 = PENDING;
}

function judge(s: Server): i32 {
  let ok = false;
  let pending = false;
  let down = 0;
  for (let i = 0; i < s.results.length; i++) {
    const r = s.results[i];
    if (r.startsWith("ok/")) ok = true;
    else if (r == "pending" || r == "skipped") pending = true;
    else if (r == "timeout" || r.startsWith("fail/")) down++;
  }
  if (ok) return REACHABLE;
  if (pending) return PENDING;
  return down == s.results.length && down > 0 ? UNREACHABLE : UNKNOWN;
}

/** `10.0.0.3@tcp (timeout)`, the NIDs of one server with what each answered. */
function describe(s: Server): string {
  const parts = new Array<string>();
  for (let i = 0; i < s.nids.length; i++) parts.push(s.nids[i] + " (" + s.results[i].replace("/", " ") + ")");
  return joinStrings(parts, ", ");
}

const NO_ANSWER = "no LNet answer: ";
const CANNOT_TELL = "cannot tell whether these answer LNet pings: ";

function evaluate(src: Source): Result {
  if (!src.ok) return unknown(sourceFailed(src).message);
  const servers = new Array<Server>();
  const unparsed = new Array<string>();
  const lines = src.stdout.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.length == 0) continue;
    const f = line.split(" ");
    if (f[0] == "unparsed" && f.length >= 3) {
      unparsed.push((f[1] == "-" ? "" : f[1] + ": ") + line.substring(f[0].length + f[1].length + 2));
      continue;
    }
    if (f[0] != "server" || f.length < 5) return unknown("cannot parse " + SOURCE + ": line " + (i + 1).toString() + ": " + clip(line, 120));
    const s = new Server();
    s.fs = f[1];
    s.role = f[2];
    s.targets = f[3];
    for (let k = 4; k < f.length; k++) {
      const eq = f[k].lastIndexOf("=");
      if (eq <= 0) return unknown("cannot parse " + SOURCE + ": " + clip(f[k], 120));
      s.nids.push(f[k].substring(0, eq));
      s.results.push(f[k].substring(eq + 1));
    }
    s.verdict = judge(s);
    servers.push(s);
  }
  if (src.truncated) return unknown(SOURCE + " was truncated");

  const fss = new UniqueList();
  for (let i = 0; i < servers.length; i++) fss.add(servers[i].fs);
  const report = new HealthReport();
  let reachable = 0;
  let pending = 0;
  for (let n = 0; n < fss.length; n++) {
    const fs = fss.items[n];
    let mds = 0;
    const downMds = new Array<string>();
    for (let i = 0; i < servers.length; i++) {
      const s = servers[i];
      if (s.fs != fs) continue;
      if (s.verdict == REACHABLE) reachable++;
      if (s.verdict == PENDING) pending++;
      if (s.role == "mds") {
        mds++;
        if (s.verdict == UNREACHABLE) downMds.push(s.targets.replaceAll(",", "/") + " on " + describe(s));
      }
      if (s.verdict == UNREACHABLE && s.role == "oss") report.add(STORAGE_DEGRADED, "LnetOssUnreachable", fs, fs + ": " + s.targets.replaceAll(",", "/") + " on " + describe(s), NO_ANSWER);
      if (s.verdict == UNREACHABLE && s.role == "mgs") report.add(STORAGE_DEGRADED, "LnetMgsUnreachable", fs, fs + ": MGS " + describe(s), NO_ANSWER);
      if (s.verdict == UNKNOWN) report.add(STORAGE_DEGRADED, "LnetPingUnknown", fs, fs + ": " + s.role.toUpperCase() + " " + describe(s), CANNOT_TELL);
    }
    if (downMds.length > 0) {
      const all = downMds.length == mds;
      report.add(all ? STORAGE_UNREACHABLE : STORAGE_DEGRADED, "LnetMdsUnreachable", fs,
        fs + ": " + (all ? "no MDS answers: " : downMds.length.toString() + " of " + mds.toString() + " MDS do not answer: ") + joinStrings(downMds, "; "), NO_ANSWER);
    }
  }

  const r = Result.pass("LnetServersReachable", "");
  // With entries the verdict is the report's (warn, or fail for an unreachable MDS); the notes below add to it.
  if (!report.applyTo(r, 1000)) {
    if (servers.length == 0 && unparsed.length > 0) {
      r.reason = "LnetServersNotChecked";
      r.message = "no server NID could be read";
    } else if (servers.length == 0) {
      r.reason = "NoLustreServers";
      r.message = "no Lustre server to ping (no Lustre file system mounted)";
    } else {
      r.message = reachable.toString() + " server(s) of " + humanList(fss.items, 5) + " answer LNet pings";
    }
  }
  if (pending > 0) r.message += "; " + pending.toString() + " server(s) not pinged yet";
  if (unparsed.length > 0) r.message += "; not checked (NIDs unknown): " + clip(joinStrings(unparsed, "; "), 300);
  return r;
}
