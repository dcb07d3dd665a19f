// Summarizes a V8 .cpuprofile (node --cpu-prof): self time per function and per package.
import type { ProfileFrame } from "./types.js";

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  samples: number[];
  timeDeltas: number[];
}

export function packageOf(url: string, fn: string): string {
  if (!url) return fn.startsWith("(") ? fn : "(native)";
  if (url.startsWith("node:")) return "node core";
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.includes("/dist/bench/")) return "bench peer";
  return "other";
}

export function summarizeProfile(p: CpuProfile, topN = 25): { totalMs: number; top: ProfileFrame[]; byPackage: { pkg: string; selfPct: number }[] } {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    if (byId.get(p.samples[i])?.callFrame.functionName === "(idle)") continue; // waiting for I/O: not cost
    total += dt;
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
  }
  const fns = new Map<string, { fn: string; where: string; us: number; pkg: string }>();
  const pkgs = new Map<string, number>();
  for (const [id, us] of self) {
    const cf = byId.get(id)?.callFrame;
    if (!cf) continue;
    const fn = cf.functionName || "(anonymous)";
    const short = cf.url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*\/dist\//, "dist/");
    const where = cf.url ? `${short}:${cf.lineNumber + 1}` : "";
    const key = `${fn}@${where}`;
    const e = fns.get(key) ?? { fn, where, us: 0, pkg: packageOf(cf.url, fn) };
    e.us += us;
    fns.set(key, e);
    pkgs.set(e.pkg, (pkgs.get(e.pkg) ?? 0) + us);
  }
  const pct = (us: number) => Math.round((us / total) * 1000) / 10;
  return {
    totalMs: Math.round(total / 1000),
    top: [...fns.values()].sort((a, b) => b.us - a.us).slice(0, topN).map((e) => ({ selfPct: pct(e.us), selfMs: Math.round(e.us / 100) / 10, fn: e.fn, where: e.where })),
    byPackage: [...pkgs.entries()].sort((a, b) => b[1] - a[1]).map(([pkg, us]) => ({ pkg, selfPct: pct(us) })),
  };
}
