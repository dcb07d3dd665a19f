import type { Counter, Gauge } from "prom-client";
import { counter, gauge } from "../observability/declare.js";
import type { Metrics } from "../observability/metrics.js";

/** Node reporting's metrics, registered on the gateway's registry only when the feature is on. */
export class KubeMetrics {
  readonly requests: Counter<"verb" | "resource" | "code">;
  readonly conditionStatus: Gauge<"condition" | "status">;
  readonly taintPresent: Gauge;
  readonly lastWrite: Gauge;
  readonly pending: Gauge;

  constructor(m: Metrics) {
    this.requests = counter(m.registry, "probegate_kube_requests_total", "Kubernetes API requests by verb, resource and HTTP code (or the network error: ECONNREFUSED, timeout, ...).", ["verb", "resource", "code"]);
    this.conditionStatus = gauge(m.registry, "probegate_kube_condition_status", "1 for the status last written for each Node condition (True, False, Unknown), 0 otherwise.", ["condition", "status"]);
    this.taintPresent = gauge(m.registry, "probegate_kube_taint_present", "1 while the --node-taint taint is on the Node as last seen, 0 otherwise.");
    this.lastWrite = gauge(m.registry, "probegate_kube_last_successful_write_timestamp_seconds", "Unix time of the last successful Node write (condition or taint).");
    this.pending = gauge(m.registry, "probegate_kube_out_of_sync", "1 while the Node does not yet show probegate's verdict (a write is due, waiting or failing).");
  }
}
