import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../observability/logger.js";

export interface PluginFile {
  /** Name inside the directory (x.wasm), also for symlinked ConfigMap entries. */
  name: string;
  path: string;
  size: number;
  sha256: string;
  /** null when the file is over the size cap: it is hashed by streaming and never held in memory. */
  bytes: Uint8Array | null;
}

/** A per-plugin configuration file (NAME.yaml, NAME.yml or NAME.json). */
export interface ConfigFile {
  name: string;
  path: string;
  sha256: string;
  /** null when over the size cap. */
  text: string | null;
  size: number;
}

export type ScanResult =
  | { exists: false }
  | { exists: true; files: PluginFile[]; configs: ConfigFile[]; errors: Array<{ name: string; message: string }> };

export const CONFIG_SUFFIXES = [".yaml", ".yml", ".json"] as const;
const isConfigName = (name: string) => CONFIG_SUFFIXES.some((s) => name.endsWith(s) && name.length > s.length);

/**
 * Lists DIR/*.wasm, following symlinks (a ConfigMap volume holds
 * x.wasm -> ..data/x.wasm, ..data -> ..2026_…). Hidden names are skipped:
 * the ..data indirection is only ever reached through the visible links.
 */
export async function scanPluginDir(dir: string, maxFileBytes: number, maxConfigBytes = 64 * 1024): Promise<ScanResult> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { exists: false };
    throw e;
  }
  const files: PluginFile[] = [];
  const configs: ConfigFile[] = [];
  const errors: Array<{ name: string; message: string }> = [];
  for (const name of names.sort()) {
    if (name.startsWith(".")) continue;
    const config = isConfigName(name);
    if (!config && !name.endsWith(".wasm")) continue;
    const path = join(dir, name);
    try {
      const st = await stat(path);
      if (!st.isFile()) continue;
      if (config) {
        if (st.size > maxConfigBytes) {
          configs.push({ name, path, sha256: `size:${st.size}:${st.mtimeMs}`, text: null, size: st.size });
          continue;
        }
        const bytes = await readFile(path);
        configs.push({ name, path, sha256: createHash("sha256").update(bytes).digest("hex"), text: bytes.toString("utf8"), size: bytes.length });
        continue;
      }
      if (st.size > maxFileBytes) {
        files.push({ name, path, size: st.size, sha256: await hashLarge(path, st), bytes: null });
        continue;
      }
      const bytes = new Uint8Array(await readFile(path));
      files.push({ name, path, size: bytes.length, sha256: createHash("sha256").update(bytes).digest("hex"), bytes });
    } catch (e) {
      // A dangling link mid-swap or a file removed between readdir and read:
      // the watcher's next event or poll scans again.
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT") continue;
      errors.push({ name, message: (e as Error).message });
    }
  }
  return { exists: true, files, configs, errors };
}

// Oversized files are hashed (the refusal carries a sha256) but polled every
// few seconds; remember the hash per inode/size/mtime instead of re-reading.
const largeHashes = new Map<string, string>();

async function hashLarge(path: string, st: { dev: number; ino: number; size: number; mtimeMs: number }): Promise<string> {
  const id = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  const known = largeHashes.get(id);
  if (known) return known;
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  const hex = h.digest("hex");
  if (largeHashes.size > 64) largeHashes.clear();
  largeHashes.set(id, hex);
  return hex;
}
