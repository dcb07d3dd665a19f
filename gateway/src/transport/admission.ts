import type { EdgeRejection } from "./edge-limits.js";

/**
 * What a request is, for admission: Probe-style checks (kubelet's, cheap, must
 * keep answering), Health/Watch (long-lived), or anything else.
 */
export type CallClass = "probe" | "watch" | "other";

const PROBE_CLASS = new Set([
  "/csi.v1.Identity/Probe",
  "/grpc.health.v1.Health/Check",
  "/healthz",
  "/livez",
  "/readyz",
  // Scrapes are coalesced, so they are cheap; seeing the refusals during a flood is the point.
  "/metrics",
]);

/** The class of a request path (without its query): kubelet-style checks and /metrics keep a reserve; Watch streams have their own cap. */
export function callClass(path: string): CallClass {
  if (PROBE_CLASS.has(path)) return "probe";
  if (path === "/grpc.health.v1.Health/Watch") return "watch";
  return "other";
}

/**
 * Counts calls in progress across every listener and turns new ones away over
 * the caps. The last quarter of the in-flight slots is kept for probe-class
 * calls, so a flood of other calls cannot starve kubelet's Probe.
 */
export class Admission {
  private inflight = 0;
  private watches = 0;
  private readonly reserveFrom: number;

  constructor(
    private readonly maxInflight: number,
    private readonly maxWatches: number,
  ) {
    this.reserveFrom = maxInflight - Math.floor(maxInflight / 4);
  }

  /** undefined when admitted (call leave() when it ends), else why not. */
  enter(cls: CallClass): EdgeRejection | undefined {
    if (this.inflight >= this.maxInflight) return "inflight";
    if (cls !== "probe" && this.inflight >= this.reserveFrom) return "inflight";
    if (cls === "watch") {
      if (this.watches >= this.maxWatches) return "watches";
      this.watches++;
    }
    this.inflight++;
    return undefined;
  }

  leave(cls: CallClass): void {
    this.inflight--;
    if (cls === "watch") this.watches--;
  }

  get current(): { inflight: number; watches: number } {
    return { inflight: this.inflight, watches: this.watches };
  }
}
