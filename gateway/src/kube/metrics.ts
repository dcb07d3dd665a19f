import { Counter, Gauge } from "prom-client";
import type { Metrics } from "../observability/metrics.js";

/** Node reporting's metrics, registered on the gateway's registry only when the feature is on. */
export class KubeMetrics {
  readonly requests: Counter<"verb" | "resource" | "code">;
  readonly conditionStatus: Gauge<"condition" | "status">;
  readonly taintPresent: Gauge;
  readonly lastWrite: Gauge;
  readonly pending: Gauge;

  constructor(m: Metrics) {
    const registers = [m.registry];
    this.requests = new Counter({
      name: "probegate_kube_requests_total",
      help: "Kubernetes API requests by verb, resource and HTTP code (or the network error: ECONNREFUSED, timeout, ...).",
      labelNames: ["verb", "resource", "code"] as const,
      registers,
    });
    this.conditionStatus = new Gauge({
      name: "probegate_kube_condition_status",
      help: "1 for the status last written for each Node condition (True, False, Unknown), 0 otherwise.",
      labelNames: ["condition", "status"] as const,
      registers,
    });
    this.taintPresent = new Gauge({
      name: "probegate_kube_taint_present",
      help: "1 while the --node-taint taint is on the Node as last seen, 0 otherwise.",
      registers,
    });
    this.lastWrite = new Gauge({
      name: "probegate_kube_last_successful_write_timestamp_seconds",
      help: "Unix time of the last successful Node write (condition or taint).",
      registers,
    });
    this.pending = new Gauge({
      name: "probegate_kube_out_of_sync",
      help: "1 while the Node does not yet show probegate's verdict (a write is due, waiting or failing).",
      registers,
    });
  }
}
