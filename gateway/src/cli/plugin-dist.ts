// What `plugin lock` and `plugin pack` read from a plugin directory: its
// modules (each judged by the gateway's own validation, so nothing the gateway
// would refuse gets locked or packed), its configuration files, and its lock.
// Files are read once and the same bytes are hashed, judged and written.

import { lstat, readdir, readFile, realpath } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { inspectPlugin } from "../runtime/inspect.js";
import { CONFIG_SUFFIXES } from "../runtime/plugin-dir.js";
import { LOCK_FILE, sha256Of, type PluginLock } from "../runtime/plugin-lock.js";
import type { PluginManifest } from "../runtime/types.js";

export interface DistModule {
  file: string;
  bytes: Uint8Array;
  sha256: string;
  manifest: PluginManifest;
}
export interface DistFile {
  file: string;
  bytes: Uint8Array;
  sha256: string;
}
export interface DistDir {
  modules: DistModule[];
  configs: DistFile[];
  /** plugins.lock and plugins.lock.sig, when the directory has them. */
  lockFiles: DistFile[];
}

export class DistError extends Error {}

const isConfig = (name: string) => CONFIG_SUFFIXES.some((s) => name.endsWith(s) && name.length > s.length);

/**
 * Reads DIR's plugin files. A symlink is followed only inside DIR (a
 * ConfigMap's x.wasm -> ..data/x.wasm); one leading out of it is an error,
 * never a file silently taken from elsewhere.
 */
export async function readDistDir(dir: string, isKnownSource: (name: string) => boolean): Promise<DistDir> {
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch (e) {
    throw new DistError(`cannot read ${dir}: ${(e as Error).message}`);
  }
  const root = await realpath(dir);
  const out: DistDir = { modules: [], configs: [], lockFiles: [] };
  const refused: string[] = [];
  for (const name of names) {
    if (name.startsWith(".")) continue;
    const lock = name === LOCK_FILE || name === `${LOCK_FILE}.sig`;
    if (!lock && !name.endsWith(".wasm") && !isConfig(name)) continue;
    const path = join(dir, name);
    const st = await lstat(path);
    if (st.isSymbolicLink()) {
      const target = await realpath(path);
      const rel = relative(root, target);
      if (rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) throw new DistError(`${name} is a link to ${target}, outside ${dir}`);
    } else if (!st.isFile()) continue;
    const bytes = new Uint8Array(await readFile(path));
    const f = { file: name, bytes, sha256: sha256Of(bytes) };
    if (lock) out.lockFiles.push(f);
    else if (isConfig(name)) out.configs.push(f);
    else {
      const info = await inspectPlugin(bytes, { file: name, isKnownSource });
      if (!info.accepted || !info.manifest) refused.push(`${name}: ${info.refusal?.reason}: ${info.refusal?.message}`);
      else out.modules.push({ ...f, manifest: info.manifest });
    }
  }
  if (refused.length) throw new DistError(`the gateway would refuse ${refused.length === 1 ? "this module" : "these modules"}:\n  ${refused.join("\n  ")}`);
  if (out.modules.length === 0) throw new DistError(`${dir} holds no .wasm module`);
  return out;
}

/** The lock of what `readDistDir` found. */
export function lockOf(d: DistDir): PluginLock {
  return {
    lockVersion: 1,
    modules: d.modules.map((m) => ({ file: m.file, plugin: m.manifest.name, abi: m.manifest.abi, sha256: m.sha256 })),
    configs: d.configs.map((c) => ({ file: c.file, sha256: c.sha256 })),
  };
}
