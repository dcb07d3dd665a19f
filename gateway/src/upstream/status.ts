// What gateway mode knows about the upstream driver's identity and start-up,
// in one small object other parts read (Probe, the proxy, /readyz?verbose, and
// reporters that need the driver's name). It only records; it never calls out.

export interface UpstreamStatusView {
  /** The upstream has answered a call at least once (any gRPC status). */
  readonly answeredOnce: boolean;
  /** The name GetPluginInfo should carry: the upstream's once known, else --driver-name. */
  readonly driverName: string;
  /** The upstream's own GetPluginInfo name, once it has answered it. */
  readonly upstreamDriverName: string | undefined;
  readonly configuredDriverName: string;
  /** Called on every change; returns an unsubscribe function. */
  subscribe(listener: () => void): () => void;
}

export class UpstreamStatus implements UpstreamStatusView {
  private answered = false;
  private upstreamName: string | undefined;
  private readonly listeners = new Set<() => void>();
  private readonly waiters: Array<() => void> = [];

  constructor(readonly configuredDriverName: string) {}

  get answeredOnce(): boolean {
    return this.answered;
  }

  get upstreamDriverName(): string | undefined {
    return this.upstreamName;
  }

  get driverName(): string {
    return this.upstreamName ?? this.configuredDriverName;
  }

  get nameMismatch(): boolean {
    return this.upstreamName !== undefined && this.upstreamName !== this.configuredDriverName;
  }

  markAnswered(): void {
    if (this.answered) return;
    this.answered = true;
    for (const w of this.waiters.splice(0)) w();
    this.notify();
  }

  setUpstreamName(name: string): void {
    this.markAnswered();
    if (this.upstreamName === name) return;
    this.upstreamName = name;
    this.notify();
  }

  /** Resolves true once the upstream has answered, or false after timeoutMs. */
  waitForAnswer(timeoutMs: number): Promise<boolean> {
    if (this.answered) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(done);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(done);
    });
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const l of this.listeners) {
      try {
        l();
      } catch {
        // A listener's failure is its own business.
      }
    }
  }
}
