// Retry pacing for the node reporter's requests: capped exponential backoff
// with full jitter, and a token bucket for Node writes. (Retry-After on 429 is
// the client's: client/retry-after.ts.)

export class Backoff {
  private attempt = 0;
  constructor(
    private readonly baseMs: number,
    private readonly capMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The next wait: uniformly random up to min(cap, base·2^n), so a fleet of nodes spreads out. */
  next(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.max(1, Math.round(this.random() * ceiling));
  }

  reset(): void {
    this.attempt = 0;
  }

  get failures(): number {
    return this.attempt;
  }
}

/** Tokens refill one per interval up to burst; take() says how long to wait for one. */
export class TokenBucket {
  private tokens: number;
  private stamp: number;
  constructor(
    private readonly burst: number,
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.stamp = now();
  }

  private refill(): void {
    const t = this.now();
    if (this.intervalMs <= 0) {
      this.tokens = this.burst;
    } else {
      this.tokens = Math.min(this.burst, this.tokens + (t - this.stamp) / this.intervalMs);
    }
    this.stamp = t;
  }

  /** 0 and a token spent, or the ms until one is available (nothing spent). */
  take(): number {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - this.tokens) * this.intervalMs);
  }
}
