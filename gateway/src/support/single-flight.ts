/**
 * At most one run of `fn` at a time. A request made while a run is in
 * progress is answered by the next run (it may depend on state the current
 * run has already read); all requests made meanwhile share that one run.
 */
export class SingleFlight {
  private loopPromise: Promise<void> | null = null;
  private dirty = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly fn: () => Promise<void>,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  run(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.dirty = true;
      if (!this.loopPromise) this.loopPromise = this.loop();
    });
  }

  get busy(): boolean {
    return this.loopPromise !== null;
  }

  private async loop(): Promise<void> {
    while (this.dirty) {
      this.dirty = false;
      const batch = this.waiters.splice(0);
      try {
        await this.fn();
      } catch (err) {
        this.onError(err);
      }
      for (const resolve of batch) resolve();
    }
    this.loopPromise = null;
  }
}
