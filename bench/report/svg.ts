// Latency-percentile chart (SVG written by hand): one panel per probe rate of
// the new-connection-per-probe runs, one line per server. x: percentile on the
// usual "nines" scale (log of 1/(1-p)); y: latency in ms, log scale.
import type { BenchResult } from "./types.js";

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];

export function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

const nines = (p: number) => Math.log10(1 / (1 - p / 100));

export function renderSvg(r: BenchResult): string {
  const servers = r.servers.filter((s) => s.available && s.newconn.length);
  const rates = [...new Set(servers.flatMap((s) => s.newconn.map((x) => x.rate)))].sort((a, b) => a - b);
  const W = 340, H = 260, padL = 52, padR = 12, padT = 34, padB = 44, legendH = 22 + 16 * Math.max(1, servers.length);
  const width = Math.max(1, rates.length) * W + 20;
  const height = H + legendH + 30;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="18" font-size="14" font-weight="bold">${esc(`Probe latency, new connection per probe (unix socket) — ${r.meta.startedAt}${r.meta.quick ? " (quick)" : ""}`)}</text>`,
  );
  if (rates.length === 0) parts.push(`<text x="10" y="50">no new-connection runs in this result</text>`);
  const allUs = servers.flatMap((s) => s.newconn.flatMap((x) => x.result.latency.curve.map((c) => c[1]))).filter((v) => Number.isFinite(v) && v > 0);
  const yMin = Math.pow(10, Math.floor(Math.log10(Math.max(1, Math.min(...allUs, 1000)) / 1000)));
  const yMax = Math.pow(10, Math.ceil(Math.log10(Math.max(...allUs, 1000) / 1000)));
  const pcts = [50, 90, 99, 99.9, 99.99];
  rates.forEach((rate, i) => {
    const x0 = 10 + i * W;
    const px = (p: number) => x0 + padL + ((nines(p) - nines(50)) / (nines(99.99) - nines(50))) * (W - padL - padR);
    const py = (ms: number) => padT + (H - padT - padB) * (1 - (Math.log10(ms) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin)));
    parts.push(`<g class="panel" data-rate="${rate}">`);
    parts.push(`<text x="${x0 + padL}" y="${padT - 8}" font-weight="bold">${rate} probes/s</text>`);
    parts.push(`<rect x="${x0 + padL}" y="${padT}" width="${W - padL - padR}" height="${H - padT - padB}" fill="none" stroke="#999"/>`);
    for (let d = yMin; d <= yMax * 1.0001; d *= 10) {
      const y = py(d).toFixed(1);
      parts.push(`<line x1="${x0 + padL}" x2="${x0 + W - padR}" y1="${y}" y2="${y}" stroke="#eee"/>`);
      parts.push(`<text x="${x0 + padL - 4}" y="${y}" text-anchor="end" dominant-baseline="middle">${d >= 1 ? d : d.toString()} ms</text>`);
    }
    for (const p of pcts) {
      const x = px(p).toFixed(1);
      parts.push(`<line x1="${x}" x2="${x}" y1="${padT}" y2="${H - padB}" stroke="#eee"/>`);
      parts.push(`<text x="${x}" y="${H - padB + 14}" text-anchor="middle">p${p}</text>`);
    }
    parts.push(`<text x="${x0 + padL + (W - padL - padR) / 2}" y="${H - padB + 30}" text-anchor="middle">percentile</text>`);
    servers.forEach((s, si) => {
      const row = s.newconn.find((x) => x.rate === rate);
      if (!row) return;
      const pts = row.result.latency.curve.filter(([, us]) => Number.isFinite(us) && us > 0).map(([p, us]) => [px(p), py(us / 1000)]);
      if (pts.length === 0) return;
      const color = COLORS[si % COLORS.length];
      parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ")}"/>`);
      for (const [x, y] of pts) parts.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="2.5" fill="${color}"/>`);
    });
    parts.push(`</g>`);
  });
  const ly = H + 20;
  servers.forEach((s, si) => {
    const y = ly + 16 * si;
    parts.push(`<rect x="${10 + padL}" y="${y - 8}" width="14" height="4" fill="${COLORS[si % COLORS.length]}"/>`);
    parts.push(`<text x="${10 + padL + 20}" y="${y - 3}">${esc(s.label)}</text>`);
  });
  parts.push(`</svg>`);
  return parts.join("\n") + "\n";
}
