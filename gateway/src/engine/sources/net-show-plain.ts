// One `lnetctl net show` run a round instead of two. The readiness checks read
// `lnetctl.net_show` (plain) and the storage check `lnetctl.net_show_health`
// (`-v 3`); the verbose form prints every key the plain one does, plus blocks
// of its own under each NI (statistics, message counts, health, tunables). The
// plain source is therefore served from the verbose run with those blocks
// taken out: the same text the plain command prints, so verdicts are the
// same, and it stays byte for byte equal while only traffic counters move
// (send_count, health stats), so the readiness checks that read it are not
// called again for a counter (stable-memo.ts). Whatever the filter cannot
// vouch for (a failed or cut verbose run, a layout it does not know) makes
// the plain command run as before.

import type { Produced, SourceDef } from "./definitions.js";

/**
 * The keys only `-v`/`-v N` prints under an NI (lnetctl 2.12–2.17, ioctl and
 * netlink paths): each is a line of its own with its value on the same line
 * or indented below it.
 */
const VERBOSE_ONLY = new Set([
  "statistics",
  "sent_stats",
  "received_stats",
  "dropped_stats",
  "health stats",
  "tunables",
  "lnd tunables",
  "dev cpt",
  "CPT",
  "tcp bonding",
  "udsp info",
]);

/**
 * The plain `net show` text inside a verbose one: every line kept but the
 * verbose-only keys and what is indented under them. undefined when the text
 * is not the block YAML lnetctl prints (tabs, flow style, a verbose key as a
 * list item's first key), so the caller runs the plain command instead.
 */
export function plainNetShow(verbose: string): string | undefined {
  const out: string[] = [];
  let dropUnder = -1;
  const ends = verbose.endsWith("\n");
  const lines = (ends ? verbose.slice(0, -1) : verbose).split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.includes("\t") || line.includes("{")) return undefined;
    const body = line.trimStart();
    const indent = line.length - body.length;
    if (dropUnder >= 0) {
      if (body.length === 0 || indent > dropUnder) continue;
      dropUnder = -1;
    }
    const item = body.startsWith("- ");
    const colon = body.indexOf(":");
    const key = colon > 0 ? body.slice(item ? 2 : 0, colon).trim() : "";
    if (VERBOSE_ONLY.has(key)) {
      if (item) return undefined;
      dropUnder = indent;
      continue;
    }
    out.push(line);
  }
  return out.join("\n") + (ends ? "\n" : "");
}

/**
 * `lnetctl.net_show` served from `lnetctl.net_show_health`'s run (read through
 * the catalog, so both share one single-flight result), the plain command when
 * that run failed, was cut, or cannot be filtered. The last filtered text is
 * kept: an unchanged verbose output hands back the very same string, not a copy.
 */
export function plainFromVerbose(plain: SourceDef, readVerbose: () => Promise<Omit<Produced, "outcome"> | undefined>): SourceDef {
  let lastIn: string | undefined;
  let lastOut = "";
  const fromVerbose = async (): Promise<Produced | undefined> => {
    const v = await readVerbose();
    if (!v || !v.ok || v.truncated) return undefined;
    if (v.stdout !== lastIn) {
      const p = plainNetShow(v.stdout);
      if (p === undefined) return undefined;
      lastIn = v.stdout;
      lastOut = p;
    }
    return { ok: true, exitCode: v.exitCode, stdout: lastOut, stderr: v.stderr, error: null, truncated: false, outcome: "ok" };
  };
  return {
    ...plain,
    prepare(facts) {
      const p = plain.prepare(facts);
      if ("error" in p) return p;
      return { key: p.key, run: async () => (await fromVerbose()) ?? (await p.run()) };
    },
  };
}

/** `lnetctl.net_show` served from `lnetctl.net_show_health` when both are built in; other definitions unchanged. */
export function shareNetShow(defs: SourceDef[], read: (name: "lnetctl.net_show_health") => Promise<Omit<Produced, "outcome">>): SourceDef[] {
  if (!defs.some((d) => d.name === "lnetctl.net_show_health")) return defs;
  return defs.map((d) => (d.name === "lnetctl.net_show" ? plainFromVerbose(d, () => read("lnetctl.net_show_health")) : d));
}
