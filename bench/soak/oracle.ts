// The readiness invariant, checked on every answer: no ready answer while
// something that must make the node not ready has been true for longer than
// its bound; and, the other way, no node stuck not ready long after every
// such thing has gone. Causes come from the soak's own fault injection, never
// from the gateway's view of itself.

export interface Cause {
  what: string;
  since: number;
}

export interface OracleBounds {
  /** A failing required check (lnet fault, failing or faulting plugin): interval + source timeouts + grace. */
  checkMs: number;
  /** The upstream driver down (gateway mode, Probe on the CSI socket only). */
  upstreamMs: number;
  /** Every cause gone → ready again within this. */
  recoverMs: number;
}

export interface ReadinessViolation {
  at: number;
  observer: string;
  cause: string;
  /** How long the cause had been there when the ready answer was asked for. */
  afterMs: number;
}

export class ReadinessOracle {
  checked = 0;
  readyAnswers = 0;
  notReadyAnswers = 0;
  readonly violations: ReadinessViolation[] = [];
  violationCount = 0;
  stuck = 0;
  readonly stuckEpisodes: Array<{ clearedAt: number; observer: string }> = [];
  /** Per cause family: ms from the cause to the first not-ready answer asked for after it. */
  readonly detection: Record<string, number[]> = {};
  /** ms from the last cause going away to the first ready answer. */
  readonly recovery: number[] = [];
  private seen = new Set<string>();
  private clearedSince: number | undefined;
  private clearEpisodeReported = false;

  constructor(
    readonly instance: string,
    private readonly bounds: OracleBounds,
    private readonly t0: number,
  ) {}

  /** Called after every fault change with the causes now in force (all observers). */
  note(causes: Cause[], now: number): void {
    if (causes.length === 0) {
      if (this.clearedSince === undefined) {
        this.clearedSince = now;
        this.clearEpisodeReported = false;
      }
    } else this.clearedSince = undefined;
  }

  private bound(c: Cause): number {
    return c.what.startsWith("upstream") ? this.bounds.upstreamMs : this.bounds.checkMs;
  }

  /**
   * One answer. `ready` false covers ready:false and the clean errors Probe
   * uses for not ready (FAILED_PRECONDITION, UNAVAILABLE). `causes` are
   * those that apply to this observer, as they are now (at the answer).
   */
  observe(observer: string, sentAt: number, ready: boolean, causes: Cause[]): void {
    this.checked++;
    if (ready) this.readyAnswers++;
    else this.notReadyAnswers++;
    for (const c of causes) {
      if (c.since > sentAt) continue;
      const key = `${c.what}@${c.since}`;
      if (!ready && !this.seen.has(key)) {
        this.seen.add(key);
        const fam = c.what.split(":")[0];
        (this.detection[fam] ??= []).push(sentAt - c.since);
        if (this.seen.size > 10_000) this.seen.clear();
      }
      if (ready && sentAt - c.since > this.bound(c)) {
        this.violationCount++;
        if (this.violations.length < 50) this.violations.push({ at: sentAt - this.t0, observer, cause: c.what, afterMs: sentAt - c.since });
      }
    }
    const cleared = this.clearedSince;
    if (cleared !== undefined && causes.length === 0 && sentAt >= cleared) {
      if (ready) {
        if (!this.clearEpisodeReported) this.recovery.push(sentAt - cleared);
        this.clearEpisodeReported = true;
      } else if (sentAt - cleared > this.bounds.recoverMs && !this.clearEpisodeReported) {
        this.stuck++;
        this.clearEpisodeReported = true;
        this.stuckEpisodes.push({ clearedAt: cleared - this.t0, observer });
      }
    }
  }
}
