import type { Logger } from "../observability/logger.js";
import type { EdgeRejection } from "./edge-limits.js";

const WINDOW_MS = 10_000;

/**
 * Logs the edge's refusals at most once per reason every ten seconds, with the
 * count of those left out, so a flood of bad clients cannot flood the logs.
 */
export class BadClientLog {
  private readonly last = new Map<EdgeRejection, { at: number; suppressed: number }>();

  constructor(private readonly logger: Logger) {}

  note(reason: EdgeRejection, detail: Record<string, unknown> = {}): void {
    // Idle connections closing is how kubelet's one-connection-per-probe ends; counted, not logged.
    if (reason === "idle_timeout") return;
    const now = Date.now();
    const seen = this.last.get(reason);
    if (seen && now - seen.at < WINDOW_MS) {
      seen.suppressed++;
      return;
    }
    const suppressed = seen?.suppressed ?? 0;
    this.last.set(reason, { at: now, suppressed: 0 });
    this.logger.warn({ reason, ...detail, ...(suppressed ? { suppressed } : {}) }, "refused a client request at the edge");
  }
}
