// Lustre client state as `lctl get_param` prints it, 2.12 to 2.17
// (shared/LUSTRE-CLIENT-HEALTH.md §1, §2, §7): state listings, import blocks,
// state histories and `lfs getname`. One pass over the text, looking only at
// the few keys that matter (current_state and history entries; name, target,
// state, idle, current_connection in import blocks) and at the parameter
// lines; every other line is skipped without a string being made, so 1,000
// OSTs parse in one sweep. Unknown keys and unknown state words are
// tolerated; a block without its state (`current_state:` / `state:`) is damage.
// The bundled checks read the state listing alone (parseLustreStates): it is
// ~10x smaller than the import listing and holds all they judge.

import { Source } from "./abi";
import { lineEnd, unitAt, slice, isSpace, allDigits } from "./strings";

/** One client import (one target of one mount, or the MGC). */
export class LustreImport {
  /** "osc", "mdc" or "mgc". */
  kind: string = "";
  /** The obd device, e.g. `lustrefs-OST0003-osc-ffff8f0a3b5c9000`, `MGC10.0.0.2@tcp`. */
  device: string = "";
  /** File system name ("" for the MGC). */
  fs: string = "";
  /** `OST0003`, `MDT0000`, or `MGS`. */
  target: string = "";
  /** Mount instance (16 hex digits); "" for the MGC. */
  instance: string = "";
  /** `state:` as printed (`FULL`, `DISCONN`, …), "" if the block had none. */
  state: string = "";
  /** `idle: N sec` (seconds since the last reply), -1 when not printed. */
  idleSec: i64 = -1;
  /** `current_connection:` without quotes (2.16+ quotes NIDs); "" when absent. */
  connection: string = "";
  /** From the state history: since when the import has been in not-healthy states without a break; -1 unknown. */
  unhealthySince: i64 = -1;
  /** True once its `.state` block was found. */
  hasHistory: bool = false;
  /** Timestamps of EVICTED entries in the state history. */
  evictedAt: Array<i64> = new Array<i64>();

  /** FULL or IDLE (Lustre's own tests wait for exactly these). */
  get healthy(): bool {
    return this.state == "FULL" || this.state == "IDLE";
  }
  get isMdt(): bool {
    return this.kind == "mdc";
  }
  get isOst(): bool {
    return this.kind == "osc";
  }
  get isMgc(): bool {
    return this.kind == "mgc";
  }
  /** `lustrefs-OST0003` (the target uuid without `_UUID`), or the MGC device. */
  get targetName(): string {
    return this.fs.length > 0 ? this.fs + "-" + this.target : this.device;
  }
  /** `lustrefs-ffff…` as `lfs getname` prints it; "" for the MGC. */
  get mountKey(): string {
    return this.instance.length > 0 ? this.fs + "-" + this.instance : "";
  }

  /**
   * How long it has not been healthy at `epoch`: from the state history when
   * there is one, else from `idle:` (time since the last reply); -1 when
   * neither tells (the caller treats that as beyond any grace).
   */
  unhealthyFor(epoch: i64): i64 {
    if (this.healthy) return 0;
    if (this.unhealthySince >= 0 && epoch > 0) return epoch >= this.unhealthySince ? epoch - this.unhealthySince : 0;
    return this.idleSec;
  }
}

export class LustreImports {
  imports: Array<LustreImport> = new Array<LustreImport>();
  /** Non-empty when the text is not import blocks (garbage, a block cut short). */
  error: string = "";
  /** Lines that were neither parameter lines nor inside a block. */
  stray: i32 = 0;
  private byDevice: Map<string, LustreImport> = new Map<string, LustreImport>();

  add(imp: LustreImport): void {
    this.imports.push(imp);
    if (!this.byDevice.has(imp.device)) this.byDevice.set(imp.device, imp);
  }

  /** Hashed: the state blocks of 1,000 OSTs each find their import in O(1). */
  find(device: string): LustreImport | null {
    return this.byDevice.has(device) ? this.byDevice.get(device) : null;
  }
}

function hasAt(s: string, pos: i32, lit: string): bool {
  const n = lit.length;
  if (pos < 0 || pos + n > s.length) return false;
  return memory.compare(changetype<usize>(s) + (<usize>pos << 1), changetype<usize>(lit), <usize>n << 1) == 0;
}

/** Offset of `lit` in s[from, end), or -1 (short literals, short lines). */
function findIn(s: string, lit: string, from: i32, end: i32): i32 {
  const last = end - lit.length;
  const c0 = lit.charCodeAt(0);
  for (let i = from; i <= last; i++) if (unitAt(s, i) == c0 && hasAt(s, i, lit)) return i;
  return -1;
}

/** s[from, end) without surrounding blanks, CR, or double quotes. */
function valueOf(s: string, from: i32, end: i32): string {
  while (from < end && isSpace(unitAt(s, from))) from++;
  while (end > from && (isSpace(unitAt(s, end - 1)) || unitAt(s, end - 1) == 13)) end--;
  if (end - from >= 2 && unitAt(s, from) == 34 && unitAt(s, end - 1) == 34) {
    from++;
    end--;
  }
  return slice(s, from, end);
}

/**
 * `osc.NAME.import=` / `mdc.…` / `mgc.…` at the start of a line: the kind,
 * the device and where the value starts on the same line (2.12–2.15 print
 * `name=value` on one line for short values), or null.
 */
class ParamLine {
  kind: string = "";
  device: string = "";
  rest: i32 = 0;
}

function paramLine(s: string, start: i32, end: i32, suffix: string): ParamLine | null {
  if (end - start < 5 || unitAt(s, start + 3) != 46) return null;
  let kind = "";
  if (hasAt(s, start, "osc.")) kind = "osc";
  else if (hasAt(s, start, "mdc.")) kind = "mdc";
  else if (hasAt(s, start, "mgc.")) kind = "mgc";
  else return null;
  // The device may hold dots (MGC10.0.0.2@tcp): the suffix is the last one.
  let at = -1;
  let from = start + 4;
  for (;;) {
    const i = findIn(s, suffix, from, end);
    if (i < 0) break;
    at = i;
    from = i + 1;
  }
  if (at <= start + 4) return null;
  const p = new ParamLine();
  p.kind = kind;
  p.device = slice(s, start + 4, at);
  p.rest = at + suffix.length;
  return p;
}

/** Splits `fs-OST0003-osc-inst` / `fs-MDT0000-mdc-inst` into its parts; MGC: target MGS. */
function nameDevice(imp: LustreImport): void {
  const d = imp.device;
  if (imp.kind == "mgc") {
    imp.target = "MGS";
    return;
  }
  const last = d.lastIndexOf("-");
  if (last <= 0) return;
  const kindDash = d.lastIndexOf("-", last - 1);
  if (kindDash <= 0) return;
  const targetDash = d.lastIndexOf("-", kindDash - 1);
  if (targetDash <= 0) return;
  imp.instance = d.substring(last + 1);
  imp.target = d.substring(targetDash + 1, kindDash);
  imp.fs = d.substring(0, targetDash);
}

/** Parses `lctl get_param osc.*.import mdc.*.import mgc.*.import` (stdout only). */
export function parseLustreImports(s: string): LustreImports {
  const out = new LustreImports();
  const n = s.length;
  let cur: LustreImport | null = null;
  let start = 0;
  while (start < n) {
    const nl = lineEnd(s, start);
    let end = nl;
    if (end > start && unitAt(s, end - 1) == 13) end--;
    const lineStart = start;
    start = nl + 1;
    if (end == lineStart) continue;
    const c = unitAt(s, lineStart);
    if (c != 32 && c != 9) {
      const p = paramLine(s, lineStart, end, ".import=");
      if (p !== null) {
        if (cur !== null && cur.state.length == 0) {
          out.error = "import block of " + cur.device + " has no state";
          return out;
        }
        const imp = new LustreImport();
        imp.kind = p.kind;
        imp.device = p.device;
        nameDevice(imp);
        out.add(imp);
        cur = imp;
        continue;
      }
      // `import:` opens the value; anything else at column 0 outside is stray.
      if (cur !== null && hasAt(s, lineStart, "import:")) continue;
      if (cur === null || cur.state.length > 0) out.stray++;
      continue;
    }
    if (cur === null) {
      out.stray++;
      continue;
    }
    // Indented keys: only the few that matter are materialised.
    let k = lineStart;
    while (k < end && (unitAt(s, k) == 32 || unitAt(s, k) == 9)) k++;
    const indent = k - lineStart;
    if (indent <= 4) {
      if (hasAt(s, k, "state:")) cur.state = valueOf(s, k + 6, end);
      else if (hasAt(s, k, "name:") && cur.device.length == 0) cur.device = valueOf(s, k + 5, end);
    } else if (indent <= 8) {
      if (hasAt(s, k, "current_connection:")) cur.connection = valueOf(s, k + 19, end);
      else if (hasAt(s, k, "idle:")) {
        const v = valueOf(s, k + 5, end);
        const sp = v.indexOf(" ");
        const num = sp > 0 ? v.substring(0, sp) : v;
        if (num.length > 0 && num.length < 16 && allDigits(num)) cur.idleSec = I64.parseInt(num);
      }
    }
  }
  if (cur !== null && cur.state.length == 0) out.error = "import block of " + cur.device + " has no state (output cut short?)";
  else if (out.imports.length == 0 && out.stray > 0) out.error = "no `osc|mdc|mgc.NAME.import=` parameter line";
  return out;
}

function isHealthyWord(s: string, from: i32, end: i32): bool {
  return (end - from == 4 && (hasAt(s, from, "FULL") || hasAt(s, from, "IDLE")));
}

/**
 * Adds `lctl get_param osc.*.state mdc.*.state` to parsed imports: the EVICTED
 * timestamps and since when each import has been unhealthy without a break
 * (an import whose server is down cycles DISCONN/CONNECTING, so the last entry
 * alone would restart the clock at every reconnect attempt). Returns "" or
 * what was wrong with the text; imports without a state block keep -1.
 */
export function addImportStates(s: string, into: LustreImports): string {
  const n = s.length;
  let cur: LustreImport | null = null;
  let blocks = 0;
  let stray = 0;
  // Entries of the current block: since when unhealthy (reset by each healthy entry).
  let since: i64 = -1;
  let start = 0;
  while (start <= n) {
    const nl = start < n ? lineEnd(s, start) : n;
    let end = nl;
    if (end > start && unitAt(s, end - 1) == 13) end--;
    const lineStart = start;
    // A last line without LF still ends its block: one more turn at n does that.
    start = nl < n ? nl + 1 : n;
    const atEnd = lineStart >= n;
    const p: ParamLine | null = atEnd ? null : paramLine(s, lineStart, end, ".state=");
    if (atEnd || p !== null) {
      if (cur !== null) {
        cur.hasHistory = true;
        cur.unhealthySince = cur.healthy ? -1 : since;
      }
      if (atEnd) break;
      blocks++;
      cur = into.find(p!.device);
      since = -1;
      continue;
    }
    if (end == lineStart || cur === null) {
      if (end > lineStart && cur === null && blocks == 0) stray++;
      continue;
    }
    // ` - [ 1718003600, EVICTED ]`; this reader has always taken an entry cut before its `]`.
    const next = historyEntry(s, lineStart, end, cur, since, false);
    if (next != -2) since = next;
  }
  if (blocks == 0 && stray > 0) return "no `osc|mdc.NAME.state=` parameter line";
  return "";
}

/**
 * One state-history entry ` - [ 1718003600, EVICTED ]` in s[k, end), read
 * without making a string: EVICTED timestamps go to `cur`; returns the new
 * "unhealthy since" (-1 after a FULL/IDLE entry, which ends a stretch), or -2
 * when the line is not a whole entry (cut inside, damaged). `needClose`
 * false accepts an entry cut before its `]`, as addImportStates always has.
 */
function historyEntry(s: string, k: i32, end: i32, cur: LustreImport, since: i64, needClose: bool = true): i64 {
  while (k < end && isSpace(unitAt(s, k))) k++;
  if (!hasAt(s, k, "- [")) return -2;
  k += 3;
  while (k < end && isSpace(unitAt(s, k))) k++;
  const tsStart = k;
  let ts: i64 = 0;
  while (k < end) {
    const c = unitAt(s, k);
    if (c < 48 || c > 57) break;
    ts = ts * 10 + <i64>(c - 48);
    k++;
  }
  if (k == tsStart || k - tsStart > 15) return -2;
  while (k < end && (isSpace(unitAt(s, k)) || unitAt(s, k) == 44)) k++;
  const wStart = k;
  while (k < end && unitAt(s, k) != 93 && !isSpace(unitAt(s, k))) k++;
  if (k == wStart) return -2;
  const wEnd = k;
  while (k < end && isSpace(unitAt(s, k))) k++;
  // The closing bracket: a line cut inside the entry is not one.
  if (needClose && (k >= end || unitAt(s, k) != 93)) return -2;
  if (wEnd - wStart == 7 && hasAt(s, wStart, "EVICTED")) cur.evictedAt.push(ts);
  if (isHealthyWord(s, wStart, wEnd)) return -1;
  return since < 0 ? ts : since;
}

/** `some_key:` (a key a later version may add): tolerated without a word. */
function isKeyLine(s: string, k: i32, end: i32): bool {
  const from = k;
  while (k < end) {
    const c = unitAt(s, k);
    if (c == 58) return k > from;
    if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c == 95)) return false;
    k++;
  }
  return false;
}

/**
 * Parses `lctl get_param osc.*.state mdc.*.state mgc.*.state` (stdout only)
 * into imports, without the import listing: everything the checks judge is
 * in a state file (shared/LUSTRE-CLIENT-HEALTH.md §2): the device in the
 * parameter line (kind, file system, target, instance), `current_state:` (the
 * import's `state:`) and the history (since when unhealthy, evictions). The
 * value may start on the parameter line (2.12–2.15 print short values there)
 * or on the next line (2.16+, and any multi-line value). A block without
 * `current_state:` (or with two) is damage; unknown `key:` lines are
 * tolerated; lines that are neither a parameter line, a key nor a whole
 * history entry are counted as stray. `idleSec` stays
 * -1 (a connected import always has a history to tell how long).
 */
export function parseLustreStates(s: string): LustreImports {
  const out = new LustreImports();
  const n = s.length;
  let cur: LustreImport | null = null;
  let since: i64 = -1;
  let start = 0;
  while (start <= n) {
    const nl = start < n ? lineEnd(s, start) : n;
    let end = nl;
    if (end > start && unitAt(s, end - 1) == 13) end--;
    let k = start;
    // A last line without LF still ends its block: one more turn at n does that.
    start = nl < n ? nl + 1 : n;
    const atEnd = k >= n;
    const p: ParamLine | null = atEnd || end == k || isSpace(unitAt(s, k)) ? null : paramLine(s, k, end, ".state=");
    if (atEnd || p !== null) {
      if (cur !== null) {
        if (cur.state.length == 0) {
          out.error = "state block of " + cur.device + " has no current_state" + (atEnd ? " (output cut short?)" : "");
          return out;
        }
        cur.unhealthySince = cur.healthy ? -1 : since;
      }
      if (atEnd) break;
      const imp = new LustreImport();
      imp.kind = p!.kind;
      imp.device = p!.device;
      imp.hasHistory = true;
      nameDevice(imp);
      out.add(imp);
      cur = imp;
      since = -1;
      k = p!.rest;
      // `name=value` on one line: the rest is the value's first line.
      while (k < end && isSpace(unitAt(s, k))) k++;
      if (k == end) continue;
    }
    if (end == k) continue;
    if (cur === null) {
      out.stray++;
      continue;
    }
    let j = k;
    while (j < end && isSpace(unitAt(s, j))) j++;
    if (j == end) continue;
    if (hasAt(s, j, "current_state:")) {
      // Two in one block: a parameter line was lost, and the later state would pass for this import's.
      if (cur.state.length > 0) {
        out.error = "state block of " + cur.device + " has two current_state lines";
        return out;
      }
      if (j + 14 <= end) cur.state = valueOf(s, j + 14, end);
      continue;
    }
    if (hasAt(s, j, "state_history:")) continue;
    if (unitAt(s, j) == 45) {
      const next = historyEntry(s, j, end, cur, since);
      if (next == -2) out.stray++;
      else since = next;
    } else if (!isKeyLine(s, j, end)) out.stray++;
  }
  if (out.imports.length == 0 && out.stray > 0) out.error = "no `osc|mdc|mgc.NAME.state=` parameter line";
  return out;
}

/**
 * `lctl get_param` found none of the parameters: the Lustre modules are not
 * loaded or nothing is mounted (`error: get_param: param_path 'osc/*\/import':
 * No such file or directory` per parameter). True only when stdout is blank
 * and every stderr line says exactly that.
 */
export function noSuchLustreParam(src: Source): bool {
  if (src.stdout.trim().length > 0) return false;
  const e = src.stderr;
  let start = 0;
  let seen = 0;
  while (start < e.length) {
    const nl = lineEnd(e, start);
    const end = nl;
    const ls = start;
    start = nl + 1;
    if (end == ls) continue;
    if (findIn(e, "param_path", ls, end) < 0 || findIn(e, "No such file or directory", ls, end) < 0) return false;
    seen++;
  }
  return seen > 0;
}

/** A Lustre parameter source answered with something to parse: ok, or get_param's partial "no such param" (some kinds absent, e.g. no MGC readable). */
export function lustreParamUsable(src: Source): bool {
  if (src.ok) return true;
  if (src.truncated || src.exitCode < 0) return false;
  if (src.stdout.trim().length == 0) return false;
  // Exit status non-zero because one of the globs matched nothing: fine if stderr says only that.
  const e = src.stderr;
  let start = 0;
  while (start < e.length) {
    const nl = lineEnd(e, start);
    const ls = start;
    start = nl + 1;
    if (nl == ls) continue;
    if (findIn(e, "param_path", ls, nl) < 0) return false;
  }
  return true;
}

/** `lfs getname`: `<fsname>-<instance> <mountpoint>` per mount. */
export class LustreMountName {
  key: string = "";
  mountpoint: string = "";
}

export function parseLfsGetname(s: string): Array<LustreMountName> {
  const out = new Array<LustreMountName>();
  let start = 0;
  while (start < s.length) {
    const nl = lineEnd(s, start);
    let end = nl;
    if (end > start && unitAt(s, end - 1) == 13) end--;
    const ls = start;
    start = nl + 1;
    let sp = -1;
    for (let i = ls; i < end; i++) {
      if (unitAt(s, i) == 32) {
        sp = i;
        break;
      }
    }
    if (sp <= ls || sp + 1 >= end) continue;
    const m = new LustreMountName();
    m.key = s.substring(ls, sp);
    m.mountpoint = s.substring(sp + 1, end);
    out.push(m);
  }
  return out;
}

/** Mount points `lfs getname` printed for `fs-instance`, joined with ", " ("" when none). */
export function mountpointsOf(names: Array<LustreMountName>, key: string): Array<string> {
  const out = new Array<string>();
  for (let i = 0; i < names.length; i++) if (names[i].key == key) out.push(names[i].mountpoint);
  return out;
}

/** The imports of one mount (one `fs-instance`): its MDCs and OSCs. */
export class LustreMount {
  fs: string = "";
  instance: string = "";
  mdts: Array<LustreImport> = new Array<LustreImport>();
  osts: Array<LustreImport> = new Array<LustreImport>();
  get key(): string {
    return this.fs + "-" + this.instance;
  }
}

/** MDC/OSC imports grouped by mount, in first-seen order (MGCs are left out: see mgcsOf). */
export function groupByMount(parsed: LustreImports): Array<LustreMount> {
  const out = new Array<LustreMount>();
  let last: LustreMount | null = null;
  for (let i = 0; i < parsed.imports.length; i++) {
    const imp = parsed.imports[i];
    if (imp.isMgc || imp.instance.length == 0) continue;
    let m: LustreMount | null = null;
    if (last !== null && last.instance == imp.instance && last.fs == imp.fs) m = last;
    else {
      for (let j = 0; j < out.length; j++) {
        if (out[j].instance == imp.instance && out[j].fs == imp.fs) {
          m = out[j];
          break;
        }
      }
    }
    if (m === null) {
      m = new LustreMount();
      m.fs = imp.fs;
      m.instance = imp.instance;
      out.push(m);
    }
    if (imp.isMdt) m.mdts.push(imp);
    else m.osts.push(imp);
    last = m;
  }
  return out;
}

export function mgcsOf(parsed: LustreImports): Array<LustreImport> {
  const out = new Array<LustreImport>();
  for (let i = 0; i < parsed.imports.length; i++) if (parsed.imports[i].isMgc) out.push(parsed.imports[i]);
  return out;
}

/**
 * How one mount's targets stand at `epoch` with `graceSeconds`: EVICTED now
 * (reported while it lasts, no grace), not FULL/IDLE for longer than the
 * grace (a state held for an unknown time counts as beyond it), and healthy
 * or still within the grace. Items read `OST0003 (DISCONN for 95 s)`.
 */
export class MountJudgement {
  badMdts: Array<string> = new Array<string>();
  evictedMdts: Array<string> = new Array<string>();
  badOsts: Array<string> = new Array<string>();
  evictedOsts: Array<string> = new Array<string>();
  /** Not FULL/IDLE but within the grace: told in messages, not reported. */
  settling: i32 = 0;
  mdtCount: i32 = 0;
  ostCount: i32 = 0;
  /** Every MDT is unhealthy beyond the grace or evicted (and there is at least one). */
  get allMdtsDown(): bool {
    return this.mdtCount > 0 && this.badMdts.length + this.evictedMdts.length == this.mdtCount;
  }
}

export function describeImport(imp: LustreImport, epoch: i64): string {
  const held = imp.unhealthyFor(epoch);
  return imp.target + " (" + imp.state + (held >= 0 ? " for " + held.toString() + " s" : "") + ")";
}

function judgeOne(imp: LustreImport, epoch: i64, grace: i64, bad: Array<string>, evicted: Array<string>, j: MountJudgement): void {
  if (imp.healthy) return;
  if (imp.state == "EVICTED") {
    evicted.push(imp.target);
    return;
  }
  const held = imp.unhealthyFor(epoch);
  if (held >= 0 && held <= grace) {
    j.settling++;
    return;
  }
  bad.push(describeImport(imp, epoch));
}

export function judgeMount(m: LustreMount, epoch: i64, graceSeconds: i64): MountJudgement {
  const j = new MountJudgement();
  j.mdtCount = m.mdts.length;
  j.ostCount = m.osts.length;
  for (let i = 0; i < m.mdts.length; i++) judgeOne(m.mdts[i], epoch, graceSeconds, j.badMdts, j.evictedMdts, j);
  for (let i = 0; i < m.osts.length; i++) judgeOne(m.osts[i], epoch, graceSeconds, j.badOsts, j.evictedOsts, j);
  return j;
}

/** Whether an MGC is unhealthy beyond the grace (EVICTED counts at once). */
export function mgcDown(imp: LustreImport, epoch: i64, graceSeconds: i64): bool {
  if (imp.healthy) return false;
  if (imp.state == "EVICTED") return true;
  const held = imp.unhealthyFor(epoch);
  return held < 0 || held > graceSeconds;
}
