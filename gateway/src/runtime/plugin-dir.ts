import { createHash } from "node:crypto";
import { createReadStream, watch, type FSWatcher } from "node:fs";
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

export interface DirWatcherOptions {
  debounceMs?: number;
  pollMs?: number;
  logger?: Logger;
}

/**
 * Calls `onChange` (debounced) after any fs event in DIR, and every pollMs
 * regardless: inotify misses some cases (the directory itself replaced, NFS,
 * events during re-watch), and the caller compares content hashes, so a
 * spurious rescan costs a few reads. The directory is re-watched when its
 * inode changes or it appears after being absent.
 */
export class DirWatcher {
  private watcher: FSWatcher | null = null;
  private watchedIno: number | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly dir: string,
    private readonly onChange: () => void,
    private readonly opts: DirWatcherOptions = {},
  ) {}

  async start(): Promise<void> {
    await this.ensureWatch();
    this.poll = setInterval(() => {
      void this.ensureWatch();
      this.onChange();
    }, this.opts.pollMs ?? 2000);
    this.poll.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    if (this.debounce) clearTimeout(this.debounce);
    this.closeWatcher();
  }

  private trigger = (): void => {
    if (this.stopped) return;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.ensureWatch();
      this.onChange();
    }, this.opts.debounceMs ?? 150);
    this.debounce.unref();
  };

  private closeWatcher(): void {
    this.watcher?.close();
    this.watcher = null;
    this.watchedIno = null;
  }

  private async ensureWatch(): Promise<void> {
    let ino: number | null = null;
    try {
      const st = await stat(this.dir);
      ino = st.isDirectory() ? st.ino : null;
    } catch {
      ino = null;
    }
    if (this.stopped) return;
    if (ino === null) {
      if (this.watcher) this.opts.logger?.warn({ dir: this.dir }, "plugins directory disappeared; polling for it");
      this.closeWatcher();
      return;
    }
    if (this.watcher && this.watchedIno === ino) return;
    this.closeWatcher();
    try {
      const w = watch(this.dir, { persistent: false }, this.trigger);
      w.on("error", () => {
        // The directory was removed or replaced: drop the watch; the next
        // poll re-establishes it.
        if (this.watcher === w) this.closeWatcher();
        this.trigger();
      });
      this.watcher = w;
      this.watchedIno = ino;
    } catch (e) {
      this.opts.logger?.warn({ dir: this.dir, err: (e as Error).message }, "cannot watch plugins directory; relying on polling");
    }
  }
}
