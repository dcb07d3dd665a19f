// ABI v1 plumbing (see plugins/ABI.md): decoding `check` input, building the
// manifest and the result. Nothing here traps on any input.

import { Kind, Value } from "./value";
import { parseJson } from "./json";
import { JsonObjectWriter, jsonString, utf8Length } from "./jsonwrite";
import { clip, firstLine, joinStrings, oneLine, textProblem } from "./strings";
import { findLnetErrorIn } from "./lnet";

export const ABI_VERSION: i32 = 1;
/** The host refuses results above 64 KiB; stay clear of it. */
const OUTPUT_LIMIT: i32 = 60 * 1024;
const MESSAGE_LIMIT: i32 = 4000;
const REASON_LIMIT: i32 = 64;

export class Source {
  name: string = "";
  ok: bool = false;
  /** -1 when the ABI sent null (file source, timeout, not found). */
  exitCode: i32 = -1;
  stdout: string = "";
  stderr: string = "";
  /** "" when the ABI sent null. */
  error: string = "";
  truncated: bool = false;
  ageMs: f64 = 0;
}

/** Largest input (UTF-16 units) heap room has been reserved for; see CheckInput.parse. */
let reservedFor: i32 = 0;

export class CheckInput {
  /** Non-empty when the input itself could not be decoded. */
  error: string = "";
  mode: string = "";
  sources: Array<Source> = new Array<Source>();
  /**
   * The plugin's configuration: every key the manifest declares (Manifest
   * option calls), with the operator's NAME.yaml over the declared defaults,
   * already validated by the host. null when the host sent none (a gateway
   * older than configuration support): read it through the config* helpers,
   * which fall back to the defaults the plugin passes.
   */
  config: Value | null = null;
  /**
   * `round.epoch`: epoch seconds when the host's evaluation round started (0
   * when the host sent none). Data, not a clock: compare it with timestamps
   * in sources (an import's state_history); fixtures set it.
   */
  roundEpoch: i64 = 0;
  /** `round.previousEpoch`: the previous round that ran this plugin, or 0 (first round since start). */
  previousEpoch: i64 = 0;
  private factKeys: Array<string> = new Array<string>();
  private factValues: Array<string> = new Array<string>();

  static parse(json: string): CheckInput {
    const input = new CheckInput();
    const parsed = parseJson(json);
    const root = parsed.value;
    if (root === null) {
      input.error = "input is not JSON: " + parsed.error;
      return input;
    }
    if (!root.isObject) {
      input.error = "input is not a JSON object";
      return input;
    }
    // Under the minimal runtime the host's next input (about as large as this
    // one) must fit in what this call frees, or the allocator grows memory
    // (doubling it) to place it. The decoded outputs are smaller than the
    // escaped input, so leave a block of slack behind with them. Besides, the
    // previous call's input is still in the heap while this call runs (the
    // host unpinned it; this call's collection frees it), so calls after the
    // first need one input's worth more: the first large call reserves that
    // once (again only for a larger input).
    if (ASC_RUNTIME == 1 && json.length >= 16384) {
      let slack = <usize>json.length;
      if (json.length > reservedFor) {
        slack += <usize>json.length << 1;
        reservedFor = json.length;
      }
      __new(slack, idof<ArrayBuffer>());
    }
    input.mode = root.getText("mode");
    const sources = root.get("sources");
    if (sources !== null && sources.isObject) {
      for (let i = 0; i < sources.length; i++) {
        const v = sources.at(i);
        if (v !== null && v.isObject) input.sources.push(decodeSource(sources.keyAt(i), v));
      }
    }
    const config = root.get("config");
    if (config !== null && config.isObject) input.config = config;
    const round = root.get("round");
    if (round !== null && round.isObject) {
      input.roundEpoch = epochOf(round.get("epoch"));
      input.previousEpoch = epochOf(round.get("previousEpoch"));
    }
    const facts = root.get("facts");
    if (facts !== null && facts.isObject) {
      for (let i = 0; i < facts.length; i++) {
        const v = facts.at(i);
        if (v !== null && v.isString) {
          input.factKeys.push(facts.keyAt(i));
          input.factValues.push(v.str);
        }
      }
    }
    return input;
  }

  source(name: string): Source | null {
    for (let i = this.sources.length - 1; i >= 0; i--) {
      if (this.sources[i].name == name) return this.sources[i];
    }
    return null;
  }

  hasFact(name: string): bool {
    for (let i = 0; i < this.factKeys.length; i++) if (this.factKeys[i] == name) return true;
    return false;
  }

  /** Configuration list `key` (strings only), or `fallback` when not configured. */
  configStrings(key: string, fallback: Array<string>): Array<string> {
    const cfg = this.config;
    if (cfg === null) return fallback;
    const v = cfg.get(key);
    if (v === null || !v.isArray) return fallback;
    const out = new Array<string>();
    for (let i = 0; i < v.length; i++) {
      const item = v.at(i);
      if (item !== null && item.isString) out.push(item.text());
    }
    return out;
  }

  /** Configuration number `key` as an i32, or `fallback` when not configured. */
  configInt(key: string, fallback: i32): i32 {
    const cfg = this.config;
    if (cfg === null) return fallback;
    const v = cfg.get(key);
    if (v === null || v.kind != Kind.Number || !isFinite(v.num) || v.num < -2147483648 || v.num > 2147483647) return fallback;
    return <i32>v.num;
  }

  /** Configuration flag `key`, or `fallback` when not configured. */
  configBool(key: string, fallback: bool): bool {
    const cfg = this.config;
    if (cfg === null) return fallback;
    const v = cfg.get(key);
    if (v === null || v.kind != Kind.Bool) return fallback;
    return v.num != 0;
  }

  /** Configuration text `key`, or `fallback` when not configured. */
  configString(key: string, fallback: string): string {
    const cfg = this.config;
    if (cfg === null) return fallback;
    const v = cfg.get(key);
    if (v === null || !v.isString) return fallback;
    return v.text();
  }

  /** Fact value, or "" when absent. */
  fact(name: string): string {
    for (let i = this.factKeys.length - 1; i >= 0; i--) {
      if (this.factKeys[i] == name) return this.factValues[i];
    }
    return "";
  }
}

/** A non-negative whole number of seconds, else 0 (anything odd reads as "unknown"). */
function epochOf(v: Value | null): i64 {
  if (v === null || v.kind != Kind.Number || !isFinite(v.num) || v.num < 0 || v.num > 9007199254740991) return 0;
  return <i64>Math.floor(v.num);
}

function decodeSource(name: string, v: Value): Source {
  const s = new Source();
  s.name = name;
  const ok = v.get("ok");
  s.ok = ok !== null && ok.kind == Kind.Bool && ok.num != 0;
  const code = v.get("exitCode");
  if (code !== null && code.kind == Kind.Number && code.num >= -2147483648 && code.num <= 2147483647) {
    s.exitCode = <i32>code.num;
  }
  s.stdout = v.getText("stdout");
  s.stderr = v.getText("stderr");
  s.error = v.getText("error");
  const tr = v.get("truncated");
  s.truncated = tr !== null && tr.kind == Kind.Bool && tr.num != 0;
  const age = v.get("ageMs");
  if (age !== null && age.kind == Kind.Number) s.ageMs = age.num;
  return s;
}

/** Health statuses (CSI v1.13): storage plugins use the first two, volume plugins the other three. */
export const STORAGE_DEGRADED = "STORAGE_DEGRADED";
export const STORAGE_UNREACHABLE = "STORAGE_UNREACHABLE";
export const VOLUME_DEGRADED = "DEGRADED";
export const VOLUME_INACCESSIBLE = "INACCESSIBLE";
export const VOLUME_DATA_LOSS = "DATA_LOSS";
/** The host keeps at most this many health entries and events per result. */
export const HEALTH_ENTRIES_MAX: i32 = 256;
const HEALTH_MESSAGE_LIMIT: i32 = 1024;

/** One adverse condition (see Result.health). */
export class HealthEntry {
  status: string = "";
  reason: string = "";
  message: string = "";
  /** "" when not about one file system. */
  fs: string = "";
}

/** Something seen happening since the previous round (see Result.event). */
export class HealthEvent {
  reason: string = "";
  fs: string = "";
  target: string = "";
  /** Epoch seconds; -1 when unknown. */
  at: i64 = -1;
}

export class Result {
  status: string;
  reason: string;
  message: string;
  private factKeys: Array<string> = new Array<string>();
  private factValues: Array<string> = new Array<string>();
  /** Health entries (storage and volume plugins); empty: nothing adverse known. */
  healthEntries: Array<HealthEntry> = new Array<HealthEntry>();
  events: Array<HealthEvent> = new Array<HealthEvent>();
  /** See stable(). */
  isStable: bool = false;

  constructor(status: string, reason: string, message: string) {
    this.status = status;
    this.reason = reason;
    this.message = message;
  }

  static pass(reason: string, message: string): Result {
    return new Result("pass", reason, message);
  }
  static warn(reason: string, message: string): Result {
    return new Result("warn", reason, message);
  }
  static fail(reason: string, message: string): Result {
    return new Result("fail", reason, message);
  }

  get failed(): bool {
    return this.status == "fail";
  }

  /** Adds (or replaces) a fact; facts are emitted whatever the status. */
  fact(key: string, value: string): Result {
    for (let i = 0; i < this.factKeys.length; i++) {
      if (this.factKeys[i] == key) {
        this.factValues[i] = value;
        return this;
      }
    }
    this.factKeys.push(key);
    this.factValues.push(value);
    return this;
  }

  /**
   * Adds a health entry (probe "storage": STORAGE_DEGRADED/STORAGE_UNREACHABLE;
   * probe "volume": DEGRADED/INACCESSIBLE/DATA_LOSS). `reason` UpperCamelCase;
   * `message` one line naming what is affected; `fs` a file system name or "".
   * A second entry with the same (status, reason) replaces nothing: the host
   * keeps the first, so merge per (status, reason) before adding. Entries past
   * HEALTH_ENTRIES_MAX are dropped.
   */
  health(status: string, reason: string, message: string, fs: string = ""): Result {
    if (this.healthEntries.length >= HEALTH_ENTRIES_MAX) return this;
    const e = new HealthEntry();
    e.status = status;
    e.reason = reason;
    e.message = message;
    e.fs = fs;
    this.healthEntries.push(e);
    return this;
  }

  /** Adds an event (e.g. "Evicted" seen in a state history after input.previousEpoch); `at` epoch seconds or -1. */
  event(reason: string, fs: string = "", target: string = "", at: i64 = -1): Result {
    if (this.events.length >= HEALTH_ENTRIES_MAX) return this;
    const e = new HealthEvent();
    e.reason = reason;
    e.fs = fs;
    e.target = target;
    e.at = at;
    this.events.push(e);
    return this;
  }

  /**
   * Marks the verdict stable (any plugin, plugins/ABI.md "Health"): given
   * the same sources, facts, configuration and module it would be the same at
   * any later round, and it carries no events, so the host may reuse it
   * instead of calling again. Never set it when the verdict depends on time.
   */
  stable(): Result {
    this.isStable = true;
    return this;
  }

  /** Serialises within the ABI's limits: facts, then long health messages, are cut before the verdict is. */
  toJson(): string {
    const full = this.render(MESSAGE_LIMIT, true, HEALTH_MESSAGE_LIMIT);
    if (utf8Length(full) <= OUTPUT_LIMIT) return full;
    const lean = this.render(500, false, 120);
    if (utf8Length(lean) <= OUTPUT_LIMIT) return lean;
    return this.render(500, false, 0);
  }

  private render(messageLimit: i32, withFacts: bool, healthMessageLimit: i32): string {
    const w = new JsonObjectWriter()
      .string("status", this.status)
      .string("reason", clip(this.reason, REASON_LIMIT))
      .string("message", clip(this.message, messageLimit));
    if (withFacts && this.factKeys.length > 0) {
      const f = new JsonObjectWriter();
      for (let i = 0; i < this.factKeys.length; i++) f.string(this.factKeys[i], this.factValues[i]);
      w.raw("facts", f.toString());
    }
    if (this.healthEntries.length > 0) {
      const items = new Array<string>(this.healthEntries.length);
      for (let i = 0; i < this.healthEntries.length; i++) {
        const e = this.healthEntries[i];
        const h = new JsonObjectWriter()
          .string("status", e.status)
          .string("reason", clip(e.reason, REASON_LIMIT))
          .string("message", clip(oneLine(e.message), healthMessageLimit));
        if (e.fs.length > 0) h.string("fs", e.fs);
        items[i] = h.toString();
      }
      w.raw("health", "[" + joinStrings(items, ",") + "]");
    }
    if (this.events.length > 0 && healthMessageLimit > 0) {
      const items = new Array<string>(this.events.length);
      for (let i = 0; i < this.events.length; i++) {
        const e = this.events[i];
        const h = new JsonObjectWriter().string("reason", clip(e.reason, REASON_LIMIT));
        if (e.fs.length > 0) h.string("fs", clip(e.fs, 128));
        if (e.target.length > 0) h.string("target", clip(e.target, 128));
        if (e.at >= 0) h.raw("at", e.at.toString());
        items[i] = h.toString();
      }
      w.raw("events", "[" + joinStrings(items, ",") + "]");
    }
    if (this.isStable) w.raw("stable", "true");
    return w.toString();
  }
}

/**
 * Ends a check: serialises the verdict and, under the `minimal` runtime this
 * repo builds with (asconfig.json), frees everything the call allocated. The
 * minimal collector never runs by itself, so a plugin whose `check` does not
 * return through `respond` grows until it hits its memory cap.
 */
export function respond(r: Result): string {
  const out = r.toJson();
  collectExcept(out);
  return out;
}

/**
 * Full collection keeping `keep` alive. Safe at the end of a call: the host
 * pins the input string (ABI v1), and nothing else outlives the call except
 * the returned string, which the host copies before calling in again.
 */
export function collectExcept(keep: string): void {
  if (ASC_RUNTIME != 1) return; // incremental collects on its own; stub never frees
  const p = changetype<usize>(keep);
  if (p >= __heap_base) {
    __pin(p);
    __collect();
    __unpin(p);
  } else {
    __collect();
  }
}

export class Manifest {
  name: string;
  version: string;
  description: string;
  sources: Array<string> = new Array<string>();
  modes: Array<string> = ["node"];
  probe: string = "readiness";
  severity: string = "required";
  /** Rendered `"key":{…}` declarations of the `config` object. */
  private options: Array<string> = new Array<string>();

  constructor(name: string, version: string, description: string) {
    this.name = name;
    this.version = version;
    this.description = description;
  }

  source(name: string): Manifest {
    this.sources.push(name);
    return this;
  }

  /** Replaces the default ["node"]; call once per mode. */
  mode(mode: string): Manifest {
    if (this.modes.length == 1 && this.modes[0] == "node" && mode != "node") this.modes = [mode];
    else if (!this.modes.includes(mode)) this.modes.push(mode);
    return this;
  }

  probeKind(kind: string): Manifest {
    this.probe = kind;
    return this;
  }

  advisory(): Manifest {
    this.severity = "advisory";
    return this;
  }

  /** Declares configuration list `key` (NAME.yaml `key: [a, b]`); read it with input.configStrings. */
  stringsOption(key: string, defaults: Array<string>, description: string): Manifest {
    return this.option(key, "string[]", new JsonObjectWriter().stringArray("default", defaults), description);
  }

  /** Declares a whole-number option of at least `min`; read it with input.configInt. */
  intOption(key: string, fallback: i32, min: i32, description: string): Manifest {
    return this.option(key, "integer", new JsonObjectWriter().number("default", fallback).number("min", min), description);
  }

  /** Declares a true/false option; read it with input.configBool. */
  boolOption(key: string, fallback: bool, description: string): Manifest {
    return this.option(key, "boolean", new JsonObjectWriter().raw("default", fallback ? "true" : "false"), description);
  }

  /** Declares a text option; read it with input.configString. */
  stringOption(key: string, fallback: string, description: string): Manifest {
    return this.option(key, "string", new JsonObjectWriter().string("default", fallback), description);
  }

  private option(key: string, type: string, rest: JsonObjectWriter, description: string): Manifest {
    const w = rest.string("type", type).string("description", description);
    this.options.push(jsonString(key) + ":" + w.toString());
    return this;
  }

  toJson(): string {
    const w = new JsonObjectWriter()
      .number("abi", ABI_VERSION)
      .string("name", this.name)
      .string("version", this.version)
      .string("description", this.description)
      .stringArray("sources", this.sources)
      .stringArray("modes", this.modes)
      .string("probe", this.probe)
      .string("severity", this.severity);
    if (this.options.length > 0) w.raw("config", "{" + joinStrings(this.options, ",") + "}");
    return w.toString();
  }
}

/**
 * The common opening of a check: decode the input, find the source, refuse a
 * failed source and text that is empty or binary. When `failure` is set the
 * plugin returns it as is; otherwise `text` is the source's stdout.
 */
export class Opened {
  input: CheckInput;
  source: Source = new Source();
  failure: Result | null = null;
  text: string = "";

  constructor(input: CheckInput) {
    this.input = input;
  }
}

/**
 * The usual `check`: opens source `name` (see openSource) and hands it to
 * `evaluate` unless opening already failed; ends through respond(). A
 * plugin's export is then one line:
 *   export function check(input: string): string { return checkSource(input, SOURCE, evaluate); }
 */
export function checkSource(json: string, name: string, evaluate: (o: Opened) => Result): string {
  const o = openSource(json, name);
  const failure = o.failure;
  return respond(failure !== null ? failure : evaluate(o));
}

export function openSource(json: string, name: string): Opened {
  const input = CheckInput.parse(json);
  if (input.error.length > 0) {
    const o = new Opened(input);
    o.failure = Result.fail("BadInput", input.error);
    return o;
  }
  return openInput(input, name);
}

/** openSource for an input already parsed (a check that looked at it first, e.g. for its phase). */
export function openInput(input: CheckInput, name: string): Opened {
  const o = new Opened(input);
  const src = input.source(name);
  if (src === null) {
    o.failure = Result.fail("SourceMissing", "source " + name + " was not provided to the check");
    return o;
  }
  o.source = src;
  if (!src.ok) {
    o.failure = sourceFailed(src);
    return o;
  }
  const problem = textProblem(src.stdout);
  if (problem.length > 0) {
    o.failure = parseError(src, "output " + problem);
    return o;
  }
  o.text = src.stdout;
  return o;
}

/** `SourceFailed`, quoting the host's error and lnetctl's own `descr` or first stderr line. */
export function sourceFailed(src: Source): Result {
  let msg = "source " + src.name + " failed: " + (src.error.length > 0 ? oneLine(src.error) : "unknown error");
  const detail = sourceDetail(src);
  if (detail.length > 0) msg += " (" + detail + ")";
  return Result.fail("SourceFailed", msg);
}

/** lnetctl error `descr` from stdout/stderr, else the first stderr line, else "". */
export function sourceDetail(src: Source): string {
  let e = findLnetErrorIn(src.stdout);
  if (e === null) e = findLnetErrorIn(src.stderr);
  if (e !== null && e.descr.length > 0) return clip(oneLine(e.descr), 300);
  return firstLine(src.stderr);
}

/** `ParseError` naming the source; notes truncation since it usually explains the damage. */
export function parseError(src: Source, why: string): Result {
  let msg = "cannot parse " + src.name + ": " + why;
  if (src.truncated) msg += " (output was truncated by the host)";
  return Result.fail("ParseError", msg);
}
