/**
 * Deadlines for many keys on one coarse timer instead of a timer each: the
 * request and header timeouts touch every call, and a timer per call would be
 * an allocation on the Probe fast path. A deadline fires within one tick after
 * it passes; the tick is a tenth of the shortest timeout, between 100 ms and 1 s.
 */
export class DeadlineSweep<K> {
  private readonly deadlines = new Map<K, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly tickMs: number;

  constructor(
    shortestTimeoutMs: number,
    private readonly onExpire: (key: K) => void,
  ) {
    this.tickMs = Math.min(1000, Math.max(100, Math.floor(shortestTimeoutMs / 10)));
  }

  set(key: K, deadline: number): void {
    this.deadlines.set(key, deadline);
    if (!this.timer) {
      this.timer = setInterval(() => this.sweep(), this.tickMs);
      this.timer.unref();
    }
  }

  delete(key: K): void {
    this.deadlines.delete(key);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.deadlines.clear();
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, deadline] of this.deadlines) {
      if (deadline > now) continue;
      this.deadlines.delete(key);
      this.onExpire(key);
    }
    if (this.deadlines.size === 0) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}
