// Per-plugin configuration across the plugin directories: which file
// configures which plugin (the last directory holding NAME.yaml, NAME.yml or
// NAME.json wins, like plugins), its validation against the plugin's
// declaration, and the rule that a refused file leaves the last valid
// configuration in force. Files with nothing but comments never load the YAML
// parser (plugin-config.ts is imported on first real use).

import type { Logger } from "../observability/logger.js";
import { refusal } from "./loader.js";
import type { ConfigFile } from "./plugin-dir.js";
import { configDefaults, isBlankConfig, type ConfigValue } from "./schema.js";
import { DEFAULTS, type LoadedPlugin, type PluginRefusal, type RefusalReason } from "./types.js";

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

export interface ConfigEntry {
  /** Identity of what was validated: file path, content and plugin content. */
  id: string;
  state: PluginConfigState;
  refusal?: PluginRefusal;
}

/**
 * Validates each plugin's configuration file (the last directory holding
 * NAME.yaml, NAME.yml or NAME.json wins, like plugins). A bad file keeps the
 * last good configuration of the same plugin and is reported as a refusal.
 */
export async function reconcileConfigs(
  previous: ReadonlyMap<string, ConfigEntry>,
  plugins: readonly LoadedPlugin[],
  files: ReadonlyArray<ConfigFile & { dir: string }>,
  opts: { multi: boolean; logger?: Logger },
): Promise<{ configs: Map<string, ConfigEntry>; refusals: PluginRefusal[] }> {
  const { multi, logger } = opts;
  const byStem = new Map<string, Array<ConfigFile & { dir: string }>>();
  for (const f of files) {
    const stem = f.name.replace(/\.(yaml|yml|json)$/, "");
    byStem.set(stem, [...(byStem.get(stem) ?? []), f]);
  }
  const names = new Set(plugins.map((p) => p.manifest.name));
  const refusals: PluginRefusal[] = [];
  const mkRefusal = (f: ConfigFile & { dir: string }, message: string, reason: RefusalReason = "ConfigInvalid"): PluginRefusal => {
    const prev = [...previous.values()].find((c) => c.refusal && c.refusal.file === f.name && c.refusal.sha256 === f.sha256 && c.refusal.reason === reason && c.refusal.message === message)?.refusal;
    if (prev) return prev;
    const r = refusal(f.name, reason, message, f.sha256);
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
    const prev = previous.get(name);
    const list = byStem.get(name) ?? [];
    const lastDir = list.length > 0 ? list[list.length - 1]!.dir : undefined;
    const candidates = list.filter((f) => f.dir === lastDir);
    // A lock's verdict is part of what was judged: a lock that stops allowing the same bytes refuses them.
    const id = `${candidates.map((f) => `${f.path}\0${f.sha256}\0${f.refused ? `${f.refused.reason}\0${f.refused.message}` : ""}`).join("\0")}\0${p.sha256}`;
    if (prev && prev.id === id) {
      configs.set(name, prev);
      if (prev.refusal) refusals.push(prev.refusal);
      continue;
    }
    let result:
      | { ok: true; value: ConfigValue; file?: string; sha256?: string }
      | { ok: false; message: string; file: ConfigFile & { dir: string }; reason?: RefusalReason };
    const lockRefused = candidates.find((f) => f.refused);
    if (lockRefused?.refused) {
      // Not allowed by --plugins-lock: refused unread, and the last good configuration stays.
      result = { ok: false, message: lockRefused.refused.message, file: lockRefused, reason: lockRefused.refused.reason as RefusalReason };
    } else if (candidates.length === 0) {
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
        if (result.file) logger?.info({ plugin: name, file: result.file, sha256: result.sha256 }, "plugin configuration applied");
        else if (prev?.state.file) logger?.info({ plugin: name }, "plugin configuration removed; defaults apply");
      }
    } else {
      // Last good configuration of the same plugin, if there was one.
      const good = prev?.state.usable ? prev.state : undefined;
      const r = mkRefusal(result.file, result.message, result.reason);
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
