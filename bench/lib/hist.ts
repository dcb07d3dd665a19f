import * as hdr from "hdr-histogram-js";

export type Histogram = ReturnType<typeof hdr.build>;

/** Microsecond histogram, 1 µs .. 60 s, 3 significant digits. */
export function newHistogram(): Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: 3 });
}

/** Percentiles drawn in the chart (x axis). */
export const CHART_PERCENTILES = [50, 75, 90, 95, 99, 99.5, 99.9, 99.99];

export interface LatencySummary {
  count: number;
  /** microseconds */
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  /** [percentile, µs] pairs for the chart. */
  curve: [number, number][];
}

export function summarize(h: Histogram): LatencySummary {
  const n = h.totalCount;
  const at = (p: number) => (n ? h.getValueAtPercentile(p) : NaN);
  return {
    count: n,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    p999: at(99.9),
    max: n ? h.maxValue : NaN,
    mean: n ? Math.round(h.mean * 10) / 10 : NaN,
    curve: CHART_PERCENTILES.map((p) => [p, at(p)] as [number, number]),
  };
}
