import type { Counter, Gauge, Histogram } from "prom-client";
import { counter, gauge, histogram } from "../observability/declare.js";
import type { Metrics } from "../observability/metrics.js";

/** Gateway mode's metrics, registered on the gateway's registry once per registry. */
export class UpstreamMetrics {
  readonly requests: Counter<"method">;
  readonly errors: Counter<"method" | "code">;
  readonly duration: Histogram<"method">;
  readonly gated: Counter<"method">;
  readonly probes: Counter<"result">;
  readonly connected: Gauge;
  readonly volumeConditions: Counter<"result">;
  readonly healthFailures: Counter<"method">;
  readonly nameMismatches: Counter;
  readonly nameMatch: Gauge<"upstream_name" | "driver_name">;

  private constructor(m: Metrics) {
    this.requests = counter(m.registry, "probegate_upstream_requests_total", "Calls forwarded to the upstream CSI driver, by method (gated calls included).", ["method"]);
    this.errors = counter(m.registry, "probegate_upstream_errors_total", "Forwarded calls that ended with a non-OK gRPC status, by method and status code name.", ["method", "code"]);
    this.duration = histogram(m.registry, "probegate_upstream_request_duration_seconds", "Time from a forwarded call's arrival to its final status.", ["method"], [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120]);
    this.gated = counter(m.registry, "probegate_upstream_gated_total", "NodeStageVolume/NodePublishVolume calls refused because the node was not ready.", ["method"]);
    this.probes = counter(m.registry, "probegate_upstream_probe_total", "Probe calls made to the upstream driver, by result (ready, not_ready, error, unreachable).", ["result"]);
    this.connected = gauge(m.registry, "probegate_upstream_connected", "1 while an HTTP/2 session to the upstream driver is established.");
    this.volumeConditions = counter(m.registry, "probegate_volume_condition_total", "NodeGetVolumeStats replies given a volume condition, by result (normal, abnormal, upstream_abnormal, skipped).", ["result"]);
    this.healthFailures = counter(m.registry, "probegate_upstream_health_failures_total", "NodeGetStorageHealth/NodeGetVolumeHealth calls to a driver that advertises them which failed; probegate answered with its own entries only.", ["method"]);
    for (const method of ["NodeGetStorageHealth", "NodeGetVolumeHealth"]) this.healthFailures.inc({ method }, 0);
    this.nameMismatches = counter(m.registry, "probegate_upstream_driver_name_mismatch_total", "Times the upstream driver's GetPluginInfo name differed from --driver-name.");
    // A state, not only the counter above: the name is asked once per start, so
    // an increase() over a window would forget a mismatch that is still there.
    this.nameMatch = gauge(m.registry, "probegate_upstream_driver_name_match", "Once the upstream driver has answered GetPluginInfo: 1 if its name (upstream_name) equals --driver-name (driver_name), 0 if not.", ["upstream_name", "driver_name"]);
  }

  private static readonly byMetrics = new WeakMap<Metrics, UpstreamMetrics>();

  static for(m: Metrics): UpstreamMetrics {
    let u = UpstreamMetrics.byMetrics.get(m);
    if (!u) {
      u = new UpstreamMetrics(m);
      UpstreamMetrics.byMetrics.set(m, u);
    }
    return u;
  }
}
