// Volume health (probe "volume"): can the pods using this volume read and
// write it? Run by the host in the background, once per round for each volume
// it knows (facts volume.id, volume.path, volume.stagingPath, volume.readOnly).
// Supersedes volume-lustre-mount: the same verdicts for the legacy
// volume_condition (LustreMounted / LustreNotMounted / NotLustre), plus CSI
// v1.13 health entries:
//   path not mounted / not lustre            → INACCESSIBLE NotMounted / NotLustre
//   statfs still outstanding after the bound → INACCESSIBLE MountHung
//   statfs failed (ESHUTDOWN after eviction…) → INACCESSIBLE StatfsFailed
//   its file system's MDTs down / evicted    → INACCESSIBLE MdtUnreachable / Evicted
//   some of its OSTs down / evicted          → DEGRADED OstUnreachable / Evicted
//   mounted read-only, published read-write  → DEGRADED ReadOnly
// Why a mount table is not enough: after an eviction or a lazy unmount the
// directory is still there, and a stat of it succeeds on what is underneath.
// The targets are judged from the import state files (`lctl get_param
// {osc,mdc,mgc}.*.state`, scoped by the host to this volume's mount), not the
// `*.import` listing: the states hold all this check judges at ~10x fewer bytes.
import {
  Manifest, Result, CheckInput, Source, respond, clip, oneLine, humanList, fields, splitLines, sourceFailed,
  parseLustreStates, noSuchLustreParam, lustreParamUsable, parseLfsGetname, groupByMount,
  judgeMount, LustreMount, LustreImports, VOLUME_DEGRADED, VOLUME_INACCESSIBLE, unescapeMountField, normalizeMountPath, parseMountTable, mountAt,
} from "../sdk";

const MOUNTS = "proc.mounts";
const STATES = "lctl.import_states";
const GETNAME = "lfs.getname";
const STATFS = "volume.statfs";
const GRACE_DEFAULT: i32 = 75;
/** statfs f_type of a Lustre client mount (LL_SUPER_MAGIC). */
const LUSTRE_MAGIC = "bd00bd0";

export function manifest(): string {
  return new Manifest("volume-lustre-health", "1.0.0", "the volume's paths are answering Lustre mounts whose targets are reachable")
    .source(MOUNTS)
    .source(STATES)
    .source(GETNAME)
    .source(STATFS)
    .probeKind("volume")
    .intOption("importGraceSeconds", GRACE_DEFAULT, 0, "seconds an import may stay in a state other than FULL/IDLE (reconnecting, recovering) before the volume counts as affected")
    .toJson();
}

export function check(input: string): string {
  const inp = CheckInput.parse(input);
  if (inp.error.length > 0) return respond(Result.fail("BadInput", inp.error).health(VOLUME_DEGRADED, "HealthUnknown", "cannot tell the volume's health: " + inp.error));
  return respond(evaluate(inp));
}

/** `MGSNID[:NID…]:/fsname[/subdir]` → fsname, or "". */
function fsnameOf(device: string): string {
  const at = device.lastIndexOf(":/");
  if (at < 0) return "";
  const rest = device.substring(at + 2);
  const slash = rest.indexOf("/");
  return slash < 0 ? rest : rest.substring(0, slash);
}

/** Health entries gathered in order of severity, one per (status, reason). */
class Findings {
  statuses: Array<string> = new Array<string>();
  reasons: Array<string> = new Array<string>();
  messages: Array<string> = new Array<string>();
  /** Some judged import is not FULL/IDLE: the verdict depends on the round's epoch (grace, "for N s"). */
  timeBound: bool = false;
  add(status: string, reason: string, message: string): void {
    for (let i = 0; i < this.reasons.length; i++) {
      if (this.reasons[i] == reason && this.statuses[i] == status) {
        this.messages[i] += "; " + message;
        return;
      }
    }
    this.statuses.push(status);
    this.reasons.push(reason);
    this.messages.push(message);
  }
  has(status: string): bool {
    return this.statuses.includes(status);
  }
}

const ERRNO_HINT = new Map<string, string>();
ERRNO_HINT.set("ESHUTDOWN", "Cannot send after transport endpoint shutdown: the client was evicted");
ERRNO_HINT.set("ENOTCONN", "transport endpoint is not connected");
ERRNO_HINT.set("EIO", "input/output error");
ERRNO_HINT.set("ENOENT", "the path does not exist");
ERRNO_HINT.set("EACCES", "permission denied");
ERRNO_HINT.set("ETIMEDOUT", "timed out");

function evaluate(input: CheckInput): Result {
  const paths = new Array<string>();
  const staging = input.fact("volume.stagingPath");
  const target = input.fact("volume.path");
  if (staging.length > 0) paths.push(normalizeMountPath(staging));
  if (target.length > 0 && !paths.includes(normalizeMountPath(target))) paths.push(normalizeMountPath(target));
  if (paths.length == 0) return Result.warn("NoVolumePath", "no volume path or staging path was given; nothing to check");
  const publishedRw = input.fact("volume.readOnly") == "false";

  // 1. The mount table: is each path a Lustre mount at all?
  const ms = input.source(MOUNTS);
  if (ms === null || !ms.ok) {
    const r = ms === null ? Result.fail("SourceMissing", "source " + MOUNTS + " was not provided to the check") : sourceFailed(ms);
    return r.health(VOLUME_DEGRADED, "HealthUnknown", "cannot read the mount table: " + clip(oneLine(r.message), 300));
  }
  const entries = parseMountTable(ms.stdout);
  if (entries === null) {
    const msg = "cannot parse " + MOUNTS + ": output does not look like /proc/mounts";
    return Result.fail("ParseError", msg).health(VOLUME_DEGRADED, "HealthUnknown", msg);
  }
  const missing = new Array<string>();
  const wrongType = new Array<string>();
  const devices = new Array<string>();
  const fsnames = new Array<string>();
  const readOnly = new Array<string>();
  for (let i = 0; i < paths.length; i++) {
    const e = mountAt(entries, paths[i]);
    if (e === null) missing.push(paths[i]);
    else if (e.fsType != "lustre") wrongType.push(paths[i] + " (" + e.fsType + " from " + e.device + ")");
    else {
      if (!devices.includes(e.device)) devices.push(e.device);
      const fsn = fsnameOf(e.device);
      if (fsn.length > 0 && !fsnames.includes(fsn)) fsnames.push(fsn);
      if (e.readOnly) readOnly.push(paths[i]);
    }
  }
  if (missing.length > 0) {
    const msg = "not mounted: " + humanList(missing) + " (no entry in /proc/mounts)";
    return Result.fail("LustreNotMounted", msg).health(VOLUME_INACCESSIBLE, "NotMounted", msg).stable();
  }
  if (wrongType.length > 0) {
    const msg = "mounted, but not as lustre: " + humanList(wrongType);
    return Result.fail("NotLustre", msg).health(VOLUME_INACCESSIBLE, "NotLustre", msg).stable();
  }

  const found = new Findings();
  const unknown = new Array<string>();
  // 2. statfs through the host's prober: does each mount point answer?
  const st = input.source(STATFS);
  if (st === null || !st.ok) unknown.push("statfs result unavailable" + (st !== null && st.error.length > 0 ? " (" + clip(oneLine(st.error), 100) + ")" : ""));
  else judgeStatfs(st.stdout, paths, publishedRw, found, unknown);
  if (publishedRw && readOnly.length > 0) found.add(VOLUME_DEGRADED, "ReadOnly", "mounted read-only but published read-write: " + humanList(readOnly));

  // 3. The file system's targets, through its client imports.
  judgeImports(input, paths, fsnames, found, unknown);

  if (unknown.length > 0) found.add(VOLUME_DEGRADED, "HealthUnknown", "cannot tell: " + unknown.join("; "));
  const base = humanList(paths) + " mounted from " + humanList(devices);
  // Stable (the host may reuse it while the sources are unchanged) only when
  // nothing in it depends on the round's epoch: every judged import FULL/IDLE,
  // nothing unknown, no statfs hanging (its text grows anyway).
  const stable = unknown.length == 0 && !found.timeBound && !found.reasons.includes("MountHung");
  if (found.reasons.length == 0) return stable ? Result.pass("LustreMounted", base).stable() : Result.pass("LustreMounted", base);
  // INACCESSIBLE first: it is what a reader of the first entry should see.
  const order = new Array<i32>();
  for (let i = 0; i < found.reasons.length; i++) if (found.statuses[i] == VOLUME_INACCESSIBLE) order.push(i);
  for (let i = 0; i < found.reasons.length; i++) if (found.statuses[i] != VOLUME_INACCESSIBLE) order.push(i);
  const first = order[0];
  const r = new Result(found.has(VOLUME_INACCESSIBLE) ? "fail" : "warn", found.reasons[first], "");
  const parts = new Array<string>();
  for (let k = 0; k < order.length; k++) {
    const i = order[k];
    r.health(found.statuses[i], found.reasons[i], found.messages[i], fsnames.length == 1 ? fsnames[0] : "");
    parts.push(found.reasons[i] + ": " + found.messages[i]);
  }
  r.message = parts.join("; ") + " (" + base + ")";
  return stable ? r.stable() : r;
}

/** Lines `PATH ok FSTYPE_HEX ro|rw`, `PATH hung MS`, `PATH error CODE` (PATH escaped like /proc/mounts). */
function judgeStatfs(text: string, paths: Array<string>, publishedRw: bool, found: Findings, unknown: Array<string>): void {
  const lines = splitLines(text);
  const seen = new Array<string>();
  for (let i = 0; i < lines.length; i++) {
    const f = fields(lines[i]);
    if (f.length < 2) continue;
    const path = normalizeMountPath(unescapeMountField(f[0]));
    if (!paths.includes(path)) continue;
    seen.push(path);
    const kind = f[1];
    if (kind == "ok") {
      if (f.length >= 3 && f[2].toLowerCase().replace("0x", "") != LUSTRE_MAGIC) {
        found.add(VOLUME_INACCESSIBLE, "NotLustre", path + " answers statfs as file system type 0x" + f[2].toLowerCase().replace("0x", "") + ", not Lustre (something is mounted over it)");
      }
      if (publishedRw && f.length >= 4 && f[3] == "ro") found.add(VOLUME_DEGRADED, "ReadOnly", path + " is read-only (statfs) but was published read-write");
    } else if (kind == "hung") {
      const ms = f.length >= 3 ? f[2] : "?";
      found.add(VOLUME_INACCESSIBLE, "MountHung", path + ": statfs has not returned after " + ms + " ms (the mount hangs; processes using it block)");
    } else if (kind == "error") {
      const code = f.length >= 3 ? f[2] : "unknown";
      const hint = ERRNO_HINT.has(code) ? " (" + ERRNO_HINT.get(code) + ")" : "";
      found.add(VOLUME_INACCESSIBLE, "StatfsFailed", path + ": statfs failed with " + clip(code, 32) + hint);
    } else {
      unknown.push("statfs line for " + path + " not understood: " + clip(oneLine(lines[i]), 80));
    }
  }
  for (let i = 0; i < paths.length; i++) if (!seen.includes(paths[i])) unknown.push("no statfs result for " + paths[i]);
}

function judgeImports(input: CheckInput, paths: Array<string>, fsnames: Array<string>, found: Findings, unknown: Array<string>): void {
  const src = input.source(STATES);
  if (src === null || noSuchLustreParam(src) || !lustreParamUsable(src) || src.truncated) {
    unknown.push("Lustre imports unreadable" + (src !== null && src.error.length > 0 ? " (" + clip(oneLine(src.error), 100) + ")" : ""));
    return;
  }
  const parsed = parseLustreStates(src.stdout);
  if (parsed.error.length > 0 || parsed.imports.length == 0) {
    unknown.push("cannot parse " + STATES + ": " + (parsed.error.length > 0 ? parsed.error : "no state block"));
    return;
  }
  const mounts = selectMounts(input, parsed, paths, fsnames);
  if (mounts.length == 0) {
    unknown.push("no Lustre imports for " + humanList(fsnames));
    return;
  }
  const epoch = input.roundEpoch;
  const grace = <i64>input.configInt("importGraceSeconds", GRACE_DEFAULT);
  for (let i = 0; i < mounts.length; i++) {
    const m = mounts[i];
    const j = judgeMount(m, epoch, grace);
    if (j.allMdtsDown && j.badMdts.length > 0) found.add(VOLUME_INACCESSIBLE, "MdtUnreachable", m.fs + ": every MDT unreachable: " + humanList(j.badMdts));
    else if (j.badMdts.length > 0) found.add(VOLUME_DEGRADED, "MdtUnreachable", m.fs + ": " + humanList(j.badMdts) + " not FULL/IDLE (" + j.badMdts.length.toString() + " of " + j.mdtCount.toString() + " MDTs)");
    if (j.evictedMdts.length > 0) found.add(VOLUME_INACCESSIBLE, "Evicted", m.fs + ": evicted by " + humanList(j.evictedMdts));
    if (j.badOsts.length > 0) found.add(VOLUME_DEGRADED, "OstUnreachable", m.fs + ": " + humanList(j.badOsts) + " not FULL/IDLE (" + j.badOsts.length.toString() + " of " + j.ostCount.toString() + " OSTs): files striped over them cannot be read or written");
    if (j.evictedOsts.length > 0) found.add(VOLUME_DEGRADED, "Evicted", m.fs + ": evicted by " + humanList(j.evictedOsts));
    if (j.settling > 0 || j.badMdts.length + j.evictedMdts.length + j.badOsts.length + j.evictedOsts.length > 0) found.timeBound = true;
  }
}

/** The mounts behind the paths: by `lfs getname` when it names a path, else every mount of the file system. */
function selectMounts(input: CheckInput, parsed: LustreImports, paths: Array<string>, fsnames: Array<string>): Array<LustreMount> {
  const all = groupByMount(parsed);
  const keys = new Array<string>();
  const gn = input.source(GETNAME);
  if (gn !== null && gn.ok) {
    const names = parseLfsGetname(gn.stdout);
    for (let i = 0; i < names.length; i++) {
      if (paths.includes(normalizeMountPath(unescapeMountField(names[i].mountpoint))) && !keys.includes(names[i].key)) keys.push(names[i].key);
    }
  }
  const out = new Array<LustreMount>();
  for (let i = 0; i < all.length; i++) {
    const m = all[i];
    if (keys.length > 0 ? keys.includes(m.key) : fsnames.includes(m.fs)) out.push(m);
  }
  return out;
}
