// A command source whose answer only changes with something that can be read
// cheaply (a file, no fork) is kept while that "key" is unchanged, instead of
// being re-run every TTL. `lfs getname` is the case in point: it lists the
// Lustre mounts (`<fsname>-<instance> <mountpoint>`), so its answer can only
// change when a Lustre file system is mounted or unmounted, and a fork costs
// the gateway's main thread more than reading the mount table does.
//
// The catalog applies the rule (catalog.ts): the key is read before the
// command runs and stamped on its result; once the normal TTL has passed, the
// result is kept for another TTL when the key reads the same, the result was a
// success and it is younger than the rule's max age. A key that cannot be told
// (file missing, unreadable, cut, or no matching mount) keeps nothing: the
// source then lives its normal TTL, exactly as without the rule.

import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { SingleFlightCache } from "./cache.js";
import type { ProcessNamespace } from "../../exec/process-namespace.js";
import { readKernelFile } from "./read-file.js";

export interface KeepWhile {
  /** For describe(): what the key is read from. */
  what: string;
  /** A kept result is re-run after this long whatever the key says. */
  maxAgeMs: number;
  /** The key now; undefined when it cannot be told (nothing is kept then). */
  key(): Promise<string | undefined>;
}

/**
 * Why 5 minutes: the key cannot see everything. The kernel hands a freed mount
 * ID to the next mount (lowest free), so an unmount and a remount of the same
 * path can print an identical mountinfo line; the llite directory names (the
 * instance) catch that where sysfs has them, but an older client or a trimmed
 * sysfs has none. One `lfs getname` every 5 minutes bounds how long a missed
 * remount can go unseen, at a cost (one fork per 5 min) nobody can measure.
 */
export const KEEP_MAX_AGE_MS = 5 * 60_000;

/** Where the mount table of the namespace that matters is (the one proc.mounts reads). */
export type MountinfoAt = { path: string } | { ns: Pick<ProcessNamespace, "prefix" | "procfs" | "name"> };

export interface LustreMountsKeyOptions {
  mountinfo: MountinfoAt;
  /** --path.sysfs: `<sysfs>/fs/lustre/llite/<fsname>-<instance>` joins the key when present. */
  sysfs?: string;
  /** The key is re-read at most this often (the file sources' TTL); readers in between share it. */
  ttlMs: number;
  maxBytes: number;
  maxAgeMs?: number;
  /** Monotonic milliseconds (the catalog's clock). */
  now: () => number;
}

/**
 * The Lustre mounts of a mount namespace, as a key: the `lustre` lines of its
 * `mountinfo` (mount ID first, so a remount that gets a new ID changes the key
 * even when the rest of the line reads the same), plus the llite directory
 * names of sysfs (`<fsname>-<instance>`: a new superblock is a new instance).
 * No Lustre line, or a mountinfo that cannot be read whole: no key.
 */
export function lustreMountsKey(opts: LustreMountsKeyOptions): KeepWhile {
  const at = opts.mountinfo;
  const llite = opts.sysfs === undefined ? undefined : join(opts.sysfs, "fs", "lustre", "llite");
  const what = `lustre lines of ${"path" in at ? at.path : join(at.ns.procfs, `{pid of ${at.ns.name}}`, "mountinfo")}${llite ? ` and ${llite}` : ""}`;
  // undefined is a valid answer ("cannot tell"), so it is boxed for the cache.
  const cache = new SingleFlightCache<{ key: string | undefined }>(opts.now);
  const read = async (): Promise<{ key: string | undefined }> => {
    let path: string;
    if ("path" in at) path = at.path;
    else {
      const found = await at.ns.prefix();
      if (!found.ok) return { key: undefined };
      path = join(at.ns.procfs, String(found.pid), "mountinfo");
    }
    const r = readKernelFile(path, opts.maxBytes);
    if (!r.ok || r.truncated) return { key: undefined };
    const lines = lustreMountinfoLines(r.text);
    if (lines.length === 0) return { key: undefined };
    const instances = llite ? await dirNames(llite) : "";
    return { key: `${lines.join("\n")}\n${instances}` };
  };
  return {
    what,
    maxAgeMs: opts.maxAgeMs ?? KEEP_MAX_AGE_MS,
    key: async () => (await cache.get("", opts.ttlMs, read)).key,
  };
}

/**
 * The lines of a mountinfo whose file system type (the first field after the
 * lone `-`) is `lustre`, as printed. Paths are escaped by the kernel (\040 for
 * a space), so fields never contain a space; a last line without its newline
 * was cut and is not a line.
 */
export function lustreMountinfoLines(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  // Cheap filter first: most of a node's mounts are not Lustre.
  for (let at = text.indexOf(" - lustre ", start); at >= 0; at = text.indexOf(" - lustre ", start)) {
    const lineStart = text.lastIndexOf("\n", at) + 1;
    const end = text.indexOf("\n", at);
    if (end < 0) break;
    start = end + 1;
    const line = text.slice(lineStart, end);
    const f = line.split(" ");
    const sep = f.indexOf("-", 6);
    if (sep > 0 && f[sep + 1] === "lustre" && /^\d+$/.test(f[0] ?? "")) out.push(line);
  }
  return out;
}

async function dirNames(dir: string): Promise<string> {
  try {
    return (await readdir(dir)).sort().join(" ");
  } catch {
    // No llite directory (an old client, a fake tree): the mount lines alone decide.
    return "";
  }
}
