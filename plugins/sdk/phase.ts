// When is LNet configured? The Azure driver configures it when it starts; the
// other Lustre CSI drivers load `lustre` and configure LNet at the first mount
// (module options from modprobe.d). Checks that demanded configured NIs on
// such a node would hold a fresh, healthy node NotReady and gate the very
// mount that configures LNet. Configuration key `lnetConfiguredAt`:
//   start (default)  LNet must be configured whenever the check runs;
//   mount            until LNet is configured, "can mount" is what is checked
//                    (modules installed, tools present, option-named
//                    interfaces up); once it is, the full checks apply.
import { CheckInput, Manifest, Opened, Result, Source, openInput, respond } from "./abi";
import { findLnetErrorIn, isValidIfName } from "./lnet";
import { clip, firstLine, isSpace, lineEnd, LineFields, oneLine, UniqueList } from "./strings";
import { parseYaml } from "./yaml";

export const LNET_CONFIGURED_AT = "lnetConfiguredAt";
/** The sources every phased check reads to tell the phase. */
export const PHASE_MODULES = "proc.modules";
export const PHASE_NET_SHOW = "lnetctl.net_show";

/** Declares `lnetConfiguredAt` and the two sources the phase is told from. */
export function phasedManifest(m: Manifest): Manifest {
  return m
    .source(PHASE_MODULES)
    .source(PHASE_NET_SHOW)
    .stringOption(LNET_CONFIGURED_AT, "start", "when LNet is configured on this node: start (when the driver starts) or mount (at the first mount; until then only what the mount needs is checked)");
}

export class LnetPhase {
  /** Non-empty when lnetConfiguredAt has a value other than start or mount. */
  error: string = "";
  /** True when the full checks apply: lnetConfiguredAt start, LNet configured, or the phase cannot be told. */
  configured: bool = true;
  /** Why LNet counts as not yet configured. */
  why: string = "";

  /** The prefix of every verdict given before LNet is configured. */
  label(): string {
    return "LNet not yet configured (lnetConfiguredAt: mount; " + this.why + ")";
  }
}

/**
 * The phase, from `proc.modules` and `lnetctl.net_show`. Not configured: the
 * `lnet` module is not loaded, or it is and lnetctl answers (a net list or its
 * error document) without a non-loopback net. A failed read that says neither
 * (a timeout, an unreadable /proc/modules) counts as configured, so the full
 * checks run and name the failure instead of a lenient pass hiding it.
 */
export function lnetPhase(input: CheckInput): LnetPhase {
  const p = new LnetPhase();
  const at = input.configString(LNET_CONFIGURED_AT, "start");
  if (at == "start") return p;
  if (at != "mount") {
    p.error = LNET_CONFIGURED_AT + " must be start or mount, not \"" + clip(oneLine(at), 40) + "\"";
    return p;
  }
  const modules = input.source(PHASE_MODULES);
  if (modules === null || !modules.ok) return p;
  if (!hasModule(modules.stdout, "lnet")) {
    p.configured = false;
    p.why = "the lnet module is not loaded";
    return p;
  }
  const ns = input.source(PHASE_NET_SHOW);
  if (ns === null || ns.truncated) return p;
  if (listsRemoteNet(ns.stdout)) return p;
  let err = findLnetErrorIn(ns.stdout);
  if (err === null) err = findLnetErrorIn(ns.stderr);
  if (err !== null) {
    p.configured = false;
    p.why = "lnet is loaded; lnetctl net show: " + clip(oneLine(err.descr.length > 0 ? err.descr : "errno " + err.errno), 120);
    return p;
  }
  if (ns.ok) {
    p.configured = false;
    p.why = "lnet is loaded; lnetctl net show lists no non-loopback net";
  }
  return p;
}

/** A line whose first field is exactly `name` (`/proc/modules`, `kernel.modules_dep`). */
export function hasModule(text: string, name: string): bool {
  const f = new LineFields();
  let start = 0;
  while (start < text.length) {
    const nl = lineEnd(text, start);
    f.reset(text, start, nl);
    start = nl + 1;
    if (f.is(0, name)) return true;
  }
  return false;
}

function listsRemoteNet(text: string): bool {
  const root = parseYaml(text).root;
  const nets = root !== null ? root.get("net") : null;
  if (nets === null || !nets.isArray) return false;
  for (let i = 0; i < nets.length; i++) {
    const net = nets.at(i);
    if (net === null || !net.isObject) continue;
    const type = net.getText("net type");
    if (type.length > 0 && type != "lo") return true;
  }
  return false;
}

/**
 * The usual phased `check`: the full check (`evaluate` on source `name`, as
 * checkSource) once LNet is configured, `before` until then. `stable`: every
 * verdict is marked stable (Result.stable()), for a check whose answers
 * depend on nothing but its sources, facts and configuration.
 */
export function checkSourcePhased(
  json: string,
  name: string,
  evaluate: (o: Opened) => Result,
  before: (input: CheckInput, phase: LnetPhase) => Result,
  stable: bool = false,
): string {
  const input = CheckInput.parse(json);
  if (input.error.length > 0) return respondMarked(Result.fail("BadInput", input.error), stable);
  const phase = lnetPhase(input);
  if (phase.error.length > 0) return respondMarked(Result.fail("ConfigInvalid", phase.error), stable);
  if (!phase.configured) return respondMarked(before(input, phase), stable);
  const o = openInput(input, name);
  const failure = o.failure;
  return respondMarked(failure !== null ? failure : evaluate(o), stable);
}

function respondMarked(r: Result, stable: bool): string {
  return respond(stable ? r.stable() : r);
}

/** The program a command source runs was not found (the host's ENOENT, or 126/127 from a prefix such as nsenter). */
export function programMissing(src: Source): bool {
  return src.error.startsWith("ENOENT") || src.exitCode == 126 || src.exitCode == 127;
}

/** What a missing program's run said: the host's error, else its first stderr line. */
export function missingDetail(src: Source): string {
  const e = src.error.length > 0 ? oneLine(src.error) : "";
  const s = firstLine(src.stderr);
  return s.length > 0 && e.indexOf(s) < 0 ? e + " (" + s + ")" : e;
}

/** The interfaces the lnet module options name (`modprobe.lnet_options` lines, `FILE: PARAMETERS`). */
export class LnetOptions {
  /** `networks` or `ip2nets` (the last one set wins, as the kernel applies them in order), or "". */
  param: string = "";
  /** `FILE: name=value` of that setting, for messages. */
  where: string = "";
  interfaces: UniqueList = new UniqueList();
  /** Names in parentheses that are not interface names. */
  invalid: UniqueList = new UniqueList();
  /** Non-empty when LNet itself would refuse the options. */
  error: string = "";
}

export function parseLnetOptions(text: string): LnetOptions {
  const o = new LnetOptions();
  let networks = "";
  let ip2nets = "";
  let networksAt = "";
  let ip2netsAt = "";
  let start = 0;
  while (start < text.length) {
    const nl = lineEnd(text, start);
    const line = text.substring(start, nl);
    start = nl + 1;
    const colon = line.indexOf(": ");
    if (colon < 0) continue;
    const file = line.substring(0, colon);
    const params = splitParams(line.substring(colon + 2));
    for (let i = 0; i < params.length; i++) {
      const kv = params[i];
      const eq = kv.indexOf("=");
      if (eq <= 0) continue;
      const key = kv.substring(0, eq);
      const value = kv.substring(eq + 1).replaceAll("\"", "");
      if (key == "networks") {
        networks = value;
        networksAt = file + ": " + kv;
      } else if (key == "ip2nets") {
        ip2nets = value;
        ip2netsAt = file + ": " + kv;
      }
    }
  }
  if (networks.length > 0 && ip2nets.length > 0) {
    o.error = "both networks= (" + clip(networksAt, 120) + ") and ip2nets= (" + clip(ip2netsAt, 120) + ") are set; LNet accepts only one";
    return o;
  }
  if (networks.length > 0) {
    o.param = "networks";
    o.where = networksAt;
    collectParens(networks, o);
  } else if (ip2nets.length > 0) {
    o.param = "ip2nets";
    o.where = ip2netsAt;
    // Entries are separated by `;` or line breaks; `#` comments out the rest of one.
    const entries = ip2nets.replaceAll("\n", ";").split(";");
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      const hash = e.indexOf("#");
      collectParens(hash >= 0 ? e.substring(0, hash) : e, o);
    }
  }
  return o;
}

/** Whitespace-separated `key=value` words; double quotes keep blanks inside a value. */
function splitParams(s: string): Array<string> {
  const out = new Array<string>();
  let cur = "";
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c == 34) quoted = !quoted;
    if (!quoted && isSpace(c)) {
      if (cur.length > 0) out.push(cur);
      cur = "";
    } else {
      cur += String.fromCharCode(c);
    }
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** `tcp0(eth0,eth1),o2ib(ib0[1])` → eth0, eth1, ib0 (a `[CPT]` list is not part of a name). */
function collectParens(s: string, o: LnetOptions): void {
  let i = 0;
  while (i < s.length) {
    const open = s.indexOf("(", i);
    if (open < 0) return;
    const close = s.indexOf(")", open + 1);
    if (close < 0) {
      o.invalid.add(clip(s.substring(open), 40));
      return;
    }
    let depth = 0;
    let name = "";
    for (let k = open + 1; k <= close; k++) {
      const c = k < close ? s.charCodeAt(k) : 44;
      if (c == 91) depth++;
      else if (c == 93) depth--;
      else if (c == 44 && depth <= 0) {
        const n = name.trim();
        if (n.length > 0) {
          if (isValidIfName(n)) o.interfaces.add(n);
          else o.invalid.add(clip(oneLine(n), 20));
        }
        name = "";
        depth = 0;
      } else if (depth <= 0) name += String.fromCharCode(c);
    }
    i = close + 1;
  }
}
