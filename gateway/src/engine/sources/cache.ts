// TTL cache with single-flight: while a value is being produced every caller
// shares the same promise, and a finished value is reused until it expires.
// This is what keeps a burst of Probe-driven evaluations (or a thousand
// concurrent reads) down to one `lnetctl` execution per TTL.

import { performance } from "node:perf_hooks";

interface Entry<T> {
  pending: Promise<T> | null;
  value: T | undefined;
  /** Monotonic clock (performance.now), so wall-clock jumps cannot pin or flush entries. */
  expiresAt: number;
}

// Keys include fact values (e.g. the NID to ping); facts change rarely, but a
// plugin flapping between values must not grow the map without bound.
const PRUNE_ABOVE = 256;

export class SingleFlightCache<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /**
   * TTL counts from when the value was produced, not from when it was
   * requested, so a slow command (a 10 s ping) is not stale on arrival.
   * `keep`, when given, is asked about an expired value before `produce` is
   * run: true keeps it for another TTL (counted from now).
   */
  get(key: string, ttlMs: number, produce: () => Promise<T>, keep?: (value: T) => Promise<boolean>): Promise<T> {
    const entry = this.entries.get(key);
    if (entry?.pending) return entry.pending;
    if (entry && entry.value !== undefined && this.now() < entry.expiresAt) {
      return Promise.resolve(entry.value);
    }
    if (!entry && this.entries.size >= PRUNE_ABOVE) this.prune();

    const fresh: Entry<T> = entry ?? { pending: null, value: undefined, expiresAt: 0 };
    const old = fresh.value;
    // An expired value its owner says is still good lives another TTL; the
    // question is asked once however many callers wait (it is the pending).
    const produced =
      keep && old !== undefined
        ? keep(old).then(
            (still) => (still ? old : produce()),
            () => produce(),
          )
        : produce();
    const pending = produced.then(
      (value) => {
        fresh.pending = null;
        fresh.value = value;
        fresh.expiresAt = this.now() + ttlMs;
        return value;
      },
      (err: unknown) => {
        // Producers are not supposed to reject; if one does, don't cache it.
        this.entries.delete(key);
        throw err;
      },
    );
    fresh.pending = pending;
    this.entries.set(key, fresh);
    return pending;
  }

  size(): number {
    return this.entries.size;
  }

  private prune(): void {
    const now = this.now();
    for (const [key, e] of this.entries) {
      if (!e.pending && now >= e.expiresAt) this.entries.delete(key);
    }
  }
}
