// Read-only file sources by glob (`sysfs: class/infiniband/*/ports/*/state`):
// expansion under a root, and the containment rule. A pattern may not name
// `..` (refused when the file is parsed), and every match must resolve, links
// followed, inside the root's own real path: sysfs is a forest of symlinks
// that stay inside /sys, but a planted link must not turn a source into a
// reader of arbitrary host files.

import { readdir, realpath, stat } from "node:fs/promises";
import { join, sep } from "node:path";

/** More directory entries than this in one expansion means the pattern is too broad. */
const MAX_VISITED = 10_000;

export interface Expansion {
  /** Matches relative to the root, sorted; at most `limit`. */
  matches: string[];
  /** More matched than `limit`. */
  more: boolean;
}

function segmentRegex(seg: string): RegExp {
  const body = seg.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*").replace(/\?/g, "[^/]");
  return new RegExp(`^${body}$`);
}

const hasWildcard = (seg: string) => seg.includes("*") || seg.includes("?");

/** Expands GLOB (already validated) under ROOT, directory links followed. */
export async function expandGlob(root: string, glob: string, limit: number): Promise<Expansion> {
  const segments = glob.split("/");
  let level: string[] = [""];
  let visited = 0;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!;
    const last = i === segments.length - 1;
    const next: string[] = [];
    for (const rel of level) {
      if (!hasWildcard(seg)) {
        next.push(rel ? `${rel}/${seg}` : seg);
        continue;
      }
      let names: string[];
      try {
        names = await readdir(join(root, rel));
      } catch {
        continue; // not a directory, or gone: no matches below it
      }
      visited += names.length;
      if (visited > MAX_VISITED) throw new Error(`the pattern visits more than ${MAX_VISITED} directory entries; make it narrower`);
      const re = segmentRegex(seg);
      // Like a shell: a wildcard does not match a leading dot.
      for (const n of names.sort()) if (re.test(n) && !(n.startsWith(".") && !seg.startsWith("."))) next.push(rel ? `${rel}/${n}` : n);
    }
    level = next;
    if (!last) continue;
  }
  // Only what exists and is a regular file (after links) is a match.
  const matches: string[] = [];
  for (const rel of level) {
    try {
      if ((await stat(join(root, rel))).isFile()) matches.push(rel);
    } catch {
      // absent
    }
    if (matches.length > limit) break;
  }
  const more = matches.length > limit;
  return { matches: matches.slice(0, limit), more };
}

/** Whether `real` is `rootReal` or below it. */
export function within(rootReal: string, real: string): boolean {
  return real === rootReal || real.startsWith(rootReal.endsWith(sep) ? rootReal : rootReal + sep);
}

/** Matches that resolve outside the root: [relative path, where it resolves]. */
export async function escapes(root: string, matches: readonly string[]): Promise<Array<[string, string]>> {
  const rootReal = await realpath(root);
  const out: Array<[string, string]> = [];
  for (const rel of matches) {
    try {
      const real = await realpath(join(root, rel));
      if (!within(rootReal, real)) out.push([rel, real]);
    } catch {
      // vanished between expansion and check
    }
  }
  return out;
}
