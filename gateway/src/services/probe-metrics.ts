import { HealthCheckResponse_ServingStatus as Serving } from "../../gen/grpc/health/v1/health_pb.js";
import type { CounterCell, Metrics } from "../observability/metrics.js";
import type { ProbeAnswer } from "./probe-source.js";

/** The result label of probegate_probe_requests_total. */
export type ProbeResult = "ready" | "not_ready" | "error";

/**
 * probegate_probe_requests_total, counted in one place whichever path
 * answered: the fast path, the Connect services, or the HTTP endpoints. Each
 * reports the answer it gave; the result is decided here. Counts go through
 * pre-labelled cells (no label hashing per request: the fast path's budget).
 */
export class ProbeCounts {
  private static readonly byMetrics = new WeakMap<Metrics, ProbeCounts>();
  /** cells[transport][method][result], made on first use; an unused cell exports nothing. */
  private readonly cells: Record<string, Record<string, Record<string, CounterCell>>> = {};

  static for(metrics: Metrics): ProbeCounts {
    let c = ProbeCounts.byMetrics.get(metrics);
    if (!c) ProbeCounts.byMetrics.set(metrics, (c = new ProbeCounts(metrics)));
    return c;
  }

  private constructor(private readonly metrics: Metrics) {}

  /** A CSI Probe answer: an error, or the ready field. */
  probe(transport: string, answer: ProbeAnswer): void {
    this.count(transport, "Probe", answer.kind === "error" ? "error" : answer.ready ? "ready" : "not_ready");
  }

  /** A Health/Check answer: an unknown service (undefined) is an error. */
  check(transport: string, status: Serving | undefined): void {
    this.count(transport, "Health.Check", status === undefined ? "error" : status === Serving.SERVING ? "ready" : "not_ready");
  }

  /** /healthz, /readyz or /livez. */
  http(endpoint: string, ok: boolean): void {
    this.count("http", endpoint, ok ? "ready" : "not_ready");
  }

  private count(transport: string, method: string, result: ProbeResult): void {
    const byMethod = (this.cells[transport] ??= {});
    const byResult = (byMethod[method] ??= {});
    (byResult[result] ??= this.metrics.hotCells.cell(this.metrics.probeRequests, { transport, method, result })).n++;
  }
}
