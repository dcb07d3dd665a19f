// At most one process per key, ever (a statfs per path; next an unmount step
// per path, a ping per NID). A caller waits for its key's run at most `waitMs`
// and is told "hung" past that; the process is kept, not killed and not
// started again, and whoever asks for that key later is told "hung" with the
// time so far (waiting out the rest of its bound) until it ends, however long
// that takes (a process in a Lustre call cannot die before the call returns).
// A cap on the runs outstanding, hung ones included, bounds processes and
// memory: past it a new key is refused (EAGAIN) instead of started.

import { performance } from "node:perf_hooks";

export type KeyedAnswer<T> = { kind: "done"; value: T } | { kind: "hung"; ms: number } | { kind: "refused"; code: "EAGAIN" | "ECANCELED" };

/** One run of a key: what it resolves to, and how to kill it (set once it has a process). */
export interface KeyedRun<T> {
  done: Promise<T>;
  kill: (() => void) | undefined;
}

export interface OnePerKeyOptions {
  /** Runs outstanding at once, hung ones included. */
  maxOutstanding: number;
  /** Told each time a run starts or ends (a gauge). */
  onChange?: (outstanding: number) => void;
}

interface Outstanding<T> {
  run: KeyedRun<T>;
  startedAt: number;
}

export class OnePerKey<T> {
  private readonly outstanding = new Map<string, Outstanding<T>>();
  private stopped = false;

  constructor(private readonly opts: OnePerKeyOptions) {}

  /** Runs outstanding now, hung ones included. */
  count(): number {
    return this.outstanding.size;
  }

  /** A run for `key` is outstanding. */
  has(key: string): boolean {
    return this.outstanding.has(key);
  }

  /**
   * The answer of `key`'s run, waiting at most `waitMs` from its start.
   * `start` is called only when no run of `key` is outstanding; it must not reject.
   * Never rejects.
   */
  async run(key: string, waitMs: number, start: () => KeyedRun<T>): Promise<KeyedAnswer<T>> {
    let o = this.outstanding.get(key);
    if (!o) {
      if (this.stopped) return { kind: "refused", code: "ECANCELED" };
      if (this.outstanding.size >= this.opts.maxOutstanding) return { kind: "refused", code: "EAGAIN" };
      o = this.start(key, start);
    }
    const startedAt = o.startedAt;
    const left = waitMs - (performance.now() - startedAt);
    if (left <= 0) return { kind: "hung", ms: performance.now() - startedAt };
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<KeyedAnswer<T>>((resolve) => {
      timer = setTimeout(() => resolve({ kind: "hung", ms: performance.now() - startedAt }), left);
    });
    const answer = await Promise.race([o.run.done.then((value): KeyedAnswer<T> => ({ kind: "done", value })), hung]);
    clearTimeout(timer);
    return answer;
  }

  /** Kills every run; waits up to `graceMs` for them (a process in a Lustre call may not die yet). Nothing starts after. */
  async stop(graceMs = 1000): Promise<void> {
    this.stopped = true;
    const pending = [...this.outstanding.values()];
    for (const o of pending) o.run.kill?.();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending.map((o) => o.run.done)), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  private start(key: string, start: () => KeyedRun<T>): Outstanding<T> {
    const o: Outstanding<T> = { run: start(), startedAt: performance.now() };
    this.outstanding.set(key, o);
    this.opts.onChange?.(this.outstanding.size);
    void o.run.done.then(() => {
      if (this.outstanding.get(key) === o) this.outstanding.delete(key);
      this.opts.onChange?.(this.outstanding.size);
    });
    return o;
  }
}
