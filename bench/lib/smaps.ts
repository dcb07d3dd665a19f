// RSS by kind of mapping, from /proc/<pid>/smaps: what of a process's resident
// memory is the node binary paged in, shared libraries, malloc, and anonymous
// mappings (V8 heaps of every isolate, code, thread stacks).
import fs from "node:fs";

export interface SmapsBreakdown {
  /** node executable, code pages (r-xp) */
  nodeText: number;
  /** node executable, read-only and data pages (snapshot, builtins, ICU data, .data) */
  nodeData: number;
  /** every other file mapping (libc, libstdc++, ...) */
  libs: number;
  /** the brk heap: malloc (V8's off-heap structures, ArrayBuffer backing, libuv, OpenSSL) */
  malloc: number;
  /** anonymous mappings: V8 heap pages of every isolate, code ranges, thread stacks, large mallocs */
  anon: number;
  /** everything else ([stack], [vdso], ...) */
  other: number;
  total: number;
}

/** All values in MiB. */
export function parseSmaps(text: string, exe: string): SmapsBreakdown {
  const b: SmapsBreakdown = { nodeText: 0, nodeData: 0, libs: 0, malloc: 0, anon: 0, other: 0, total: 0 };
  let cur: keyof SmapsBreakdown = "other";
  for (const line of text.split("\n")) {
    const m = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (m) {
      const [, perms, name] = m;
      if (name === exe) cur = perms.includes("x") ? "nodeText" : "nodeData";
      else if (name.startsWith("/")) cur = "libs";
      else if (name === "[heap]") cur = "malloc";
      else if (name === "") cur = "anon";
      else cur = "other";
      continue;
    }
    const r = /^Rss:\s+(\d+) kB/.exec(line);
    if (r) {
      const mib = Number(r[1]) / 1024;
      b[cur] += mib;
      b.total += mib;
    }
  }
  return b;
}

export function smapsOf(pid: number): SmapsBreakdown {
  const exe = fs.readlinkSync(`/proc/${pid}/exe`);
  return parseSmaps(fs.readFileSync(`/proc/${pid}/smaps`, "utf8"), exe);
}
