import { dirname, join, resolve } from "node:path";
import type { Logger } from "../observability/logger.js";
import { callCheck, type CheckOutcome } from "./check-call.js";
import { reconcileConfigs, type ConfigEntry, type PluginConfigState } from "./config-set.js";
import { loadPlugin, refusal, type LoadResult } from "./loader.js";
import { DirWatcher } from "../support/dir-watcher.js";
import { LockGate, lockVerdict, type LockOptions } from "./lock-gate.js";
import { scanPluginDir, type ConfigFile } from "./plugin-dir.js";
import type { ConfigValue } from "./schema.js";
import { Sandbox } from "./sandbox.js";
import { Quarantine } from "./quarantine.js";
import { SingleFlight } from "../support/single-flight.js";
import { DEFAULTS, type LoadedPlugin, type Override, type PluginRefusal } from "./types.js";

export type { CheckOutcome, PluginConfigState };

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
  /** --plugins-lock: only modules and configuration files it lists, by sha256, load from the directories it governs. */
  lock?: LockOptions;
}

interface FileEntry {
  dir: string;
  name: string;
  sha256: string;
  result: LoadResult;
  /**
   * The last module of this file that loaded, still in force while the file's
   * current content is refused: an in-place replacement by a half-copied file,
   * garbage or another plugin's module must not make the check disappear (the
   * same rule as a refused configuration file). Removing the file removes it.
   */
  kept?: LoadedPlugin;
  /** Kept so a DuplicateName refusal keeps its first timestamp across rescans. */
  duplicate?: PluginRefusal;
  /** For a manifest() timeout, which a starved node can cause: consecutive timeouts and when to try again. */
  timeouts?: number;
  retryAt?: number;
  /** Set when the lock refused this content: re-judged at every scan, never reused once the lock allows it. */
  lockRefused?: string;
}

const TIMEOUT_RETRY_BASE_MS = 2_000;
const TIMEOUT_RETRY_MAX_MS = 5 * 60_000;

function reusable(prev: FileEntry | undefined, sha256: string, now: number): boolean {
  if (!prev || prev.sha256 !== sha256) return false;
  return prev.retryAt === undefined || now < prev.retryAt;
}

/**
 * Owns the plugin set: scans and watches the directory, validates new or
 * changed files, and swaps in a new set only once every file in it has been
 * validated, so a reader sees either the old set or the new one. Calls go
 * through the quarantine (quarantine.ts), keyed by file, content and
 * configuration.
 */
export class PluginRuntime {
  readonly sandbox: Sandbox;
  private set: PluginSet = { plugins: [], refusals: [], overrides: [], version: 0 };
  private entries = new Map<string, FileEntry>();
  private configs = new Map<string, ConfigEntry>();
  private readonly dirs: readonly string[];
  private readonly quarantine: Quarantine;
  private readonly listeners = new Set<(s: PluginSet) => void>();
  private readonly quarantineListeners = new Set<(count: number) => void>();
  private readonly scan: SingleFlight;
  private watchers: DirWatcher[] = [];
  private readonly dirMissingLogged = new Set<string>();
  private sourcesChanged = false;
  private stopped = false;
  private readonly lock: LockGate | undefined;
  /** The rescan that retries a load that timed out, due at its backoff (the watched poll is a minute). */
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDue = 0;

  constructor(private readonly opts: RuntimeOptions) {
    this.dirs = opts.dirs?.length ? [...opts.dirs] : opts.dir ? [opts.dir] : [];
    this.lock = opts.lock ? new LockGate(opts.lock) : undefined;
    this.sandbox = new Sandbox({ timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, memoryMiB: opts.memoryMiB, logger: opts.logger });
    this.quarantine = new Quarantine({
      after: opts.quarantineAfter,
      backoffMs: opts.quarantineBackoffMs,
      backoffMaxMs: opts.quarantineBackoffMaxMs,
      logger: opts.logger,
      onQuarantined: opts.onQuarantined,
      onRetry: opts.onQuarantineRetry,
      onCount: (count) => {
        for (const fn of this.quarantineListeners) fn(count);
      },
    });
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
    // A changed lock is picked up like a changed module: its directory is watched too.
    const lockDir = this.lock ? dirname(resolve(this.lock.opts.file)) : undefined;
    if (lockDir !== undefined && !this.dirs.some((d) => resolve(d) === lockDir)) {
      const w = new DirWatcher(lockDir, () => void this.rescan(), { debounceMs: this.opts.debounceMs, pollMs: this.opts.pollMs, logger: this.opts.logger });
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
    clearTimeout(this.retryTimer);
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

  /** Called when the number of quarantined plugins changes (the set itself stays). */
  onQuarantineCount(fn: (count: number) => void): () => void {
    this.quarantineListeners.add(fn);
    return () => this.quarantineListeners.delete(fn);
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

  /** A rescan in `ms`, unless one is due sooner; a later retry is set again by that rescan. */
  private retryAt(ms: number): void {
    const due = Date.now() + ms;
    if (this.retryTimer !== undefined && this.retryDue <= due) return;
    clearTimeout(this.retryTimer);
    this.retryDue = due;
    // 10 ms past the backoff: the rescan must find it elapsed.
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.rescan();
    }, ms + 10);
    this.retryTimer.unref();
  }

  isQuarantined(p: LoadedPlugin): boolean {
    return this.quarantine.isQuarantined(this.healthKey(p));
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
    const text = typeof input === "string" ? input : input(cfg.value);
    return this.quarantine.run(this.healthKey(p), p, () => callCheck(this.sandbox, p, text, this.opts.timeoutMs));
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
    // Read once per scan: every file of this scan is judged against the same lock.
    const lock = this.lock ? await this.lock.read() : undefined;
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
      const locked = lock !== undefined && this.lock!.opts.governs(dir) ? lock : undefined;
      for (const c of scan.configs) {
        const verdict = locked ? lockVerdict(locked, "config", c.name, c.sha256) : null;
        configFiles.push(verdict ? { ...c, dir, refused: verdict } : { ...c, dir });
      }
      for (const f of scan.files) {
        const id = join(dir, f.name);
        const prev = this.entries.get(id);
        const now = Date.now();
        const verdict = locked ? lockVerdict(locked, "module", f.name, f.sha256) : null;
        if (verdict) {
          // Refused before a byte of it is compiled or run.
          next.set(id, this.lockRefusal(dir, f.name, f.sha256, verdict, prev, multi));
          continue;
        }
        if (prev && !prev.lockRefused && reusable(prev, f.sha256, now) && !stale(prev)) {
          next.set(id, prev);
          // Still in its backoff: its retry stays due, whichever retry woke this scan.
          if (prev.retryAt !== undefined) this.retryAt(prev.retryAt - now);
          continue;
        }
        let result: LoadResult = f.bytes
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
        const good = lastGood(prev);
        if (result.ok && good && good.manifest.name !== result.plugin.manifest.name) {
          // The file held one plugin and now holds another: most likely a copy
          // onto the wrong name. Swapping checks under the operator's feet is
          // refused; a new name goes in a new file.
          this.sandbox.unregister(result.plugin.key);
          result = {
            ok: false,
            refusal: refusal(
              f.name,
              "NameChanged",
              `the file held plugin ${good.manifest.name} and now holds plugin ${result.plugin.manifest.name}; put ${result.plugin.manifest.name} in a file of its own, or remove ${f.name} first to drop ${good.manifest.name}`,
              f.sha256,
            ),
          };
          if (multi) result.refusal.dir = dir;
        }
        const entry: FileEntry = { dir, name: f.name, sha256: f.sha256, result };
        if (!result.ok && good) keepLastGood(entry, good);
        if (!result.ok && result.refusal.reason === "PluginTimeout") {
          // Retried with backoff rather than refused for good: the deadline may
          // have been missed because the node was starved, not because the
          // plugin loops.
          const timeouts = prev && prev.sha256 === f.sha256 ? (prev.timeouts ?? 0) + 1 : 1;
          entry.timeouts = timeouts;
          entry.retryAt = now + Math.min(TIMEOUT_RETRY_BASE_MS * 2 ** (timeouts - 1), TIMEOUT_RETRY_MAX_MS);
          this.retryAt(entry.retryAt - now);
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
          const entry: FileEntry = { dir, name: e.name, sha256: sha, result: { ok: false, refusal: r } };
          const good = lastGood(prev);
          if (good) keepLastGood(entry, good);
          next.set(id, entry);
        }
      }
    }
    await this.swap(next, configFiles);
  }

  /** A lock refusal of this content; the same refusal as last scan is kept as it was (timestamp, log once). */
  private lockRefusal(dir: string, name: string, sha256: string, verdict: { reason: string; message: string }, prev: FileEntry | undefined, multi: boolean): FileEntry {
    const key = `${verdict.reason}\0${verdict.message}`;
    if (prev && prev.lockRefused === key && prev.sha256 === sha256) return prev;
    const r = refusal(name, verdict.reason as PluginRefusal["reason"], verdict.message, sha256);
    if (multi) r.dir = dir;
    const entry: FileEntry = { dir, name, sha256, result: { ok: false, refusal: r }, lockRefused: key };
    const good = lastGood(prev);
    if (good) keepLastGood(entry, good);
    return entry;
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
      if (!entry.result.ok) refusals.push(entry.result.refusal);
      // A refused replacement leaves the file's last good module in force,
      // unless what it reads has left the source catalog since.
      const p = entry.result.ok ? entry.result.plugin : entry.kept?.manifest.sources.every((s) => this.opts.isKnownSource(s)) ? entry.kept : undefined;
      if (!p) continue;
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
    const cfg = await reconcileConfigs(this.configs, plugins, configFiles, { multi: this.dirs.length > 1, logger: this.opts.logger });
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
    const liveKeys = new Set([...next.values()].flatMap((e) => (e.result.ok ? [e.result.plugin.key] : e.kept ? [e.kept.key] : [])));
    for (const e of old.values()) {
      const key = e.result.ok ? e.result.plugin.key : e.kept?.key;
      if (key !== undefined && !liveKeys.has(key)) this.sandbox.unregister(key);
    }
    this.quarantine.retain(new Set(plugins.map((p) => this.healthKey(p))));

    if (!changed) return;
    this.set = Object.freeze({
      plugins: Object.freeze(plugins),
      refusals: Object.freeze(refusals),
      overrides: Object.freeze(overrides),
      version: prev.version + 1,
    });
    // Unloaded before loaded, each with its sha256: a replacement reads as
    // "old out, new in" in the log, in the order it took effect.
    const nowKeys = new Set(plugins.map((p) => p.key));
    for (const p of prev.plugins) {
      if (!nowKeys.has(p.key)) {
        this.opts.logger?.info({ plugin: p.manifest.name, version: p.manifest.version, file: p.file, dir: p.dir, sha256: p.sha256 }, "plugin unloaded");
      }
    }
    const prevByName = new Map(prev.plugins.map((p) => [p.manifest.name, p]));
    for (const p of plugins) {
      if (!prevKeys.has(p.key)) {
        const old = prevByName.get(p.manifest.name);
        const replaced = old && !nowKeys.has(old.key) ? { replaces: old.sha256 } : {};
        this.opts.logger?.info({ plugin: p.manifest.name, version: p.manifest.version, file: p.file, dir: p.dir, sha256: p.sha256, ...replaced }, "plugin loaded");
        this.opts.onLoaded?.(p);
      }
    }
    const keptBy = new Map([...next.values()].flatMap((e) => (!e.result.ok && e.kept && nowKeys.has(e.kept.key) ? [[e.result.refusal, e.kept] as const] : [])));
    for (const r of refusals) {
      if (!prevRefusals.has(refusalId(r))) {
        const kept = keptBy.get(r as PluginRefusal);
        const config = r.reason === "ConfigInvalid" || !r.file.endsWith(".wasm");
        const what = config ? "plugin configuration refused" : kept ? "plugin refused; the last good module stays in force" : "plugin refused";
        this.opts.logger?.warn(
          { file: r.file, dir: r.dir, reason: r.reason, sha256: r.sha256, detail: r.message, ...(kept ? { plugin: kept.manifest.name, keptSha256: kept.sha256 } : {}) },
          what,
        );
        this.opts.onRefused?.(r);
      }
    }
    for (const fn of this.listeners) fn(this.set);
  }
}

/** The module of this file that last loaded: its current one, or the one kept while its content is refused. */
function lastGood(prev: FileEntry | undefined): LoadedPlugin | undefined {
  // A file refused as a duplicate held nothing in force.
  if (!prev || prev.duplicate) return undefined;
  return prev.result.ok ? prev.result.plugin : prev.kept;
}

/** The refusal says which module stays in force, so `[!]` lines and logs tell the operator the check still runs. */
function keepLastGood(entry: FileEntry, good: LoadedPlugin): void {
  if (entry.result.ok) return;
  entry.kept = good;
  entry.result.refusal.message += `; the last good module of ${good.manifest.name} (sha256 ${good.sha256.slice(0, 12)}) stays in force until the file loads or is removed`;
}

function refusalId(r: PluginRefusal): string {
  const detail = r.reason === "Unreadable" || r.reason === "ConfigInvalid" || r.reason === "LockInvalid" || r.reason === "LockUnverified" ? r.message : "";
  return `${r.dir ?? ""}\0${r.file}\0${r.reason}\0${r.sha256 ?? ""}\0${detail}`;
}
