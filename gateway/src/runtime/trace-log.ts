// Plugin trace() lines in the gateway log. Checks run every few seconds and on
// Probe bursts, so logging every line would let one chatty plugin flood the
// log; each plugin gets a small budget that refills over time, and the next
// line logged after a drop says how many were dropped.

import type { Logger } from "../observability/logger.js";

export interface TraceLimits {
  /** Lines a plugin may log at once. */
  burst: number;
  /** Budget refill: one line per this many ms. */
  refillMs: number;
}

export const TRACE_LIMITS: Readonly<TraceLimits> = Object.freeze({ burst: 20, refillMs: 3_000 });

interface Bucket {
  tokens: number;
  at: number;
  dropped: number;
}

export class TraceLog {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly logger: Logger,
    private readonly limits: TraceLimits = TRACE_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** `plugin` identifies the budget (the plugin file); lines are logged at debug only. */
  log(plugin: string, message: string): void {
    if (!this.logger.isLevelEnabled("debug")) return;
    const t = this.now();
    const b = this.buckets.get(plugin) ?? { tokens: this.limits.burst, at: t, dropped: 0 };
    this.buckets.set(plugin, b);
    b.tokens = Math.min(this.limits.burst, b.tokens + (t - b.at) / this.limits.refillMs);
    b.at = t;
    if (b.tokens < 1) {
      b.dropped++;
      return;
    }
    b.tokens -= 1;
    const dropped = b.dropped;
    b.dropped = 0;
    this.logger.debug(dropped > 0 ? { plugin, trace: message, droppedTraces: dropped } : { plugin, trace: message }, "plugin trace");
  }

  forget(plugin: string): void {
    this.buckets.delete(plugin);
  }
}
