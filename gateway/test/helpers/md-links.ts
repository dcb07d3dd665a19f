// Relative links in Markdown: every `[text](target)` outside code, whose target
// is not a URL, must name a file or directory that exists, and a `#anchor` on
// a Markdown target (or on the page itself) must be one of its headings'
// GitHub anchors or an explicit `<a id>`/`<a name>`.
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

/** A page's lines outside fenced code blocks (fenced lines blank, line numbers kept). */
function outsideFences(text: string): string[] {
  let fence: string | null = null;
  return text.split("\n").map((line) => {
    const m = /^\s*(```+|~~~+)/.exec(line);
    if (fence) {
      if (m && m[1]![0] === fence[0] && m[1]!.length >= fence.length) fence = null;
      return "";
    }
    if (m) {
      fence = m[1]!;
      return "";
    }
    return line;
  });
}

const CODE_SPAN = /(`+)([^`]*?)\1/g;

// A tool that moves a section between pages and rewrites its relative links
// must leave code alone: `[a-z](x)` in a regular expression is not a link, and
// rewriting it to `[a-z](../dir/x)` changes what the page states. Relative
// link syntax inside a code span is such a rewrite's footprint (a code span
// that means to show a link shows a URL or a bare path instead).
const REWRITTEN_IN_CODE = /\]\(\.\.?\//;

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
export function slug(heading: string): string {
  return heading
    .replace(/`/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

const anchorCache = new Map<string, Set<string>>();
export function anchorsOf(file: string): Set<string> {
  let set = anchorCache.get(file);
  if (set) return set;
  set = new Set();
  const text = readFileSync(file, "utf8");
  const seen = new Map<string, number>();
  let fence: string | null = null;
  for (const line of text.split("\n")) {
    const f = /^\s*(```+|~~~+)/.exec(line);
    if (fence) {
      if (f && f[1]![0] === fence[0] && f[1]!.length >= fence.length) fence = null;
      continue;
    }
    if (f) {
      fence = f[1]!;
      continue;
    }
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      set.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const a of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) set.add(a[1]!);
  }
  anchorCache.set(file, set);
  return set;
}

export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  why: string;
}

/** Every broken relative link in FILES (paths relative to ROOT). */
export function brokenLinks(root: string, files: string[]): BrokenLink[] {
  anchorCache.clear();
  const out: BrokenLink[] = [];
  for (const rel of files) {
    const abs = path.join(root, rel);
    const lines = outsideFences(readFileSync(abs, "utf8"));
    lines.forEach((raw, i) => {
      for (const c of raw.matchAll(CODE_SPAN)) {
        if (REWRITTEN_IN_CODE.test(c[2]!)) out.push({ file: rel, line: i + 1, target: c[2]!, why: "relative link syntax inside a code span (a link rewrite that did not skip code?)" });
      }
      const line = raw.replace(CODE_SPAN, "");
      for (const m of line.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
        const hash = target.indexOf("#");
        const file = hash >= 0 ? target.slice(0, hash) : target;
        const anchor = hash >= 0 ? decodeURIComponent(target.slice(hash + 1)) : null;
        const dest = file === "" ? abs : path.resolve(path.dirname(abs), decodeURIComponent(file));
        const report = (why: string) => out.push({ file: rel, line: i + 1, target, why });
        if (!existsSync(dest)) {
          report("no such file");
          continue;
        }
        if (anchor !== null && anchor !== "" && statSync(dest).isFile() && dest.endsWith(".md") && !anchorsOf(dest).has(anchor)) {
          report(`no heading #${anchor} in ${path.relative(root, dest)}`);
        }
      }
    });
  }
  return out;
}
