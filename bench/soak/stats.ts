// Percentiles and a least-squares slope: the numbers the invariants and the report are made of.

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** Ordinary least squares of y on x; slope in y-units per x-unit. */
export function linearFit(xs: readonly number[], ys: readonly number[]): { slope: number; intercept: number } {
  const n = xs.length;
  if (n < 2) return { slope: NaN, intercept: NaN };
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i] - mx) * (ys[i] - my);
    sxx += (xs[i] - mx) ** 2;
  }
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { slope, intercept: my - slope * mx };
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
