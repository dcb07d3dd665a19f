// The plugin directory churning under a running gateway: extra plugins
// added, replaced and removed, a bundled plugin rewritten in place, and
// hostile plugins (gateway/test/hostile, compiled with asc and cached)
// appearing and disappearing. One directory is written like `cp` does, the
// other like kubelet's ConfigMap volume (files behind ..data, swapped by a
// symlink rename).
//
// What the oracle needs from here: since when a plugin that must make the
// node not ready (a required check that fails, or one that faults) has been
// in force. A file whose new content is refused at load keeps its last good
// module running (gateway/src/runtime/README.md), so a faulting plugin
// overwritten by a refused one is still in force until the file loads or goes.
import fs from "node:fs";
import path from "node:path";
import { compileAs } from "../../gateway/test/hostile/build.js";
import type { Rng } from "./rng.js";

/** Kinds of extra plugin. `cause`: while present, the node must not be ready. */
interface Kind {
  id: string;
  cause: boolean;
  source: () => string;
}

const echo = (name: string, version: string, status: string, severity = "required") => `
export function manifest(): string {
  return '{"abi":1,"name":"${name}","version":"${version}","description":"soak plugin","sources":[],"modes":["node","controller"],"probe":"readiness","severity":"${severity}"}';
}
export function check(input: string): string {
  return '{"status":"${status}","reason":"Soak${status}","message":"soak plugin says ${status}"}';
}
`;

export class PluginSources {
  constructor(private readonly root: string) {}
  hostile(name: string): string {
    return fs.readFileSync(path.join(this.root, "gateway/test/hostile/assembly", `${name}.ts`), "utf8");
  }
}

function kinds(src: PluginSources): Kind[] {
  const h = (id: string, cause: boolean): Kind => ({ id, cause, source: () => src.hostile(id) });
  return [
    { id: "soak-pass-1", cause: false, source: () => echo("soak-pass", "1.0.0", "pass") },
    { id: "soak-pass-2", cause: false, source: () => echo("soak-pass", "2.0.0", "pass") },
    { id: "soak-advisory", cause: false, source: () => echo("soak-advisory", "1.0.0", "fail", "advisory") },
    { id: "soak-fail", cause: true, source: () => echo("soak-fail", "1.0.0", "fail") },
    // Load, then fault at every check: readiness fails closed.
    h("trap", true),
    h("abort", true),
    h("badout", true),
    h("loop", true),
    h("memhog", true),
    // Refused at load: readiness unaffected.
    h("wasi", false),
    h("abi3", false),
    h("badmanifest", false),
    h("noexport", false),
    h("manifestloop", false),
    h("unknownsource", false),
  ];
}

/** The hostile kinds the loader refuses (the rest load, then fault or answer). */
const REFUSED = new Set(["wasi", "abi3", "badmanifest", "noexport", "manifestloop", "unknownsource"]);

export interface CompiledKind {
  id: string;
  cause: boolean;
  /** Refused at load: the file's last good module, if any, stays in force. */
  refused: boolean;
  /** Manifest name family: two kinds of one family never coexist (a duplicate name is refused). */
  family: string;
  bytes: Uint8Array;
}

export async function compileKinds(root: string): Promise<CompiledKind[]> {
  const out: CompiledKind[] = [];
  for (const k of kinds(new PluginSources(root))) {
    out.push({ id: k.id, cause: k.cause, refused: REFUSED.has(k.id), family: k.id.startsWith("soak-pass") ? "soak-pass" : k.id, bytes: await compileAs(k.source()) });
  }
  return out;
}

/** How a directory is written. */
export interface DirWriter {
  readonly dir: string;
  put(file: string, bytes: Uint8Array): void;
  remove(file: string): void;
}

export class PlainDir implements DirWriter {
  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }
  put(file: string, bytes: Uint8Array): void {
    // In place, like `cp`: the watcher may see a half-written file first.
    fs.writeFileSync(path.join(this.dir, file), bytes);
  }
  remove(file: string): void {
    fs.rmSync(path.join(this.dir, file), { force: true });
  }
}

/** kubelet's atomic writer: DIR/..2026_…/files, DIR/..data -> that, DIR/x.wasm -> ..data/x.wasm. */
export class ConfigMapDir implements DirWriter {
  private files = new Map<string, Uint8Array>();
  private current: string | undefined;
  private gen = 0;
  swaps = 0;
  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }
  put(file: string, bytes: Uint8Array): void {
    this.files.set(file, bytes);
    this.publish();
  }
  remove(file: string): void {
    this.files.delete(file);
    this.publish();
  }
  /** Several changes in one swap. */
  replaceAll(files: Map<string, Uint8Array>): void {
    this.files = new Map(files);
    this.publish();
  }
  private publish(): void {
    const ts = `..${new Date().toISOString().replace(/[-:.TZ]/g, "_")}${this.gen++}`;
    const tsDir = path.join(this.dir, ts);
    fs.mkdirSync(tsDir);
    for (const [f, b] of this.files) fs.writeFileSync(path.join(tsDir, f), b);
    const tmp = path.join(this.dir, "..data_tmp");
    fs.rmSync(tmp, { force: true });
    fs.symlinkSync(ts, tmp);
    fs.renameSync(tmp, path.join(this.dir, "..data"));
    for (const f of this.files.keys()) {
      const link = path.join(this.dir, f);
      if (!fs.existsSync(link)) fs.symlinkSync(path.join("..data", f), link);
    }
    for (const f of fs.readdirSync(this.dir)) {
      if (!f.startsWith(".") && !this.files.has(f)) fs.rmSync(path.join(this.dir, f), { force: true });
    }
    if (this.current) fs.rmSync(path.join(this.dir, this.current), { recursive: true, force: true });
    this.current = ts;
    this.swaps++;
  }
}

interface Present {
  /** What the file holds now. */
  kind: CompiledKind;
  file: string;
  /** The module the gateway runs for this file: `kind`, or, while `kind` is refused, the last one that loaded. */
  inForce: CompiledKind | undefined;
  /** Since when `inForce` has been in force. */
  since: number;
}

/** One gateway's plugin directory: the bundled plugins, plus extras that come and go. */
export class PluginChurn {
  private readonly present = new Map<string, Present>();
  readonly actions: Record<string, number> = {};
  private seq = 0;
  /** Told when a faulting module is kept in force under refused content, and when that ends (ms it lasted). */
  onKept: ((what: "kept" | "ended", file: string, ms: number) => void) | undefined;
  private readonly keptSince = new Map<string, number>();

  constructor(
    private readonly writer: DirWriter,
    private readonly bundled: Map<string, Uint8Array>,
    private readonly kinds: CompiledKind[],
    private readonly rng: Rng,
    /** Fraction of churn steps that may bring in a plugin that makes the node not ready. */
    private readonly causeChance = 0.3,
  ) {
    if (writer instanceof ConfigMapDir) writer.replaceAll(bundled);
    else for (const [f, b] of bundled) writer.put(f, b);
  }

  /** Since when (Date.now()) each present readiness-breaking plugin has been there. */
  causes(): Array<{ what: string; since: number }> {
    return this.inForceCauses().map((p) => ({ what: `plugin:${p.inForce!.id}${p.inForce === p.kind ? "" : ` (kept; file now ${p.kind.id})`}`, since: p.since }));
  }

  private inForceCauses(): Present[] {
    return [...this.present.values()].filter((p) => p.inForce?.cause);
  }

  private count(a: string): void {
    this.actions[a] = (this.actions[a] ?? 0) + 1;
  }

  private families(): Set<string> {
    return new Set([...this.present.values()].flatMap((p) => [p.kind.family, ...(p.inForce ? [p.inForce.family] : [])]));
  }

  /** One change. `now` is Date.now(). */
  step(now: number): string {
    const causes = this.inForceCauses();
    // A readiness-breaking plugin stays a while, then goes (removed or replaced by a good one).
    const overdue = causes.find((p) => now - p.since > this.rng.between(5_000, 20_000));
    if (overdue) {
      if (this.rng.chance(0.5)) return this.remove(overdue, "remove-hostile", now);
      const good = this.kinds.find((k) => k.id === "soak-pass-1")!;
      if (!this.families().has("soak-pass")) return this.replace(overdue, good, now, "replace-hostile");
      return this.remove(overdue, "remove-hostile", now);
    }
    const r = this.rng.next();
    if (r < 0.15) {
      const [file, bytes] = this.rng.pick([...this.bundled.entries()]);
      this.writer.put(file, bytes);
      this.count("rewrite-bundled");
      return "rewrite-bundled";
    }
    if (r < 0.35 && this.present.size > 0) {
      const p = this.rng.pick([...this.present.values()]);
      return this.remove(p, p.inForce?.cause ? "remove-hostile" : "remove", now);
    }
    if (r < 0.55 && this.present.size > 0) {
      const p = this.rng.pick([...this.present.values()]);
      const fam = this.families();
      fam.delete(p.kind.family);
      const options = this.kinds.filter((k) => !fam.has(k.family) && k.id !== p.kind.id && (!k.cause || (causes.length === 0 && this.rng.chance(this.causeChance))));
      if (options.length) return this.replace(p, this.rng.pick(options), now, "replace");
    }
    const fam = this.families();
    const allowCause = causes.length === 0 && this.rng.chance(this.causeChance);
    const options = this.kinds.filter((k) => !fam.has(k.family) && (allowCause || !k.cause));
    if (!options.length || this.present.size >= 5) return "none";
    const k = this.rng.pick(options);
    const file = `x${this.seq++}-${k.id}.wasm`;
    this.writer.put(file, k.bytes);
    this.present.set(file, { kind: k, file, inForce: k.refused ? undefined : k, since: now });
    const a = k.cause ? "add-hostile" : k.id.startsWith("soak-") ? "add" : "add-refused";
    this.count(a);
    return a;
  }

  private keptEnds(file: string, now: number): void {
    const since = this.keptSince.get(file);
    if (since === undefined) return;
    this.keptSince.delete(file);
    this.onKept?.("ended", file, now - since);
  }

  private remove(p: Present, action: string, now: number): string {
    this.keptEnds(p.file, now);
    this.writer.remove(p.file);
    this.present.delete(p.file);
    this.count(action);
    return action;
  }

  private replace(p: Present, k: CompiledKind, now: number, action: string): string {
    this.writer.put(p.file, k.bytes);
    // The loader refuses content that is refused on its own, and a plugin of
    // another name over a file whose module is in force (NameChanged: "a new
    // name goes in a new file", gateway/src/runtime/README.md). Either way the
    // file's last good module stays in force, and its cause since when it came.
    const refused = k.refused || (p.inForce !== undefined && p.inForce.family !== k.family);
    if (refused) this.present.set(p.file, { ...p, kind: k });
    else this.present.set(p.file, { kind: k, file: p.file, inForce: k, since: k.cause ? now : p.since });
    // Named apart in the report: the node stays not ready through this "replacement".
    if (refused && p.inForce?.cause) {
      action = "replace-hostile-kept";
      if (!this.keptSince.has(p.file)) {
        this.keptSince.set(p.file, now);
        this.onKept?.("kept", p.file, 0);
      }
    } else if (!refused) this.keptEnds(p.file, now);
    this.count(action);
    return action;
  }
}
