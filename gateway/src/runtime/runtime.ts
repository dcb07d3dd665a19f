import type { Logger } from "../observability/logger.js";
import { loadPlugin, refusal, type LoadResult } from "./loader.js";
import { join } from "node:path";
import { DirWatcher, scanPluginDir, type ConfigFile } from "./plugin-dir.js";
import { configDefaults, isBlankConfig, type ConfigValue } from "./schema.js";
import { Sandbox } from "./sandbox.js";
import { callCheck, type CheckOutcome } from "./check-call.js";
import { SingleFlight } from "./single-flight.js";
import { DEFAULTS, type LoadedPlugin, type PluginRefusal } from "./types.js";
import type { Override } from "../engine/state.js";

export type { CheckOutcome };

export interface PluginSet {
  /** Accepted plugins, sorted by file name. */
  readonly plugins: readonly LoadedPlugin[];
  readonly refusals: readonly PluginRefusal[];
  /** Plugin names a later directory overrides. */
  readonly overrides: readonly Override[];
  /** Bumped on every swap. */
  readonly version: number;
}

export interface RuntimeOptions {
  /** Directory of *.wasm files; without it (and `dirs`) the runtime has no plugins. */
  dir?: string;
  /** Several directories: a plugin name in a later one replaces the same name from an earlier one. */
  dirs?: readonly string[];
  isKnownSource: (name: string) => boolean;
  timeoutMs?: number;
  memoryMiB?: number;
  maxFileBytes?: number;
  maxOutputBytes?: number;
  quarantineAfter?: number;
  /** First retry of a quarantined plugin after this long, doubling per failed retry up to the max. */
  quarantineBackoffMs?: number;
  quarantineBackoffMaxMs?: number;
  debounceMs?: number;
  pollMs?: number;
  logger?: Logger;
  onLoaded?: (p: LoadedPlugin) => void;
  onRefused?: (r: PluginRefusal) => void;
  onQuarantined?: (p: LoadedPlugin, message: string) => void;
  /** A quarantined plugin was run again (after its backoff). */
  onQuarantineRetry?: (p: LoadedPlugin) => void;
  /** The number of quarantined plugins changed. */
  onQuarantineCount?: (count: number) => void;
}

/** A plugin's configuration as the runtime applies it. */
export interface PluginConfigState {
  /** What check() gets as `config`; undefined when the plugin declares none or none valid exists yet. */
  value: ConfigValue | undefined;
  /** The file the value came from (path), absent when defaults apply. */
  file?: string;
  sha256?: string;
  /** Set when the current file is invalid; `value` is then the last good one, if any. */
  error?: string;
  /**
   * Whether calls may run: always without `error`; with it, only when an
   * earlier configuration of this plugin was valid (it stays in force).
   */
  usable: boolean;
}

interface ConfigEntry {
  /** Identity of what was validated: file path, content and plugin content. */
  id: string;
  state: PluginConfigState;
  refusal?: PluginRefusal;
}

interface FileEntry {
  dir: string;
  name: string;
  sha256: string;
  result: LoadResult;
  /** Kept so a DuplicateName refusal keeps its first timestamp across rescans. */
  duplicate?: PluginRefusal;
  /** For a manifest() timeout, which a starved node can cause: consecutive timeouts and when to try again. */
  timeouts?: number;
  retryAt?: number;
}

const TIMEOUT_RETRY_BASE_MS = 2_000;
const TIMEOUT_RETRY_MAX_MS = 5 * 60_000;

function reusable(prev: FileEntry | undefined, sha256: string, now: number): boolean {
  if (!prev || prev.sha256 !== sha256) return false;
  return prev.retryAt === undefined || now < prev.retryAt;
}

interface Health {
  faults: number;
  quarantined: boolean;
  lastFault: string;
  /** Failed retries since quarantine began, and when the next one may run (Date.now()). */
  retries: number;
  retryAt: number;
  name: string;
}

/**
 * Owns the plugin set: scans and watches the directory, validates new or
 * changed files, and swaps in a new set only once every file in it has been
 * validated, so a reader sees either the old set or the new one. Also counts
 * consecutive faults per (file, content) and quarantines offenders.
 */
export class PluginRuntime {
  readonly sandbox: Sandbox;
  private set: PluginSet = { plugins: [], refusals: [], overrides: [], version: 0 };
  private entries = new Map<string, FileEntry>();
  private configs = new Map<string, ConfigEntry>();
  private readonly dirs: readonly string[];
  private readonly health = new Map<string, Health>();
  private readonly listeners = new Set<(s: PluginSet) => void>();
  private readonly scan: SingleFlight;
  private watchers: DirWatcher[] = [];
  private readonly dirMissingLogged = new Set<string>();
  private quarantinedCount = 0;
  private sourcesChanged = false;
  private stopped = false;

  constructor(private readonly opts: RuntimeOptions) {
    this.dirs = opts.dirs?.length ? [...opts.dirs] : opts.dir ? [opts.dir] : [];
    this.sandbox = new Sandbox({ timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, memoryMiB: opts.memoryMiB, logger: opts.logger });
    this.scan = new SingleFlight(
      () => this.reconcile(),
      (err) => opts.logger?.error({ err: (err as Error).message }, "plugin directory scan failed"),
    );
  }

  /** Loads the directory once (validation included), then watches it. */
  async start(): Promise<void> {
    if (this.dirs.length === 0) return;
    await this.scan.run();
    for (const dir of this.dirs) {
      const w = new DirWatcher(dir, () => void this.rescan(), {
        debounceMs: this.opts.debounceMs,
        pollMs: this.opts.pollMs,
        logger: this.opts.logger,
      });
      this.watchers.push(w);
      await w.start();
    }
  }

  /** The directories, in override order. */
  directories(): readonly string[] {
    return this.dirs;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.watchers) w.stop();
    await this.sandbox.close();
  }

  current(): PluginSet {
    return this.set;
  }

  onChange(fn: (s: PluginSet) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * The source catalog changed: plugins refused for an unknown source, and
   * loaded ones naming a source that is gone, are validated again.
   */
  revalidateSources(): Promise<void> {
    this.sourcesChanged = true;
    return this.rescan();
  }

  rescan(): Promise<void> {
    if (this.stopped || this.dirs.length === 0) return Promise.resolve();
    return this.scan.run();
  }

  isQuarantined(p: LoadedPlugin): boolean {
    return this.health.get(this.healthKey(p))?.quarantined ?? false;
  }

  /** The configuration a plugin's calls get (see plugins/ABI.md, "Configuration"). */
  configFor(p: LoadedPlugin): PluginConfigState {
    return this.configs.get(p.manifest.name)?.state ?? { value: undefined, usable: true };
  }

  /**
   * Runs check() under the deadline and validates its output; never rejects.
   * `input` builds the ABI input from the plugin's configuration.
   */
  async runCheck(p: LoadedPlugin, input: string | ((config: ConfigValue | undefined) => string)): Promise<CheckOutcome> {
    const cfg = this.configFor(p);
    if (!cfg.usable) {
      // Never run with defaults the operator did not mean.
      return { kind: "fault", reason: "ConfigInvalid", message: cfg.error ?? "configuration invalid", durationMs: 0 };
    }
    const hk = this.healthKey(p);
    let h = this.health.get(hk);
    if (!h) {
      h = { faults: 0, quarantined: false, lastFault: "", retries: 0, retryAt: 0, name: p.manifest.name };
      this.health.set(hk, h);
    }
    const now = Date.now();
    if (h.quarantined && now < h.retryAt) {
      return { kind: "fault", reason: "PluginQuarantined", message: quarantineMessage(h, now), durationMs: 0 };
    }
    const retrying = h.quarantined;
    if (retrying) this.opts.onQuarantineRetry?.(p);
    const text = typeof input === "string" ? input : input(cfg.value);
    const outcome = await callCheck(this.sandbox, p, text, this.opts.timeoutMs);
    if (outcome.kind === "verdict") {
      if (h.quarantined) {
        this.opts.logger?.info({ plugin: p.manifest.name, file: p.file, sha256: p.sha256, retries: h.retries + 1 }, "plugin quarantine ended: a retry succeeded");
        this.setQuarantined(h, false);
      }
      h.faults = 0;
      h.retries = 0;
    } else if (outcome.reason !== "PluginUnloaded") {
      h.faults++;
      h.lastFault = `${outcome.reason}: ${outcome.message}`;
      if (retrying) {
        // One log line per transition, not per retry: a failed retry only pushes the next one out.
        h.retries++;
        h.retryAt = Date.now() + this.backoff(h.retries);
        return { kind: "fault", reason: "PluginQuarantined", message: quarantineMessage(h, Date.now()), durationMs: outcome.durationMs };
      }
      const limit = this.opts.quarantineAfter ?? DEFAULTS.quarantineAfter;
      if (h.faults >= limit && !h.quarantined) {
        h.retries = 0;
        h.retryAt = Date.now() + this.backoff(0);
        this.setQuarantined(h, true);
        const message = quarantineMessage(h, Date.now());
        this.opts.logger?.warn({ plugin: p.manifest.name, file: p.file, sha256: p.sha256, lastFault: h.lastFault, retryInMs: h.retryAt - Date.now() }, "plugin quarantined");
        this.opts.onQuarantined?.(p, message);
        return { kind: "fault", reason: "PluginQuarantined", message, durationMs: outcome.durationMs };
      }
    }
    return outcome;
  }

  private backoff(failedRetries: number): number {
    const base = this.opts.quarantineBackoffMs ?? DEFAULTS.quarantineBackoffMs;
    const max = Math.max(base, this.opts.quarantineBackoffMaxMs ?? DEFAULTS.quarantineBackoffMaxMs);
    return Math.min(base * 2 ** Math.min(failedRetries, 30), max);
  }

  private setQuarantined(h: Health, on: boolean): void {
    if (h.quarantined === on) return;
    h.quarantined = on;
    this.quarantinedCount += on ? 1 : -1;
    this.opts.onQuarantineCount?.(this.quarantinedCount);
  }

  /** Faults are counted per file, content and configuration: a change of any starts afresh. */
  private healthKey(p: LoadedPlugin): string {
    return `${p.dir ?? ""}\0${p.file}\0${p.sha256}\0${this.configFor(p).sha256 ?? ""}`;
  }

  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    const maxFileBytes = this.opts.maxFileBytes ?? DEFAULTS.maxFileBytes;
    const next = new Map<string, FileEntry>();
    const configFiles: Array<ConfigFile & { dir: string }> = [];
    const multi = this.dirs.length > 1;
    const sourcesChanged = this.sourcesChanged;
    this.sourcesChanged = false;
    const stale = (e: FileEntry): boolean =>
      sourcesChanged &&
      (e.result.ok ? e.result.plugin.manifest.sources.some((s) => !this.opts.isKnownSource(s)) : e.result.refusal.reason === "UnknownSource");
    for (const dir of this.dirs) {
      const scan = await scanPluginDir(dir, maxFileBytes, DEFAULTS.maxConfigBytes);
      if (!scan.exists) {
        if (!this.dirMissingLogged.has(dir)) {
          this.opts.logger?.warn({ dir }, "plugins directory does not exist; running without its plugins and watching for it");
          this.dirMissingLogged.add(dir);
        }
        continue;
      }
      this.dirMissingLogged.delete(dir);
      for (const c of scan.configs) configFiles.push({ ...c, dir });
      for (const f of scan.files) {
        const id = join(dir, f.name);
        const prev = this.entries.get(id);
        const now = Date.now();
        if (prev && reusable(prev, f.sha256, now) && !stale(prev)) {
          next.set(id, prev);
          continue;
        }
        const result: LoadResult = f.bytes
          ? await loadPlugin(f.bytes, f.name, {
              sandbox: this.sandbox,
              isKnownSource: this.opts.isKnownSource,
              maxFileBytes,
              memoryMiB: this.opts.memoryMiB,
              timeoutMs: this.opts.timeoutMs,
            })
          : { ok: false, refusal: refusal(f.name, "TooLarge", `file is ${f.size} bytes; the cap is ${maxFileBytes} bytes`, f.sha256) };
        if (this.stopped) {
          if (result.ok) this.sandbox.unregister(result.plugin.key);
          return;
        }
        if (multi) {
          if (result.ok) result.plugin.dir = dir;
          else result.refusal.dir = dir;
        }
        const entry: FileEntry = { dir, name: f.name, sha256: f.sha256, result };
        if (!result.ok && result.refusal.reason === "PluginTimeout") {
          // Retried with backoff rather than refused for good: the deadline may
          // have been missed because the node was starved, not because the
          // plugin loops.
          const timeouts = prev && prev.sha256 === f.sha256 ? (prev.timeouts ?? 0) + 1 : 1;
          entry.timeouts = timeouts;
          entry.retryAt = now + Math.min(TIMEOUT_RETRY_BASE_MS * 2 ** (timeouts - 1), TIMEOUT_RETRY_MAX_MS);
        }
        next.set(id, entry);
      }
      for (const e of scan.errors) {
        const id = join(dir, e.name);
        const prev = this.entries.get(id);
        const sha = `unreadable:${e.message}`;
        if (prev && prev.sha256 === sha) next.set(id, prev);
        else {
          const r = refusal(e.name, "Unreadable", e.message);
          if (multi) r.dir = dir;
          next.set(id, { dir, name: e.name, sha256: sha, result: { ok: false, refusal: r } });
        }
      }
    }
    await this.swap(next, configFiles);
  }

  /**
   * Validates each plugin's configuration file (the last directory holding
   * NAME.yaml, NAME.yml or NAME.json wins, like plugins). A bad file keeps the
   * last good configuration of the same plugin and is reported as a refusal.
   */
  private async reconcileConfigs(plugins: readonly LoadedPlugin[], files: ReadonlyArray<ConfigFile & { dir: string }>): Promise<{ configs: Map<string, ConfigEntry>; refusals: PluginRefusal[] }> {
    const multi = this.dirs.length > 1;
    const byStem = new Map<string, Array<ConfigFile & { dir: string }>>();
    for (const f of files) {
      const stem = f.name.replace(/\.(yaml|yml|json)$/, "");
      byStem.set(stem, [...(byStem.get(stem) ?? []), f]);
    }
    const names = new Set(plugins.map((p) => p.manifest.name));
    const refusals: PluginRefusal[] = [];
    const mkRefusal = (f: ConfigFile & { dir: string }, message: string): PluginRefusal => {
      const prev = [...this.configs.values()].find((c) => c.refusal && c.refusal.file === f.name && c.refusal.sha256 === f.sha256 && c.refusal.message === message)?.refusal;
      if (prev) return prev;
      const r = refusal(f.name, "ConfigInvalid", message, f.sha256);
      if (multi) r.dir = f.dir;
      return r;
    };
    for (const [stem, list] of byStem) {
      if (names.has(stem)) continue;
      const f = list[list.length - 1]!;
      const known = [...names].sort().join(", ") || "none";
      refusals.push(mkRefusal(f, `${f.path}: no plugin named ${stem} is loaded, so nothing reads this file (plugins: ${known})`));
    }
    const configs = new Map<string, ConfigEntry>();
    let parse: typeof import("./plugin-config.js") | null = null;
    for (const p of plugins) {
      const name = p.manifest.name;
      const prev = this.configs.get(name);
      const list = byStem.get(name) ?? [];
      const lastDir = list.length > 0 ? list[list.length - 1]!.dir : undefined;
      const candidates = list.filter((f) => f.dir === lastDir);
      const id = `${candidates.map((f) => `${f.path}\0${f.sha256}`).join("\0")}\0${p.sha256}`;
      if (prev && prev.id === id) {
        configs.set(name, prev);
        if (prev.refusal) refusals.push(prev.refusal);
        continue;
      }
      let result: { ok: true; value: ConfigValue; file?: string; sha256?: string } | { ok: false; message: string; file: ConfigFile & { dir: string } };
      if (candidates.length === 0) {
        result = { ok: true, value: p.manifest.config ? configDefaults(p.manifest.config) : {} };
      } else if (candidates.length > 1) {
        result = { ok: false, message: `${candidates.map((f) => f.path).join(" and ")} both configure ${name}; keep one`, file: candidates[0]! };
      } else {
        const f = candidates[0]!;
        if (f.text === null) {
          result = { ok: false, message: `${f.path}: ${f.size} bytes; the cap is ${DEFAULTS.maxConfigBytes} bytes`, file: f };
        } else if (isBlankConfig(f.text) && f.name.endsWith(".json") === false) {
          // Every key commented out (as the base manifests ship them): the defaults, without loading the YAML parser.
          result = { ok: true, value: p.manifest.config ? configDefaults(p.manifest.config) : {}, file: f.path, sha256: f.sha256 };
        } else {
          parse ??= await import("./plugin-config.js");
          const r = parse.parsePluginConfig(f.text, f.path, name, p.manifest.config);
          result = r.ok ? { ok: true, value: r.value, file: f.path, sha256: f.sha256 } : { ok: false, message: r.message, file: f };
        }
      }
      let entry: ConfigEntry;
      if (result.ok) {
        const value = p.manifest.config ? result.value : undefined;
        entry = { id, state: { value, usable: true, ...(result.file ? { file: result.file, sha256: result.sha256 } : {}) } };
        if (prev?.state.error !== undefined || prev?.state.sha256 !== entry.state.sha256) {
          if (result.file) this.opts.logger?.info({ plugin: name, file: result.file, sha256: result.sha256 }, "plugin configuration applied");
          else if (prev?.state.file) this.opts.logger?.info({ plugin: name }, "plugin configuration removed; defaults apply");
        }
      } else {
        // Last good configuration of the same plugin, if there was one.
        const good = prev?.state.usable ? prev.state : undefined;
        const r = mkRefusal(result.file, result.message);
        entry = {
          id,
          state: good
            ? { value: good.value, file: good.file, sha256: good.sha256, error: result.message, usable: true }
            : { value: undefined, error: result.message, usable: false },
          refusal: r,
        };
        refusals.push(r);
      }
      configs.set(name, entry);
    }
    return { configs, refusals };
  }

  private async swap(next: Map<string, FileEntry>, configFiles: ReadonlyArray<ConfigFile & { dir: string }>): Promise<void> {
    const refusals: PluginRefusal[] = [];
    const overrides: Override[] = [];
    // Directory order, then file order: within a directory the first file
    // holding a name wins (DuplicateName for the rest); a later directory
    // replaces the name outright.
    const byName = new Map<string, { dirIndex: number; id: string; plugin: LoadedPlugin }>();
    const order = [...next.entries()].sort(([, a], [, b]) => this.dirs.indexOf(a.dir) - this.dirs.indexOf(b.dir) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const [id, entry] of order) {
      if (!entry.result.ok) {
        refusals.push(entry.result.refusal);
        continue;
      }
      const p = entry.result.plugin;
      const dirIndex = this.dirs.indexOf(entry.dir);
      const holder = byName.get(p.manifest.name);
      if (holder !== undefined && holder.dirIndex === dirIndex) {
        entry.duplicate ??= refusal(entry.name, "DuplicateName", `plugin name ${p.manifest.name} is already provided by ${holder.plugin.file}`, p.sha256);
        if (this.dirs.length > 1) entry.duplicate.dir = entry.dir;
        refusals.push(entry.duplicate);
        continue;
      }
      entry.duplicate = undefined;
      if (holder !== undefined) {
        const o = overrides.findIndex((x) => x.name === p.manifest.name);
        if (o >= 0) overrides.splice(o, 1);
        overrides.push({ name: p.manifest.name, file: id, replaced: holder.id });
      }
      byName.set(p.manifest.name, { dirIndex, id, plugin: p });
    }
    const plugins = [...byName.values()].map((h) => h.plugin).sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
    const cfg = await this.reconcileConfigs(plugins, configFiles);
    if (this.stopped) return;
    refusals.push(...cfg.refusals);
    const prev = this.set;
    const prevKeys = new Set(prev.plugins.map((p) => p.key));
    const prevRefusals = new Set(prev.refusals.map(refusalId));
    const configSig = (m: Map<string, ConfigEntry>) => JSON.stringify([...m].map(([k, e]) => [k, e.state.sha256 ?? "", e.state.error ?? ""]));
    const changed =
      plugins.length !== prev.plugins.length ||
      refusals.length !== prev.refusals.length ||
      plugins.some((p) => !prevKeys.has(p.key)) ||
      refusals.some((r) => !prevRefusals.has(refusalId(r))) ||
      JSON.stringify(overrides) !== JSON.stringify(prev.overrides) ||
      configSig(cfg.configs) !== configSig(this.configs);
    this.configs = cfg.configs;

    const old = this.entries;
    this.entries = next;
    // Modules of replaced or removed files leave the sandbox only after the
    // swap: a round still holding the old set gets PluginUnloaded for them,
    // which the engine discards because the plugin is no longer current.
    const liveKeys = new Set([...next.values()].flatMap((e) => (e.result.ok ? [e.result.plugin.key] : [])));
    for (const e of old.values()) {
      if (e.result.ok && !liveKeys.has(e.result.plugin.key)) this.sandbox.unregister(e.result.plugin.key);
    }
    const liveHealth = new Set(plugins.map((p) => this.healthKey(p)));
    for (const [k, h] of this.health) {
      if (liveHealth.has(k)) continue;
      if (h.quarantined) {
        this.opts.logger?.info({ plugin: h.name }, "plugin quarantine ended: its file or configuration changed");
        this.setQuarantined(h, false);
      }
      this.health.delete(k);
    }

    if (!changed) return;
    this.set = Object.freeze({
      plugins: Object.freeze(plugins),
      refusals: Object.freeze(refusals),
      overrides: Object.freeze(overrides),
      version: prev.version + 1,
    });
    for (const p of plugins) {
      if (!prevKeys.has(p.key)) {
        this.opts.logger?.info({ plugin: p.manifest.name, version: p.manifest.version, file: p.file, sha256: p.sha256 }, "plugin loaded");
        this.opts.onLoaded?.(p);
      }
    }
    for (const r of refusals) {
      if (!prevRefusals.has(refusalId(r))) {
        this.opts.logger?.warn({ file: r.file, dir: r.dir, reason: r.reason, sha256: r.sha256, detail: r.message }, r.reason === "ConfigInvalid" ? "plugin configuration refused" : "plugin refused");
        this.opts.onRefused?.(r);
      }
    }
    const nowKeys = new Set(plugins.map((p) => p.key));
    for (const p of prev.plugins) {
      if (!nowKeys.has(p.key)) this.opts.logger?.info({ plugin: p.manifest.name, file: p.file }, "plugin unloaded");
    }
    for (const fn of this.listeners) fn(this.set);
  }
}

function refusalId(r: PluginRefusal): string {
  const detail = r.reason === "Unreadable" || r.reason === "ConfigInvalid" ? r.message : "";
  return `${r.dir ?? ""}\0${r.file}\0${r.reason}\0${r.sha256 ?? ""}\0${detail}`;
}

function quarantineMessage(h: Health, now: number): string {
  const inS = Math.max(0, Math.ceil((h.retryAt - now) / 1000));
  const at = new Date(h.retryAt).toISOString();
  return `quarantined after ${h.faults} consecutive faults (last: ${h.lastFault}); next retry in ${inS}s (at ${at}), or at once when the plugin file changes`;
}
