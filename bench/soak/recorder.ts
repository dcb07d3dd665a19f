// Every request the soak makes ends here: counted by kind and outcome, and
// checked against its deadline. Probe latencies are kept per time window for
// the p50/p99-over-time chart.
import { percentile } from "./stats.js";

export type Outcome = "ok" | "clean-error" | "late" | "lost" | "broken";

export interface KindCounts {
  sent: number;
  ok: number;
  cleanError: number;
  /** Answered (or cleanly refused) but after its deadline plus slack. */
  late: number;
  /** No answer at all by the hard cap. */
  lost: number;
  /** Connection failure or an answer that was not well-formed, with the gateway up. */
  broken: number;
  /** Failed while the gateway was down (counted under crashes, not here). */
  duringOutage: number;
  /** Not sent: the client's own in-flight cap was reached (the driver, not the gateway, was behind). */
  skipped: number;
  codes: Record<string, number>;
}

export interface WindowStat {
  t: number;
  n: number;
  p50: number;
  p99: number;
  max: number;
}

export class Recorder {
  readonly kinds: Record<string, KindCounts> = {};
  readonly examples: Array<{ at: number; kind: string; outcome: Outcome; detail: string }> = [];
  private readonly windows = new Map<string, Map<number, number[]>>();

  constructor(
    private readonly t0: number,
    readonly windowMs: number,
    /** Allowance past a deadline for the answer to travel and the client to notice. */
    readonly slackMs: number,
  ) {}

  private k(kind: string): KindCounts {
    return (this.kinds[kind] ??= { sent: 0, ok: 0, cleanError: 0, late: 0, lost: 0, broken: 0, duringOutage: 0, skipped: 0, codes: {} });
  }

  skipped(kind: string): void {
    this.k(kind).skipped++;
  }

  /**
   * `deadlineMs`: the request's own deadline; `ms`: how long it took;
   * `outage`: the target gateway was down at some point during the request.
   */
  record(kind: string, o: { outcome: "ok" | "clean-error" | "lost" | "broken"; ms: number; deadlineMs: number; code?: string; detail?: string; outage?: boolean; latencySeries?: string }): Outcome {
    const c = this.k(kind);
    c.sent++;
    if (o.code !== undefined) c.codes[o.code] = (c.codes[o.code] ?? 0) + 1;
    let outcome: Outcome = o.outcome;
    if (outcome !== "lost" && outcome !== "broken" && o.ms > o.deadlineMs + this.slackMs) outcome = "late";
    if (outcome !== "ok" && outcome !== "clean-error" && o.outage) {
      c.duringOutage++;
      return outcome;
    }
    if (outcome === "ok") c.ok++;
    else if (outcome === "clean-error") c.cleanError++;
    else if (outcome === "late") c.late++;
    else if (outcome === "lost") c.lost++;
    else c.broken++;
    if (outcome === "late" || outcome === "lost" || outcome === "broken") {
      if (this.examples.length < 100) this.examples.push({ at: Date.now() - this.t0, kind, outcome, detail: `${o.detail ?? ""} (${Math.round(o.ms)} ms, deadline ${o.deadlineMs} ms)` });
    }
    if (o.latencySeries && (outcome === "ok" || outcome === "clean-error")) {
      const w = Math.floor((Date.now() - this.t0) / this.windowMs);
      const series = this.windows.get(o.latencySeries) ?? new Map<number, number[]>();
      this.windows.set(o.latencySeries, series);
      const arr = series.get(w) ?? [];
      series.set(w, arr);
      arr.push(o.ms);
    }
    return outcome;
  }

  series(name: string): WindowStat[] {
    const s = this.windows.get(name);
    if (!s) return [];
    return [...s.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([w, arr]) => {
        const sorted = [...arr].sort((a, b) => a - b);
        return { t: (w + 0.5) * this.windowMs, n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] };
      });
  }

  seriesNames(): string[] {
    return [...this.windows.keys()];
  }

  totals(): { sent: number; violations: number } {
    let sent = 0;
    let violations = 0;
    for (const c of Object.values(this.kinds)) {
      sent += c.sent;
      violations += c.late + c.lost + c.broken;
    }
    return { sent, violations };
  }
}
