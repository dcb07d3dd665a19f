// A volume check sees only its own mount's Lustre imports. kubelet mounts
// every PersistentVolume as its own Lustre mount (its own superblock, so its
// own `<fsname>-…-<instance>` devices): with N volumes the `lctl get_param`
// listing holds N sets of imports, and a volume check handed all of it parses
// N times too much, N times per round (quadratic in the volumes). Here the
// listing is indexed by mount instance once per catalog result (so once per
// round, on the main thread, shared by every volume) and each volume check is
// handed only the blocks of its mount(s), plus the shared MGC blocks.
//
// The restriction must never change a verdict, only its cost. So the listing
// is passed whole (as before) whenever there is any doubt: the source is cut
// or empty, `lfs getname` did not answer or names none of the volume's paths,
// a block is damaged (an import block without `state:`, a state block without
// exactly one `current_state:`: the check must see that, as it did), or the
// mount has no block at all. MGC blocks belong to no mount: every volume gets them. A check that does not list `lfs.getname`
// gets the whole listing too: it cannot tell mounts apart, and reading
// getname for it would run a command it never asked for.

import type { SourceCatalog, SourceResult } from "../engine/sources/index.js";

/** The sources restricted per volume, with the header suffix of their blocks. */
const SCOPED: ReadonlyMap<string, string> = new Map([
  ["lctl.imports", ".import="],
  ["lctl.import_states", ".state="],
]);
export const VOLUME_SCOPED_SOURCES: readonly string[] = [...SCOPED.keys()];
const GETNAME = "lfs.getname";

type Read = Pick<SourceCatalog, "read">;

/**
 * A catalog for one volume check: `lctl.imports` and `lctl.import_states`
 * restricted to the mounts behind the volume's paths (facts `volume.path`,
 * `volume.stagingPath`); every other source read as is.
 */
export function volumeScopedCatalog(catalog: Read, pluginSources: readonly string[]): Read {
  if (!pluginSources.includes(GETNAME) || !pluginSources.some((s) => SCOPED.has(s))) return catalog;
  return {
    read: async (name, facts) => {
      const suffix = SCOPED.get(name);
      if (suffix === undefined) return catalog.read(name, facts);
      const [listing, getname] = await Promise.all([catalog.read(name, facts), catalog.read(GETNAME, facts)]);
      return scopeListing(listing, suffix, getname, volumePaths(facts));
    },
  };
}

function volumePaths(facts: Readonly<Record<string, string>> | undefined): string[] {
  const out: string[] = [];
  for (const p of [facts?.["volume.stagingPath"], facts?.["volume.path"]]) if (p) out.push(p);
  return out;
}

/** The listing restricted to the mounts `lfs getname` names for paths; the listing itself when in doubt. */
export function scopeListing(listing: SourceResult, suffix: string, getname: SourceResult, paths: readonly string[]): SourceResult {
  if (listing.truncated || listing.stdout.length === 0 || !getname.ok || paths.length === 0) return listing;
  const { keys, mounts } = mountKeys(getname, paths.map(normalizePath));
  // Its mounts are all the mounts there are (one volume, or all on one mount):
  // the whole listing is what it would be given, without the copy.
  if (keys.length === 0 || keys.length === mounts) return listing;
  const scope = listingScope(listing, suffix);
  const index = scope.index;
  if (!index) return listing;
  const memoKey = keys.join(" ");
  const memo = scope.results.get(memoKey);
  if (memo) return memo;
  let stdoutKey = index.stdoutKeys.get(memoKey);
  if (stdoutKey === undefined) {
    stdoutKey = picked(index, keys) === null ? null : Object.freeze({});
    index.stdoutKeys.set(memoKey, stdoutKey);
  }
  const scoped = stdoutKey === null ? listing : scopedResult(listing, index, keys, stdoutKey);
  scope.results.set(memoKey, scoped);
  return scoped;
}

/**
 * The restricted result, its text made each time it is read and kept by
 * nobody: a volume's result lives as long as its stable verdict
 * (checks/stable-memo.ts), and 64 volumes kept their restricted texts, together a
 * second copy of the listing (561 KiB at 64 mounts of 64 OSTs), resident
 * between rounds. On a steady node the text is never made: the verdict memo
 * tells two results equal by their stdoutKey, which stands for the listing's
 * text and the mount keys. Not frozen, unlike the catalog's results:
 * check-input keeps the JSON of a frozen result for a while.
 */
function scopedResult(listing: SourceResult, index: ListingIndex, keys: readonly string[], stdoutKey: object): SourceResult {
  return {
    ...listing,
    stdoutKey,
    get stdout(): string {
      return restrict(index, keys);
    },
  };
}

/** The blocks of the mounts `keys` plus the shared ones, in listing order; null: the whole listing (none of its own, or all). */
function picked(index: ListingIndex, keys: readonly string[]): number[] | null {
  const out: number[] = [];
  for (const k of keys) out.push(...(index.byMount.get(k) ?? []));
  // No block of its own: the check says so itself, from the whole listing.
  if (out.length === 0) return null;
  out.push(...index.shared);
  if (out.length === index.starts.length) return null;
  return out.sort((a, b) => a - b);
}

/** The restricted text: the text before the first block, then the picked blocks (the whole listing when none are picked). */
function restrict(index: ListingIndex, keys: readonly string[]): string {
  const text = index.text;
  const blocks = picked(index, keys);
  if (blocks === null) return text;
  let stdout = text.slice(0, index.prefixEnd);
  for (const i of blocks) stdout += text.slice(index.starts[i]!, index.ends[i]!);
  return stdout;
}

interface ListingIndex {
  /**
   * The listing the offsets point into: the newest result's text once an equal
   * listing is read again, so the index keeps no older copy resident beside
   * the catalog's.
   */
  text: string;
  /** Text before the first block (kept: the check judges it as before) ends here. */
  prefixEnd: number;
  /** Each block, [starts[i], ends[i]): its header line and everything up to the next header. */
  starts: number[];
  ends: number[];
  /** `fs-instance` (as `lfs getname` prints it) → its blocks, in order. */
  byMount: Map<string, number[]>;
  /** Blocks of no mount: the MGCs (shared by all mounts of an MGS), devices not named `fs-TARGET-kind-instance`. */
  shared: number[];
  /** The stdoutKey of each restriction, by mount keys (null: the whole listing is given). */
  stdoutKeys: Map<string, object | null>;
}

interface ListingScope {
  index: ListingIndex | null;
  /** The restricted results made from this catalog result, by mount keys. */
  results: Map<string, SourceResult>;
}

/** One scope per catalog result: the result lives for the command's TTL, about a round. */
const scopes = new WeakMap<SourceResult, ListingScope>();

/**
 * The last listing indexed, per suffix. On a node whose imports do not change
 * the command prints the same text every round: its index, and the stdoutKeys
 * made from it, are reused (so a volume check's inputs compare equal at once,
 * checks/stable-memo.ts), instead of being rebuilt from a new result object each
 * round.
 */
const lastIndexed = new Map<string, { text: string; index: ListingIndex | null }>();

function listingScope(listing: SourceResult, suffix: string): ListingScope {
  let scope = scopes.get(listing);
  if (scope) return scope;
  const last = lastIndexed.get(suffix);
  let index: ListingIndex | null;
  if (last && last.text === listing.stdout) {
    index = last.index;
    last.text = listing.stdout;
    if (index) index.text = listing.stdout;
  } else {
    index = buildIndex(listing.stdout, suffix);
    lastIndexed.set(suffix, { text: listing.stdout, index });
  }
  scope = { index, results: new Map() };
  scopes.set(listing, scope);
  return scope;
}

/**
 * A header is a line at column 0 `osc|mdc|mgc.DEVICE<suffix>…`: the value
 * follows on the same line (2.12–2.15, short values) or on the next lines
 * (`name=` then the value). Lines end at LF only, and the device is what lies
 * before the last suffix on its line, as the SDK's parser reads them.
 */
function headerPattern(suffix: string): RegExp {
  return new RegExp(String.raw`(^|\n)(osc|mdc|mgc)\.([^\n]+)` + suffix.replace(/\./g, "\\."), "g");
}

/** An import block the SDK's parser would call damaged (no top-level `state:` with a value). */
const IMPORT_STATE = /\n[ \t]{1,4}state:[ \t]*[^\s"]/;
/**
 * A state block the SDK's parseLustreStates would not call damaged: exactly
 * one `current_state:` with a value, looked for where it looks (each line
 * after blanks, and the header's own line after its last `.state=` for the
 * one-line `name=value` form), the value read as it reads it (blanks, CR and
 * surrounding double quotes dropped).
 */
function stateBlockWhole(block: string): boolean {
  const lines = block.split("\n");
  const header = lines[0]!;
  lines[0] = header.slice(header.lastIndexOf(".state=") + ".state=".length);
  let count = 0;
  let valued = false;
  for (const line of lines) {
    const rest = line.replace(/^[ \t\v\f\r]+/, "");
    if (!rest.startsWith("current_state:")) continue;
    count++;
    let v = rest.slice("current_state:".length).replace(/[ \t\v\f\r]+$/, "").replace(/^[ \t\v\f\r]+/, "");
    if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1);
    valued = v.length > 0;
  }
  return count === 1 && valued;
}

function buildIndex(text: string, suffix: string): ListingIndex | null {
  const starts: number[] = [];
  const devices: string[] = [];
  const kinds: string[] = [];
  for (const m of text.matchAll(headerPattern(suffix))) {
    starts.push(m.index + m[1]!.length);
    kinds.push(m[2]!);
    devices.push(m[3]!);
  }
  if (starts.length === 0) return null;
  const index: ListingIndex = { text, prefixEnd: starts[0]!, starts, ends: [], byMount: new Map(), shared: [], stdoutKeys: new Map() };
  for (let i = 0; i < starts.length; i++) {
    const end = i + 1 < starts.length ? starts[i + 1]! : text.length;
    const block = text.slice(starts[i], end);
    if (suffix === ".import=" ? !IMPORT_STATE.test(block) : !stateBlockWhole(block)) return null;
    index.ends.push(end);
    const key = kinds[i] === "mgc" ? "" : mountKeyOf(devices[i]!);
    if (key === "") index.shared.push(i);
    else {
      const list = index.byMount.get(key);
      if (list) list.push(i);
      else index.byMount.set(key, [i]);
    }
  }
  return index;
}

/** `lustrefs-OST0003-osc-ffff8f0a3b5c9000` → `lustrefs-ffff8f0a3b5c9000` (the SDK's reading of a device name); "" if not of that shape. */
function mountKeyOf(device: string): string {
  const last = device.lastIndexOf("-");
  if (last <= 0) return "";
  const kindDash = device.lastIndexOf("-", last - 1);
  if (kindDash <= 0) return "";
  const targetDash = device.lastIndexOf("-", kindDash - 1);
  if (targetDash <= 0) return "";
  return `${device.slice(0, targetDash)}-${device.slice(last + 1)}`;
}

/**
 * The `fs-instance` keys `lfs getname` prints for any of the paths, matched
 * exactly as the check matches them (first space, mount point unescaped and
 * without trailing slashes): with the same keys it selects the same mounts,
 * all of whose blocks it is given. Any other key set could change a verdict
 * (none at all makes it fall back to every mount of the file system).
 * `mounts`: how many mounts `lfs getname` printed in all.
 */
function mountKeys(getname: SourceResult, paths: readonly string[]): { keys: string[]; mounts: number } {
  const table = getnameTable(getname);
  const keys = new Set<string>();
  for (const p of paths) for (const k of table.byPath.get(p) ?? []) keys.add(k);
  return { keys: [...keys].sort(), mounts: table.mounts };
}

interface GetnameTable {
  /** Normalized mount point → the keys printed for it. */
  byPath: Map<string, string[]>;
  mounts: number;
}

/**
 * Parsed once per catalog result and shared by every volume of the round:
 * parsing it per volume made a round quadratic in the volumes.
 */
const getnameTables = new WeakMap<SourceResult, GetnameTable>();

function getnameTable(getname: SourceResult): GetnameTable {
  let table = getnameTables.get(getname);
  if (table) return table;
  const byPath = new Map<string, string[]>();
  const all = new Set<string>();
  for (const raw of getname.stdout.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const sp = line.indexOf(" ");
    if (sp <= 0 || sp + 1 >= line.length) continue;
    const key = line.slice(0, sp);
    all.add(key);
    const at = normalizePath(unescapeMountField(line.slice(sp + 1)));
    const list = byPath.get(at);
    if (list) list.push(key);
    else byPath.set(at, [key]);
  }
  table = { byPath, mounts: all.size };
  getnameTables.set(getname, table);
  return table;
}

function normalizePath(p: string): string {
  let end = p.length;
  while (end > 1 && p.charCodeAt(end - 1) === 47) end--;
  return p.slice(0, end);
}

/** /proc/mounts escapes space, tab, newline and backslash as `\ooo`. */
function unescapeMountField(s: string): string {
  return s.includes("\\") ? s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))) : s;
}
