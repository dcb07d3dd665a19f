// When a scope's checks run: rounds, one at a time, every interval, or now
// when a consumer asks (a plugin set changed, a volume was staged); and, for
// a scope with many keys (volumes), how many keys are evaluated at once.
// Nothing that answers a call waits for a round.

import { SingleFlight } from "../support/single-flight.js";

export interface RoundsOptions {
  /** One round; `forced`: someone asked for it (now()), rather than its interval coming round. */
  round(forced: boolean): Promise<void>;
  /** Milliseconds from the end of one round to the start of the next; undefined: only on request. */
  intervalMs?: number;
  onError(err: unknown): void;
}

/**
 * A scope's rounds: single flight (a request made during a round is answered
 * by the next one, which all requests made meanwhile share), then the next
 * one an interval after the last ended, so a slow round delays the next
 * instead of piling up behind it.
 */
export class Rounds {
  private readonly flight: SingleFlight;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private forced = false;
  private readonly running = new Set<Promise<unknown>>();

  constructor(private readonly opts: RoundsOptions) {
    this.flight = new SingleFlight(() => this.one(), opts.onError);
  }

  /**
   * Runs a round now, or right after the one in progress; resolves when it
   * has ended. A forced round runs every kind of check, due or not.
   */
  now(forced = true): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (forced) this.forced = true;
    return this.track(this.flight.run());
  }

  /** Keeps `p` among what stop() waits for (work the scope started outside a round). */
  track<T>(p: Promise<T>): Promise<T> {
    this.running.add(p);
    void p.finally(() => this.running.delete(p)).catch(() => {});
    return p;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** No round starts after this; resolves once the ones in progress have ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.all([...this.running]);
  }

  private async one(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const forced = this.forced;
    this.forced = false;
    try {
      if (!this.stopped) await this.opts.round(forced);
    } finally {
      if (!this.stopped && this.opts.intervalMs !== undefined) {
        this.timer = setTimeout(() => void this.now(false), this.opts.intervalMs);
        this.timer.unref();
      }
    }
  }
}

/**
 * A kind of check with a cadence of its own within a scope's rounds (storage
 * and volume health every --health-interval, readiness every round): a round
 * is its turn when its interval has passed since its last turn, when the
 * round was asked for, or when something made it urgent (hurry()).
 */
export class Cadence {
  private last = Number.NEGATIVE_INFINITY;
  private urgent = false;

  constructor(private readonly everyMs: number) {}

  /** Whether the round starting at `nowMs` is this kind's turn; if so, its interval starts again. */
  turn(nowMs: number, forced: boolean): boolean {
    if (!forced && !this.urgent && nowMs - this.last < this.everyMs) return false;
    this.urgent = false;
    this.last = nowMs;
    return true;
  }

  /** The next round is this kind's turn, whatever its interval says. */
  hurry(): void {
    this.urgent = true;
  }
}

/**
 * At most `width` keys evaluated at once, by workers that take the next key
 * when done: a round over every volume, or volumes seen for the first time
 * (a burst of requests queues, bounded by the scope's registry, instead of
 * starting a statfs and a plugin run per request at the same moment).
 */
export class KeyPool {
  private readonly pending = new Set<string>();
  private readonly queue: string[] = [];
  private workers = 0;

  constructor(
    private readonly width: number,
    private readonly rounds: Rounds,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Evaluates every key, `width` at a time; resolves when all are done. */
  async each(keys: readonly string[], fn: (key: string) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < keys.length && !this.rounds.isStopped) await fn(keys[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(this.width, keys.length) }, worker));
  }

  /** Evaluates `key` soon, in the background, after the caller returned; once however often asked meanwhile. */
  soon(key: string, fn: (key: string) => Promise<void>): void {
    if (this.rounds.isStopped || this.pending.has(key)) return;
    this.pending.add(key);
    this.queue.push(key);
    if (this.workers >= this.width) return;
    this.workers++;
    const work = async () => {
      // Let the call that added it return first.
      await new Promise((r) => setImmediate(r));
      try {
        for (let next = this.queue.shift(); next !== undefined && !this.rounds.isStopped; next = this.queue.shift()) {
          this.pending.delete(next);
          await fn(next);
        }
      } finally {
        this.workers--;
      }
    };
    void this.rounds.track(work().catch(this.onError));
  }
}
