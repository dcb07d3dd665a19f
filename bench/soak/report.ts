// The soak's report: one JSON document, a Markdown summary (bench/report's
// table helper) and an SVG chart of RSS, open descriptors and Probe p50/p99
// over time (drawn by hand like bench/report/svg.ts, whose escaping it reuses).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { esc } from "../report/svg.js";
import { mdTable } from "../report/table.js";
import type { FuzzStats } from "./fuzz-edge.js";
import type { GatewayProc, LogCounts, ProcSample } from "./gateway-proc.js";
import type { HealthOracle, OracleBounds, ReadinessOracle, ReadinessViolation } from "./oracle.js";

/** Child processes a gateway may have at once: its tools (single-flight, one per source) and one statfs per hung mount. */
export const CHILDREN_BOUND = 24;
import type { SoakOptions } from "./options.js";
import type { StuckCounts } from "./stuck-unmounts.js";
import type { KindCounts, Recorder, WindowStat } from "./recorder.js";
import { percentile, theilSen, windowMinima } from "./stats.js";
import { FLOOD_MODES } from "./conn-flood.js";

export interface Invariant {
  id: string;
  what: string;
  count: number;
  bound: string;
}

export interface GatewayReport {
  name: string;
  starts: number;
  crashes: GatewayProc["crashes"];
  exitCode: number | null;
  logs: Omit<LogCounts, "byMsg"> & { topMessages: Array<[string, number]>; bound: number; events: number };
  rss: { startMiB: number; endMiB: number; maxMiB: number; slopeMiBPerHour: number };
  /** RSS told apart: V8's heap (used, committed), external memory, and RSS less the committed heap (native: malloc, code, wasm). */
  memory: MemorySplit;
  fds: { start: number; end: number; max: number; slopePerHour: number };
  threads: { start: number; end: number; max: number };
  children: { max: number; end: number };
  readiness: { checked: number; ready: number; notReady: number; violations: number; examples: ReadinessViolation[]; stuck: number; stuckEpisodes: Array<{ clearedAt: number; observer: string; lastCauses: string[] }>; detectionMs: Record<string, { n: number; p50: number; p99: number; max: number }>; recoveryMs: { n: number; p50: number; max: number } };
  samples: ProcSample[];
  probeLatency: WindowStat[];
}

/** What the run counted, carried from the run into the report as it is. */
interface RunCounts {
  bounds: OracleBounds;
  faults: Record<string, number>;
  churn: unknown;
  lnetInjected: Record<string, number>;
  upstream: { kills: number; starts: number };
  /** The stuck-unmount fault on the gateway-mode process (stuck-unmounts.ts). */
  stuck?: StuckCounts;
  bursts: number;
  kube: { converged: boolean; condition?: string; readyz?: number; ms: number };
  fuzz: FuzzStats & { rounds: number };
  driver: { unhandled: string[]; lagP99Ms: number; lagMaxMs: number };
}

export interface SoakReport extends RunCounts {
  meta: { startedAt: string; finishedAt: string; durationS: number; seed: number; node: string; cpus: number; cpuModel: string; options: SoakOptions };
  requests: Record<string, KindCounts>;
  requestExamples: Recorder["examples"];
  gateways: GatewayReport[];
  invariants: Invariant[];
  /** The storage/volume health answers checked on the node-mode gateway. */
  healthAnswers?: { checked: number; seen: Record<string, number>; violations: HealthOracle["violations"] };
  summary: { requests: number; faults: number; violations: number };
  markdown: string;
}

interface Input extends RunCounts {
  o: SoakOptions;
  t0: number;
  startedAt: number;
  finishedAt: number;
  rec: Recorder;
  gateways: Array<{ proc: GatewayProc; oracle: ReadinessOracle; events: number; exitCode: number | null }>;
  health?: HealthOracle;
}

const r1 = (x: number) => Math.round(x * 10) / 10;

/**
 * Where the slope fits start: once the load has reached its steady mix. Floods
 * lift glibc's main arena to a new high-water mark in steps, the first of each
 * kind most, and it levels off after two or three floods of the kind (HTTP/2
 * PING floods: bench/results/flood-rss-2026-11-26.md, growth-2026-11-26.md;
 * the V8 heap stays flat). So the fit starts after the third round of every
 * flood kind when that leaves half the run, else after the first round, so a
 * plateau being reached is not read as a leak while a leak still shows as
 * growth over the rest. Runs too short for either fit the last 80%.
 */
export function slopeFitFrom(o: Pick<SoakOptions, "floodEveryMs" | "floodMs">, floodKinds: number, runMs: number): { fromMs: number; label: string } {
  for (const rounds of [3, 1]) {
    const steady = o.floodEveryMs / 2 + (rounds * floodKinds - 1) * o.floodEveryMs + o.floodMs;
    const when = rounds === 1 ? "once every flood kind has run" : `once every flood kind has run ${rounds} times`;
    if (steady <= runMs / 2) return { fromMs: steady, label: `from ${Math.round(steady / 60_000)} min, ${when}` };
  }
  return { fromMs: 0.2 * runMs, label: "last 80%" };
}

/** Slope per hour (Theil–Sen) of the window minima from fitFrom on. */
function slope(samples: ProcSample[], pick: (s: ProcSample) => number, fromMs: number, windowMs: number): number {
  const pts = windowMinima(samples.filter((s) => s.t >= fromMs).map((s) => ({ t: s.t, v: pick(s) })), windowMs);
  return theilSen(pts.map((p) => p.t / 3_600_000), pts.map((p) => p.v));
}

export type MemorySplit = Record<"heapUsed" | "heapTotal" | "external" | "outsideHeap", { endMiB: number; slopeMiBPerHour: number }>;

/**
 * The slopes of V8's own numbers beside RSS's, fitted the same way, so an
 * RSS slope says where it is: in V8's heap (a JS leak: take heap snapshots) or
 * outside it (native: the allocator, buffers, code). NaN where the samples
 * carry no V8 numbers (the gateway's /metrics did not answer).
 */
export function memorySplit(samples: ProcSample[], fromMs: number, windowMs: number): MemorySplit {
  const last = [...samples].reverse().find((s) => s.heapTotalMiB !== undefined);
  const num = (x: number | undefined) => x ?? NaN;
  const pick: Record<keyof MemorySplit, (s: ProcSample) => number> = {
    heapUsed: (s) => num(s.heapUsedMiB),
    heapTotal: (s) => num(s.heapTotalMiB),
    external: (s) => num(s.externalMiB),
    outsideHeap: (s) => s.rssMiB - num(s.heapTotalMiB),
  };
  const out = {} as MemorySplit;
  for (const k of Object.keys(pick) as Array<keyof MemorySplit>) {
    out[k] = { endMiB: r1(last ? pick[k](last) : NaN), slopeMiBPerHour: r1(slope(samples, pick[k], fromMs, windowMs)) };
  }
  return out;
}

function dist(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: Math.round(percentile(s, 50)), p99: Math.round(percentile(s, 99)), max: Math.round(s[s.length - 1] ?? NaN) };
}

export function buildReport(x: Input): SoakReport {
  const { o, rec } = x;
  const runMs = x.finishedAt - x.t0;
  const fit = slopeFitFrom(o, FLOOD_MODES.length, x.finishedAt - x.startedAt);
  const fitFrom = x.startedAt - x.t0 + fit.fromMs;
  const gateways: GatewayReport[] = x.gateways.map(({ proc, oracle, events, exitCode }) => {
    const S = proc.samples;
    const first = S[0];
    const last = S[S.length - 1];
    const { byMsg, ...logs } = proc.logs;
    return {
      name: proc.spec.name,
      starts: proc.starts,
      crashes: proc.crashes,
      exitCode,
      logs: { ...logs, topMessages: Object.entries(byMsg).sort((a, b) => b[1] - a[1]).slice(0, 12), events, bound: 100 + 40 * events },
      rss: { startMiB: r1(first?.rssMiB ?? NaN), endMiB: r1(last?.rssMiB ?? NaN), maxMiB: r1(Math.max(...S.map((s) => s.rssMiB))), slopeMiBPerHour: r1(slope(S, (s) => s.rssMiB, fitFrom, o.windowMs)) },
      memory: memorySplit(S, fitFrom, o.windowMs),
      fds: { start: first?.fds ?? NaN, end: last?.fds ?? NaN, max: Math.max(...S.map((s) => s.fds)), slopePerHour: r1(slope(S, (s) => s.fds, fitFrom, o.windowMs)) },
      threads: { start: first?.threads ?? NaN, end: last?.threads ?? NaN, max: Math.max(...S.map((s) => s.threads)) },
      children: { max: Math.max(...S.map((s) => s.children)), end: last?.children ?? NaN },
      readiness: {
        checked: oracle.checked,
        ready: oracle.readyAnswers,
        notReady: oracle.notReadyAnswers,
        violations: oracle.violationCount,
        examples: oracle.violations,
        stuck: oracle.stuck,
        // When each stuck episode's faults had all gone (ms into the run), to find it in the logs.
        stuckEpisodes: oracle.stuckEpisodes.slice(0, 20),
        detectionMs: Object.fromEntries(Object.entries(oracle.detection).map(([k, v]) => [k, dist(v)])),
        recoveryMs: (({ n, p50, max }) => ({ n, p50, max }))(dist(oracle.recovery)),
      },
      samples: S,
      probeLatency: rec.series(`${proc.spec.name}:probe`),
    };
  });

  const sum = (f: (k: KindCounts) => number) => Object.values(rec.kinds).reduce((a, k) => a + f(k), 0);
  const fuzzFatal = x.fuzz.violations.length;
  const invariants: Invariant[] = [
    { id: "lost", what: "requests with no answer by the hard cap (30 s)", count: sum((k) => k.lost), bound: "0" },
    { id: "late", what: `requests answered or refused after their deadline + ${o.slackMs} ms`, count: sum((k) => k.late), bound: "0" },
    { id: "broken", what: "connection failures or malformed answers while the gateway was up", count: sum((k) => k.broken), bound: "0" },
    { id: "ready-while-failing", what: `ready answers while a required check had been failing longer than its bound (checks ${x.bounds.checkMs} ms, upstream ${x.bounds.upstreamMs} ms)`, count: gateways.reduce((a, g) => a + g.readiness.violations, 0), bound: "0" },
    { id: "stuck-not-ready", what: `not ready ${x.bounds.recoverMs} ms after every fault had gone`, count: gateways.reduce((a, g) => a + g.readiness.stuck, 0), bound: "0" },
    { id: "crash", what: "gateway exits not asked for", count: gateways.reduce((a, g) => a + g.crashes.length, 0), bound: "0" },
    { id: "unhandled", what: "unhandled rejections / uncaught exceptions reported by a gateway", count: gateways.reduce((a, g) => a + g.logs.unhandled, 0), bound: "0" },
    { id: "shutdown", what: "gateways not exiting 0 on SIGTERM at the end", count: gateways.filter((g) => g.exitCode !== 0).length, bound: "0" },
    { id: "rss-slope", what: `gateways whose RSS slope (Theil–Sen of ${o.windowMs / 1000} s window minima, ${fit.label}) exceeds ${o.rssSlopeMiBPerHour} MiB/h`, count: gateways.filter((g) => !(g.rss.slopeMiBPerHour <= o.rssSlopeMiBPerHour)).length, bound: "0" },
    { id: "fd-slope", what: `gateways whose open-descriptor slope exceeds ${o.fdSlopePerHour}/h`, count: gateways.filter((g) => !(g.fds.slopePerHour <= o.fdSlopePerHour)).length, bound: "0" },
    { id: "logs", what: "gateways logging more than 100 + 40 per fault event (no line per request)", count: gateways.filter((g) => g.logs.lines > g.logs.bound).length, bound: "0" },
    { id: "node-condition", what: "the Node condition not matching /readyz within 60 s once the API server is back for good", count: x.kube.converged ? 0 : 1, bound: "0" },
    { id: "fuzz", what: "edge-fuzz cases without a well-formed answer or clean reset, or after which Probe went unanswered", count: fuzzFatal, bound: "0" },
    { id: "health", what: "storage/volume health answers that hide a fault past its bound (empty or not UNREACHABLE while the MDT is evicted, not INACCESSIBLE while the mount hangs) or keep one after recovery", count: x.health?.violationCount ?? 0, bound: "0" },
    { id: "children", what: `gateways with more than ${CHILDREN_BOUND} child processes at a sample (hung statfs or tools accumulating)`, count: gateways.filter((g) => !(g.children.max <= CHILDREN_BOUND)).length, bound: "0" },
    { id: "soak-driver", what: "unhandled rejections in the soak driver itself", count: x.driver.unhandled.length, bound: "0" },
    { id: "stuck-unmount", what: "stuck unmounts not reported in time, reports kept after the unmount succeeded, unmounts never ended, or (with --unstick) a Lustre path not ended by probegate; any path unmounted that --unstick does not allow", count: x.stuck?.violations.length ?? 0, bound: "0" },
  ];
  const report: SoakReport = {
    meta: {
      startedAt: new Date(x.t0).toISOString(),
      finishedAt: new Date(x.finishedAt).toISOString(),
      durationS: Math.round(runMs / 1000),
      seed: o.seed,
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "",
      options: o,
    },
    bounds: x.bounds,
    requests: rec.kinds,
    requestExamples: rec.examples,
    faults: x.faults,
    churn: x.churn,
    lnetInjected: x.lnetInjected,
    upstream: x.upstream,
    ...(x.stuck ? { stuck: x.stuck } : {}),
    bursts: x.bursts,
    kube: x.kube,
    fuzz: x.fuzz,
    driver: x.driver,
    gateways,
    invariants,
    ...(x.health ? { healthAnswers: { checked: x.health.checked, seen: x.health.seen, violations: x.health.violations } } : {}),
    summary: { requests: sum((k) => k.sent), faults: Object.values(x.faults).reduce((a, b) => a + b, 0), violations: invariants.reduce((a, i) => a + i.count, 0) },
    markdown: "",
  };
  report.markdown = renderMarkdown(report);
  return report;
}

export function renderMarkdown(r: SoakReport): string {
  const out: string[] = [];
  const mins = (r.meta.durationS / 60).toFixed(1);
  out.push(`# probegate soak — ${r.meta.startedAt}, ${mins} min, seed ${r.meta.seed}`, "", `node ${r.meta.node}, ${r.meta.cpus} CPUs (${r.meta.cpuModel})`, "");
  out.push("## Invariants", "", mdTable(["invariant", "violations"], r.invariants.map((i) => [i.what, i.count])), "");
  if (r.healthAnswers) {
    const seen = Object.entries(r.healthAnswers.seen).sort((x, y) => y[1] - x[1]).map(([k, n]) => `${k} ${n}`).join(", ");
    out.push(`Storage/volume health answers checked on the node-mode gateway: ${r.healthAnswers.checked}; entries seen: ${seen || "none"}.`, "");
  }
  if (r.stuck) {
    const s = r.stuck;
    const steps = Object.entries(s.steps).map(([k, n]) => `umount ${k} ${n}`).join(", ") || "none";
    out.push(
      `Stuck unmounts on the gateway-mode process (--unstick ${s.unstick ? "on" : "off"}): ${s.episodes} episodes (${s.unjudged} not judged: a restart or the run's end), ${s.attempts} attempts; ` +
        `reported stuck ${s.reported}, cleared after success ${s.cleared}, ended by probegate ${s.endedByProbegate}, by recovery ${s.endedByRecovery}; probegate's steps: ${steps}.`,
      ...s.violations.slice(0, 10).map((v) => `- ${v.what}`),
      "",
    );
  }
  out.push(
    "## Requests by kind",
    "",
    mdTable(
      ["kind", "sent", "ok", "clean error", "late", "lost", "broken", "during restart", "skipped"],
      Object.entries(r.requests)
        .sort()
        .map(([k, c]) => [k, c.sent, c.ok, c.cleanError, c.late, c.lost, c.broken, c.duringOutage, c.skipped]),
    ),
    "",
  );
  const fuzzCases = Object.entries(r.fuzz.cases).map(([k, v]) => `${k} ${v}`).join(", ");
  out.push("## Faults injected", "", mdTable(["fault", "count"], Object.entries(r.faults).sort().map(([k, v]) => [k, v])), "", `Edge fuzz: ${r.fuzz.rounds} rounds, ${fuzzCases || "none"}.`, "");
  const fit = slopeFitFrom(r.meta.options, FLOOD_MODES.length, r.meta.durationS * 1000);
  out.push(
    "## Gateways",
    "",
    mdTable(
      ["", ...r.gateways.map((g) => g.name)],
      [
        ["RSS start / end / max (MiB)", ...r.gateways.map((g) => `${g.rss.startMiB} / ${g.rss.endMiB} / ${g.rss.maxMiB}`)],
        [`RSS slope, ${fit.label} (MiB/h)`, ...r.gateways.map((g) => g.rss.slopeMiBPerHour)],
        ["… of it, slope of V8 heap used / committed / external (MiB/h)", ...r.gateways.map((g) => (g.memory ? `${g.memory.heapUsed.slopeMiBPerHour} / ${g.memory.heapTotal.slopeMiBPerHour} / ${g.memory.external.slopeMiBPerHour}` : "n/a"))],
        ["… and of RSS less the committed V8 heap (native) (MiB/h)", ...r.gateways.map((g) => (g.memory ? g.memory.outsideHeap.slopeMiBPerHour : "n/a"))],
        ["V8 heap used / committed / external at the end (MiB)", ...r.gateways.map((g) => (g.memory ? `${g.memory.heapUsed.endMiB} / ${g.memory.heapTotal.endMiB} / ${g.memory.external.endMiB}` : "n/a"))],
        ["open fds start / end / max", ...r.gateways.map((g) => `${g.fds.start} / ${g.fds.end} / ${g.fds.max}`)],
        [`fd slope, ${fit.label} (/h)`, ...r.gateways.map((g) => g.fds.slopePerHour)],
        ["threads start / end / max", ...r.gateways.map((g) => `${g.threads.start} / ${g.threads.end} / ${g.threads.max}`)],
        ["child processes max / end", ...r.gateways.map((g) => `${g.children.max} / ${g.children.end}`)],
        ["log lines (bound) / error lines", ...r.gateways.map((g) => `${g.logs.lines} (${g.logs.bound}) / ${g.logs.errors}`)],
        ["readiness answers checked (ready / not)", ...r.gateways.map((g) => `${g.readiness.checked} (${g.readiness.ready} / ${g.readiness.notReady})`)],
        ...[...new Set(r.gateways.flatMap((g) => Object.keys(g.readiness.detectionMs)))].map((fam) => [
          `not ready after ${fam} fault: p50 / max ms`,
          ...r.gateways.map((g) => (g.readiness.detectionMs[fam] ? `${g.readiness.detectionMs[fam].p50} / ${g.readiness.detectionMs[fam].max} (n=${g.readiness.detectionMs[fam].n})` : "n/a")),
        ]),
        ["ready again after faults: p50 / max ms", ...r.gateways.map((g) => `${g.readiness.recoveryMs.p50} / ${g.readiness.recoveryMs.max} (n=${g.readiness.recoveryMs.n})`)],
        ["starts / crashes / exit on SIGTERM", ...r.gateways.map((g) => `${g.starts} / ${g.crashes.length} / ${g.exitCode}`)],
      ],
    ),
    "",
    `Soak driver event-loop lag: p99 ${r1(r.driver.lagP99Ms)} ms, max ${r1(r.driver.lagMaxMs)} ms.`,
    "",
  );
  const ex = [
    ...r.requestExamples.slice(0, 10).map((e) => `- request ${e.kind} at +${(e.at / 1000).toFixed(0)} s: ${e.outcome} — ${e.detail}`),
    ...r.gateways.flatMap((g) => g.readiness.examples.slice(0, 5).map((v) => `- ${g.name}: ready on ${v.observer} at +${(v.at / 1000).toFixed(0)} s, ${v.cause} for ${v.afterMs} ms`)),
    ...r.gateways.flatMap((g) => (g.readiness.stuckEpisodes ?? []).slice(0, 5).map((e) => `- ${g.name}: still not ready on ${e.observer} ${r.bounds.recoverMs} ms after every fault had gone at +${(e.clearedAt / 1000).toFixed(0)} s (last in force: ${(e.lastCauses ?? []).join(", ") || "n/a"})`)),
    ...r.fuzz.violations.slice(0, 10).map((v) => `- fuzz ${v.kind} ${v.what}: ${v.detail}`),
    ...(r.healthAnswers?.violations ?? []).slice(0, 10).map((v) => `- health +${(v.at / 1000).toFixed(1)}s ${v.rpc}: ${v.what} (${v.detail})`),
    ...r.gateways.flatMap((g) => g.crashes.map((c) => `- ${g.name} crashed at +${(c.at / 1000).toFixed(0)} s (${c.code ?? c.signal}): ${c.tail.split("\n").slice(-3).join(" | ")}`)),
  ];
  if (ex.length) out.push("## Violations (first of each)", "", ...ex, "");
  return out.join("\n");
}

// ---------- SVG ----------

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"];

function panel(x0: number, y0: number, w: number, h: number, title: string, tMaxS: number, series: Array<{ label: string; pts: Array<[number, number]> }>, unit: string): string {
  const padL = 48, padB = 28, padT = 20;
  const all = series.flatMap((s) => s.pts.map((p) => p[1])).filter(Number.isFinite);
  const yMax = all.length ? Math.max(...all) * 1.1 || 1 : 1;
  const px = (t: number) => x0 + padL + (t / Math.max(1, tMaxS)) * (w - padL - 10);
  const py = (v: number) => y0 + padT + (h - padT - padB) * (1 - v / yMax);
  const parts = [`<g><text x="${x0 + padL}" y="${y0 + 14}" font-weight="bold">${esc(title)}</text>`, `<rect x="${x0 + padL}" y="${y0 + padT}" width="${w - padL - 10}" height="${h - padT - padB}" fill="none" stroke="#999"/>`];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    parts.push(`<text x="${x0 + padL - 4}" y="${py(v).toFixed(1)}" text-anchor="end" dominant-baseline="middle">${v >= 100 ? v.toFixed(0) : v.toFixed(1)}</text>`);
    parts.push(`<line x1="${x0 + padL}" x2="${x0 + w - 10}" y1="${py(v).toFixed(1)}" y2="${py(v).toFixed(1)}" stroke="#eee"/>`);
  }
  for (let i = 0; i <= 5; i++) {
    const t = (tMaxS * i) / 5;
    parts.push(`<text x="${px(t).toFixed(1)}" y="${y0 + h - padB + 14}" text-anchor="middle">${(t / 60).toFixed(1)} min</text>`);
  }
  parts.push(`<text x="${x0 + 4}" y="${y0 + padT + 10}">${esc(unit)}</text>`);
  series.forEach((s, i) => {
    const pts = s.pts.filter((p) => Number.isFinite(p[1]));
    if (!pts.length) return;
    parts.push(`<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.5" points="${pts.map(([t, v]) => `${px(t).toFixed(1)},${py(v).toFixed(1)}`).join(" ")}"/>`);
    parts.push(`<text x="${x0 + w - 14}" y="${y0 + padT + 14 + 13 * i}" text-anchor="end" fill="${COLORS[i % COLORS.length]}">${esc(s.label)}</text>`);
  });
  parts.push("</g>");
  return parts.join("\n");
}

export function renderSvg(r: SoakReport): string {
  const W = 900, H = 220;
  const tMax = r.meta.durationS;
  const gs = r.gateways;
  const panels = [
    panel(0, 30, W, H, "Resident memory (RSS)", tMax, gs.map((g) => ({ label: `${g.name} gateway`, pts: g.samples.map((s) => [s.t / 1000, s.rssMiB] as [number, number]) })), "MiB"),
    panel(0, 30 + H, W, H, "Open file descriptors", tMax, gs.map((g) => ({ label: `${g.name} gateway`, pts: g.samples.map((s) => [s.t / 1000, s.fds] as [number, number]) })), "fds"),
    panel(
      0,
      30 + 2 * H,
      W,
      H,
      `Probe latency, new connection per Probe on the CSI socket (${r.meta.options.windowMs / 1000} s windows)`,
      tMax,
      gs.flatMap((g) => [
        { label: `${g.name} p50`, pts: g.probeLatency.map((w) => [w.t / 1000, w.p50] as [number, number]) },
        { label: `${g.name} p99`, pts: g.probeLatency.map((w) => [w.t / 1000, w.p99] as [number, number]) },
      ]),
      "ms",
    ),
  ];
  const height = 40 + 3 * H;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" viewBox="0 0 ${W} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="18" font-size="14" font-weight="bold">${esc(`probegate soak — ${r.meta.startedAt}, ${(r.meta.durationS / 60).toFixed(1)} min, ${r.summary.requests} requests, ${r.summary.faults} faults, ${r.summary.violations} violations`)}</text>`,
    ...panels,
    "</svg>",
    "",
  ].join("\n");
}

export function writeReport(r: SoakReport, dir: string, name: string): string[] {
  fs.mkdirSync(dir, { recursive: true });
  const stamp = r.meta.startedAt.replace(/[:]/g, "-").replace(/\..*$/, "");
  const files: string[] = [];
  const json = JSON.stringify(r, null, 1) + "\n";
  const svg = renderSvg(r);
  for (const base of [`${name}-${stamp}`, `${name}-latest`]) {
    fs.writeFileSync(path.join(dir, `${base}.json`), json);
    fs.writeFileSync(path.join(dir, `${base}.md`), r.markdown + "\n");
    fs.writeFileSync(path.join(dir, `${base}.svg`), svg);
    files.push(path.join(dir, `${base}.{json,md,svg}`));
  }
  return files;
}
