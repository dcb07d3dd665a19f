// Percentiles and a robust slope: the numbers the invariants and the report are made of.

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * The minimum of each `windowMs` window of samples. Memory and handle counts
 * swing with garbage collection and connections in flight; what a leak raises
 * is the floor, so the slope is fitted to window minima.
 */
export function windowMinima(points: ReadonlyArray<{ t: number; v: number }>, windowMs: number): Array<{ t: number; v: number }> {
  const out = new Map<number, { t: number; v: number }>();
  for (const p of points) {
    if (!Number.isFinite(p.v)) continue;
    const w = Math.floor(p.t / windowMs);
    const cur = out.get(w);
    if (!cur || p.v < cur.v) out.set(w, { t: w * windowMs + windowMs / 2, v: p.v });
  }
  return [...out.values()].sort((a, b) => a.t - b.t);
}

/**
 * Theil–Sen slope: the median of the slopes between every pair of points.
 * One transient spike (a hostile plugin's memory, a burst) moves a
 * least-squares fit of a short run a lot and this hardly at all; a steady
 * leak moves both.
 */
export function theilSen(xs: readonly number[], ys: readonly number[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < xs.length; i++) {
    for (let j = i + 1; j < xs.length; j++) if (xs[j] !== xs[i]) slopes.push((ys[j] - ys[i]) / (xs[j] - xs[i]));
  }
  if (slopes.length === 0) return NaN;
  slopes.sort((a, b) => a - b);
  const m = slopes.length >> 1;
  return slopes.length % 2 ? slopes[m] : (slopes[m - 1] + slopes[m]) / 2;
}
