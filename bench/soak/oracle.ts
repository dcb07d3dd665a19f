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
  /** `lastCauses`: what had been in force just before the all-clear, to find the episode in the logs. */
  readonly stuckEpisodes: Array<{ clearedAt: number; observer: string; lastCauses: string[] }> = [];
  /** Called once per stuck episode (the soak logs the gateway's own view then). */
  onStuck: ((observer: string) => void) | undefined;
  /** Per cause family: ms from the cause to the first not-ready answer asked for after it. */
  readonly detection: Record<string, number[]> = {};
  /** ms from the last cause going away to the first ready answer. */
  readonly recovery: number[] = [];
  private seen = new Set<string>();
  private clearedSince: number | undefined;
  private clearEpisodeReported = false;
  private lastCauses: string[] = [];
  private clearedCauses: string[] = [];

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
        this.clearedCauses = this.lastCauses;
      }
    } else {
      this.clearedSince = undefined;
      this.lastCauses = causes.map((c) => c.what);
    }
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
        this.stuckEpisodes.push({ clearedAt: cleared - this.t0, observer, lastCauses: this.clearedCauses });
        this.onStuck?.(observer);
      }
    }
  }
}

export interface HealthBounds {
  /** A Lustre fault in force longer than this must show in the answers (interval + source TTL and timeout + grace). */
  detectMs: number;
  /** A hung mount longer than this must make its volume INACCESSIBLE (statfs bound + the above). */
  hungMs: number;
  /** Every fault gone longer than this: no entry about it may remain. */
  recoverMs: number;
  /** A server ping's schedule on top of detectMs: its interval and how long a round waits for it. */
  pingMs?: number;
}

export interface HealthViolation {
  at: number;
  rpc: string;
  what: string;
  detail: string;
}

/** An entry of a health answer, status as the enum's name. */
export interface HealthAnswerEntry {
  status: string;
  reason: string;
}

/**
 * The storage and volume health invariants, checked on every answer of
 * NodeGetStorageHealth and NodeGetVolumeHealth on the node-mode gateway:
 * - fail closed: while the MDT is evicted (longer than the bound) the storage
 *   answer is never empty, and it says STORAGE_UNREACHABLE unless lctl itself
 *   is gone (then "cannot tell" is the honest, still adverse, answer);
 * - a hung mount (longer than its bound) makes that volume INACCESSIBLE, never
 *   an empty (healthy) answer;
 * - no stale news: once every fault has been gone longer than the recovery
 *   bound, no Lustre entry remains (an eviction that recovered is counted, not
 *   reported).
 */
export class HealthOracle {
  checked = 0;
  violationCount = 0;
  readonly violations: HealthViolation[] = [];
  /** Answers that carried an adverse entry, per reason. */
  readonly seen: Record<string, number> = {};

  constructor(private readonly bounds: HealthBounds, private readonly t0: number) {}

  private violate(at: number, rpc: string, what: string, detail: string): void {
    this.violationCount++;
    if (this.violations.length < 50) this.violations.push({ at: at - this.t0, rpc, what, detail });
  }

  private tally(entries: readonly HealthAnswerEntry[]): void {
    for (const e of entries) this.seen[`${e.status}/${e.reason}`] = (this.seen[`${e.status}/${e.reason}`] ?? 0) + 1;
  }

  /**
   * `fault`: the Lustre state at the answer and since when; `lctlSince`: since
   * when lctl has been on PATH (undefined: it is not; a failure is cached for
   * up to a TTL after it returns); `quietSince`: every fault gone since
   * (undefined: a fault is in force).
   */
  storage(sentAt: number, entries: readonly HealthAnswerEntry[], fault: { state: string; since: number }, lctlSince: number | undefined, quietSince: number | undefined): void {
    const lctlPresent = lctlSince !== undefined && sentAt - lctlSince > this.bounds.detectMs;
    this.checked++;
    this.tally(entries);
    const age = sentAt - fault.since;
    if (fault.state === "mdt-evicted" && fault.since <= sentAt && age > this.bounds.detectMs) {
      if (entries.length === 0) this.violate(sentAt, "storage", "empty while the MDT is evicted", `${age} ms after the eviction`);
      else if (lctlPresent && !entries.some((e) => e.status === "STORAGE_UNREACHABLE")) {
        this.violate(sentAt, "storage", "no STORAGE_UNREACHABLE while the MDT is evicted", entries.map((e) => `${e.status}/${e.reason}`).join(","));
      }
    }
    // An OSS silent at the LNet level with its imports FULL: adverse once its ping had a turn (#42).
    if (fault.state === "server-lost" && fault.since <= sentAt && age > this.bounds.detectMs + (this.bounds.pingMs ?? 0) && entries.length === 0) {
      this.violate(sentAt, "storage", "empty while an OSS does not answer LNet pings", `${age} ms after it went silent`);
    }
    if (quietSince !== undefined && quietSince <= sentAt && sentAt - quietSince > this.bounds.recoverMs) {
      const stale = entries.filter((e) => /^(Evicted|MdtUnreachable|OstUnreachable|MgsUnreachable)$/.test(e.reason));
      if (stale.length > 0) this.violate(sentAt, "storage", "Lustre entry after every fault had gone", stale.map((e) => `${e.status}/${e.reason}`).join(","));
    }
  }

  /** A hung mount must be INACCESSIBLE; while lctl is gone (the check cannot read the imports) it must at least be adverse (HealthUnknown, as the contract says). */
  volume(sentAt: number, volumeId: string, entries: readonly HealthAnswerEntry[], hungSince: number | undefined, quietSince: number | undefined, lctlSince: number | undefined): void {
    this.checked++;
    this.tally(entries);
    const lctlPresent = lctlSince !== undefined && sentAt - lctlSince > this.bounds.detectMs;
    if (hungSince !== undefined && hungSince <= sentAt && sentAt - hungSince > this.bounds.hungMs) {
      if (entries.length === 0 || (lctlPresent && !entries.some((e) => e.status === "INACCESSIBLE"))) {
        this.violate(sentAt, `volume ${volumeId}`, "not INACCESSIBLE while its mount hangs", `${sentAt - hungSince} ms hung; ${entries.map((e) => `${e.status}/${e.reason}`).join(",") || "empty"}`);
      }
    }
    if (quietSince !== undefined && quietSince <= sentAt && sentAt - quietSince > this.bounds.recoverMs && entries.some((e) => e.reason === "MountHung")) {
      this.violate(sentAt, `volume ${volumeId}`, "MountHung after the mount answers again", `${sentAt - quietSince} ms after`);
    }
  }
}
