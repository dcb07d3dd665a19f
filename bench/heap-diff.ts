// `node dist/bench/heap-diff.js EARLY.heapsnapshot LATE.heapsnapshot [--top 25]`:
// what a gateway's V8 heap gained between two snapshots (taken with
// --heapsnapshot-signal; bench/growth.ts can take them), grouped by node type
// and constructor/name: count and self size in each, largest gains first.
// A leak of JS objects shows as a group whose count climbs with the run.
import fs from "node:fs";
import { isMain } from "./lib/main.js";

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

export type Groups = Map<string, { count: number; size: number }>;

/** Count and self size per "type:name" (names of strings and code shortened: they are data, not kinds). */
export function groupSnapshot(s: Snapshot): Groups {
  const f = s.snapshot.meta.node_fields;
  const width = f.length;
  const iType = f.indexOf("type");
  const iName = f.indexOf("name");
  const iSize = f.indexOf("self_size");
  const types = s.snapshot.meta.node_types[0];
  const out: Groups = new Map();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + iType]] ?? "?";
    const raw = s.strings[s.nodes[i + iName]] ?? "";
    const name = type === "string" || type === "concatenated string" || type === "sliced string" || type === "number" ? "" : type === "code" ? raw.slice(0, 40) : raw.slice(0, 80);
    const key = `${type}:${name}`;
    const g = out.get(key) ?? { count: 0, size: 0 };
    g.count++;
    g.size += s.nodes[i + iSize];
    out.set(key, g);
  }
  return out;
}

export function diffGroups(a: Groups, b: Groups): Array<{ key: string; count: [number, number]; size: [number, number] }> {
  const keys = new Set([...a.keys(), ...b.keys()]);
  return [...keys]
    .map((key) => ({ key, count: [a.get(key)?.count ?? 0, b.get(key)?.count ?? 0] as [number, number], size: [a.get(key)?.size ?? 0, b.get(key)?.size ?? 0] as [number, number] }))
    .sort((x, y) => y.size[1] - y.size[0] - (x.size[1] - x.size[0]));
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const files = args.filter((a) => !a.startsWith("--") && !/^\d+$/.test(a));
  const top = Number(args[args.indexOf("--top") + 1]) || 25;
  if (files.length !== 2) {
    process.stderr.write("usage: node dist/bench/heap-diff.js EARLY.heapsnapshot LATE.heapsnapshot [--top 25]\n");
    process.exit(2);
  }
  const [a, b] = files.map((p) => groupSnapshot(JSON.parse(fs.readFileSync(p, "utf8")) as Snapshot));
  const total = (g: Groups) => [...g.values()].reduce((s, x) => ({ count: s.count + x.count, size: s.size + x.size }), { count: 0, size: 0 });
  const kib = (n: number) => (n / 1024).toFixed(1);
  const [ta, tb] = [total(a), total(b)];
  const rows = ["| type:name | count early → late | self KiB early → late | Δ KiB |", "|---|---|---|---|"];
  rows.push(`| (all) | ${ta.count} → ${tb.count} | ${kib(ta.size)} → ${kib(tb.size)} | ${kib(tb.size - ta.size)} |`);
  const d = diffGroups(a, b);
  for (const r of [...d.slice(0, top), ...d.slice(-5)]) rows.push(`| ${r.key.replace(/\|/g, "\\|").replace(/\n/g, " ")} | ${r.count[0]} → ${r.count[1]} | ${kib(r.size[0])} → ${kib(r.size[1])} | ${kib(r.size[1] - r.size[0])} |`);
  process.stdout.write(rows.join("\n") + "\n");
}
