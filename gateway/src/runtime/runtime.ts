import type { Logger } from "../observability/logger.js";
import { loadPlugin, refusal, type LoadResult } from "./loader.js";
import { DirWatcher, scanPluginDir } from "./plugin-dir.js";
import { Sandbox } from "./sandbox.js";
import { callCheck, type CheckOutcome } from "./check-call.js";
import { SingleFlight } from "./single-flight.js";
import { DEFAULTS, type LoadedPlugin, type PluginRefusal } from "./types.js";

export type { CheckOutcome };

export interface PluginSet {
  /** Accepted plugins, sorted by file name. */
  readonly plugins: readonly LoadedPlugin[];
  readonly refusals: readonly PluginRefusal[];
  /** Bumped on every swap. */
  readonly version: number;
}

export interface RuntimeOptions {
  /** Directory of *.wasm files; without it the runtime has no plugins. */
  dir?: string;
  isKnownSource: (name: string) => boolean;
  timeoutMs?: number;
  memoryMiB?: number;
  maxFileBytes?: number;
  maxOutputBytes?: number;
  quarantineAfter?: number;
  debounceMs?: number;
  pollMs?: number;
  logger?: Logger;
  onLoaded?: (p: LoadedPlugin) => void;
  onRefused?: (r: PluginRefusal) => void;
  onQuarantined?: (p: LoadedPlugin, message: string) => void;
}

interface FileEntry {
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
}

/**
 * Owns the plugin set: scans and watches the directory, validates new or
 * changed files, and swaps in a new set only once every file in it has been
 * validated, so a reader sees either the old set or the new one. Also counts
 * consecutive faults per (file, content) and quarantines offenders.
 */
export class PluginRuntime {
  readonly sandbox: Sandbox;
  private set: PluginSet = { plugins: [], refusals: [], version: 0 };
  private entries = new Map<string, FileEntry>();
  private readonly health = new Map<string, Health>();
  private readonly listeners = new Set<(s: PluginSet) => void>();
  private readonly scan: SingleFlight;
  private watcher: DirWatcher | null = null;
  private dirMissingLogged = false;
  private stopped = false;

  constructor(private readonly opts: RuntimeOptions) {
    this.sandbox = new Sandbox({ timeoutMs: opts.timeoutMs, maxOutputBytes: opts.maxOutputBytes, memoryMiB: opts.memoryMiB, logger: opts.logger });
    this.scan = new SingleFlight(
      () => this.reconcile(),
      (err) => opts.logger?.error({ err: (err as Error).message }, "plugin directory scan failed"),
    );
  }

  /** Loads the directory once (validation included), then watches it. */
  async start(): Promise<void> {
    const dir = this.opts.dir;
    if (!dir) return;
    await this.scan.run();
    this.watcher = new DirWatcher(dir, () => void this.rescan(), {
      debounceMs: this.opts.debounceMs,
      pollMs: this.opts.pollMs,
      logger: this.opts.logger,
    });
    await this.watcher.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.watcher?.stop();
    await this.sandbox.close();
  }

  current(): PluginSet {
    return this.set;
  }

  onChange(fn: (s: PluginSet) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  rescan(): Promise<void> {
    if (this.stopped || !this.opts.dir) return Promise.resolve();
    return this.scan.run();
  }

  isQuarantined(p: LoadedPlugin): boolean {
    return this.health.get(healthKey(p))?.quarantined ?? false;
  }

  /** Runs check() under the deadline and validates its output; never rejects. */
  async runCheck(p: LoadedPlugin, input: string): Promise<CheckOutcome> {
    const hk = healthKey(p);
    const h = this.health.get(hk) ?? { faults: 0, quarantined: false, lastFault: "" };
    this.health.set(hk, h);
    if (h.quarantined) {
      return { kind: "fault", reason: "PluginQuarantined", message: quarantineMessage(h), durationMs: 0 };
    }
    const outcome = await callCheck(this.sandbox, p, input, this.opts.timeoutMs);
    if (outcome.kind === "verdict") {
      h.faults = 0;
    } else if (outcome.reason !== "PluginUnloaded") {
      h.faults++;
      h.lastFault = `${outcome.reason}: ${outcome.message}`;
      const limit = this.opts.quarantineAfter ?? DEFAULTS.quarantineAfter;
      if (h.faults >= limit && !h.quarantined) {
        h.quarantined = true;
        this.opts.logger?.warn({ plugin: p.manifest.name, file: p.file, sha256: p.sha256, lastFault: h.lastFault }, "plugin quarantined");
        this.opts.onQuarantined?.(p, quarantineMessage(h));
        return { kind: "fault", reason: "PluginQuarantined", message: quarantineMessage(h), durationMs: outcome.durationMs };
      }
    }
    return outcome;
  }

  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    const dir = this.opts.dir!;
    const maxFileBytes = this.opts.maxFileBytes ?? DEFAULTS.maxFileBytes;
    const scan = await scanPluginDir(dir, maxFileBytes);
    if (!scan.exists) {
      if (!this.dirMissingLogged) {
        this.opts.logger?.warn({ dir }, "plugins directory does not exist; running without plugins and watching for it");
        this.dirMissingLogged = true;
      }
    } else {
      this.dirMissingLogged = false;
    }
    const files = scan.exists ? scan.files : [];
    const next = new Map<string, FileEntry>();
    for (const f of files) {
      const prev = this.entries.get(f.name);
      const now = Date.now();
      if (prev && reusable(prev, f.sha256, now)) {
        next.set(f.name, prev);
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
      const entry: FileEntry = { sha256: f.sha256, result };
      if (!result.ok && result.refusal.reason === "PluginTimeout") {
        // Retried with backoff rather than refused for good: the deadline may
        // have been missed because the node was starved, not because the
        // plugin loops.
        const timeouts = prev && prev.sha256 === f.sha256 ? (prev.timeouts ?? 0) + 1 : 1;
        entry.timeouts = timeouts;
        entry.retryAt = now + Math.min(TIMEOUT_RETRY_BASE_MS * 2 ** (timeouts - 1), TIMEOUT_RETRY_MAX_MS);
      }
      next.set(f.name, entry);
    }
    if (scan.exists) {
      for (const e of scan.errors) {
        const prev = this.entries.get(e.name);
        const sha = `unreadable:${e.message}`;
        next.set(e.name, prev && prev.sha256 === sha ? prev : { sha256: sha, result: { ok: false, refusal: refusal(e.name, "Unreadable", e.message) } });
      }
    }
    this.swap(next);
  }

  private swap(next: Map<string, FileEntry>): void {
    const plugins: LoadedPlugin[] = [];
    const refusals: PluginRefusal[] = [];
    const byName = new Map<string, string>();
    for (const name of [...next.keys()].sort()) {
      const entry = next.get(name)!;
      if (!entry.result.ok) {
        refusals.push(entry.result.refusal);
        continue;
      }
      const p = entry.result.plugin;
      const holder = byName.get(p.manifest.name);
      if (holder !== undefined) {
        entry.duplicate ??= refusal(name, "DuplicateName", `plugin name ${p.manifest.name} is already provided by ${holder}`, p.sha256);
        refusals.push(entry.duplicate);
        continue;
      }
      entry.duplicate = undefined;
      byName.set(p.manifest.name, name);
      plugins.push(p);
    }
    const prev = this.set;
    const prevKeys = new Set(prev.plugins.map((p) => p.key));
    const prevRefusals = new Set(prev.refusals.map(refusalId));
    const changed =
      plugins.length !== prev.plugins.length ||
      refusals.length !== prev.refusals.length ||
      plugins.some((p) => !prevKeys.has(p.key)) ||
      refusals.some((r) => !prevRefusals.has(refusalId(r)));

    const old = this.entries;
    this.entries = next;
    // Modules of replaced or removed files leave the sandbox only after the
    // swap: a round still holding the old set gets PluginUnloaded for them,
    // which the engine discards because the plugin is no longer current.
    const liveKeys = new Set([...next.values()].flatMap((e) => (e.result.ok ? [e.result.plugin.key] : [])));
    for (const e of old.values()) {
      if (e.result.ok && !liveKeys.has(e.result.plugin.key)) this.sandbox.unregister(e.result.plugin.key);
    }
    const liveHealth = new Set([...next.values()].flatMap((e) => (e.result.ok ? [healthKey(e.result.plugin)] : [])));
    for (const k of this.health.keys()) if (!liveHealth.has(k)) this.health.delete(k);

    if (!changed) return;
    this.set = Object.freeze({ plugins: Object.freeze(plugins), refusals: Object.freeze(refusals), version: prev.version + 1 });
    for (const p of plugins) {
      if (!prevKeys.has(p.key)) {
        this.opts.logger?.info({ plugin: p.manifest.name, version: p.manifest.version, file: p.file, sha256: p.sha256 }, "plugin loaded");
        this.opts.onLoaded?.(p);
      }
    }
    for (const r of refusals) {
      if (!prevRefusals.has(refusalId(r))) {
        this.opts.logger?.warn({ file: r.file, reason: r.reason, sha256: r.sha256, detail: r.message }, "plugin refused");
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

function healthKey(p: LoadedPlugin): string {
  return `${p.file}\0${p.sha256}`;
}

function refusalId(r: PluginRefusal): string {
  return `${r.file}\0${r.reason}\0${r.sha256 ?? ""}\0${r.reason === "Unreadable" ? r.message : ""}`;
}

function quarantineMessage(h: Health): string {
  return `quarantined after ${h.faults} consecutive faults (last: ${h.lastFault}); replace the plugin file to retry`;
}
