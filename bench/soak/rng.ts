// A small seeded PRNG (mulberry32): the soak's schedule of faults, churn and
// bursts is reproducible from --seed; only the machine's timing is not.
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 1;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Uniform in [lo, hi). */
  between(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }
  int(lo: number, hiExclusive: number): number {
    return Math.floor(this.between(lo, hiExclusive));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = this.int(0, 256);
    return b;
  }
}
