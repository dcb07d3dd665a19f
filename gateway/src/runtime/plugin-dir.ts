import { createHash } from "node:crypto";
import { createReadStream, type BigIntStats } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../observability/logger.js";
import { fileIdentity } from "../support/file-identity.js";

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
  /** Set when --plugins-lock does not allow this content (lock-gate.ts): the file is refused unread. */
  refused?: { reason: string; message: string };
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
  const wanted = names.sort().filter((name) => !name.startsWith(".") && (isConfigName(name) || name.endsWith(".wasm")));
  // All stats at once: the poll runs every few seconds, and each sequential
  // thread-pool round trip is one more wake-up of an otherwise idle gateway.
  const stats = await Promise.all(wanted.map((name) => stat(join(dir, name), { bigint: true }).then((st) => st, (e: unknown) => e as Error)));
  for (const [i, name] of wanted.entries()) {
    const config = isConfigName(name);
    const path = join(dir, name);
    try {
      const st = stats[i]!;
      if (st instanceof Error) throw st;
      if (!st.isFile()) continue;
      const size = Number(st.size);
      if (config) {
        if (size > maxConfigBytes) {
          configs.push({ name, path, sha256: `size:${size}:${Number(st.mtimeMs)}`, text: null, size });
          continue;
        }
        const { bytes, sha256 } = await readUnchanged(path, st);
        configs.push({ name, path, sha256, text: Buffer.from(bytes).toString("utf8"), size: bytes.length });
        continue;
      }
      if (size > maxFileBytes) {
        files.push({ name, path, size, sha256: await hashLarge(path, { dev: Number(st.dev), ino: Number(st.ino), size, mtimeMs: Number(st.mtimeMs) }), bytes: null });
        continue;
      }
      const { bytes, sha256 } = await readUnchanged(path, st);
      files.push({ name, path, size: bytes.length, sha256, bytes });
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

// The directory is polled (support/dir-watcher.ts): a file that is the one
// last read (support/file-identity.ts) has the same content, so its bytes and
// hash are reused instead of read and hashed again (on an idle gateway that
// re-read was most of its CPU, in the garbage collector).
const lastRead = new Map<string, { id: string; bytes: Uint8Array; sha256: string }>();

async function readUnchanged(path: string, st: BigIntStats): Promise<{ bytes: Uint8Array; sha256: string }> {
  const { id, settled } = fileIdentity(st);
  const known = lastRead.get(path);
  if (known && known.id === id) return known;
  const bytes = new Uint8Array(await readFile(path));
  const read = { id, bytes, sha256: createHash("sha256").update(bytes).digest("hex") };
  if (lastRead.size > 256) lastRead.clear();
  if (settled) lastRead.set(path, read);
  else lastRead.delete(path);
  return read;
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
