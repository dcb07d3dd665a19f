import { Counter, Gauge, Histogram } from "prom-client";
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
    const registers = [m.registry];
    this.requests = new Counter({
      name: "probegate_upstream_requests_total",
      help: "Calls forwarded to the upstream CSI driver, by method (gated calls included).",
      labelNames: ["method"] as const,
      registers,
    });
    this.errors = new Counter({
      name: "probegate_upstream_errors_total",
      help: "Forwarded calls that ended with a non-OK gRPC status, by method and status code name.",
      labelNames: ["method", "code"] as const,
      registers,
    });
    this.duration = new Histogram({
      name: "probegate_upstream_request_duration_seconds",
      help: "Time from a forwarded call's arrival to its final status.",
      labelNames: ["method"] as const,
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
      registers,
    });
    this.gated = new Counter({
      name: "probegate_upstream_gated_total",
      help: "NodeStageVolume/NodePublishVolume calls refused because the node was not ready.",
      labelNames: ["method"] as const,
      registers,
    });
    this.probes = new Counter({
      name: "probegate_upstream_probe_total",
      help: "Probe calls made to the upstream driver, by result (ready, not_ready, error, unreachable).",
      labelNames: ["result"] as const,
      registers,
    });
    this.connected = new Gauge({
      name: "probegate_upstream_connected",
      help: "1 while an HTTP/2 session to the upstream driver is established.",
      registers,
    });
    this.volumeConditions = new Counter({
      name: "probegate_volume_condition_total",
      help: "NodeGetVolumeStats replies given a volume condition, by result (normal, abnormal, upstream_abnormal, skipped).",
      labelNames: ["result"] as const,
      registers,
    });
    this.healthFailures = new Counter({
      name: "probegate_upstream_health_failures_total",
      help: "NodeGetStorageHealth/NodeGetVolumeHealth calls to a driver that advertises them which failed; probegate answered with its own entries only.",
      labelNames: ["method"] as const,
      registers,
    });
    for (const method of ["NodeGetStorageHealth", "NodeGetVolumeHealth"]) this.healthFailures.inc({ method }, 0);
    this.nameMismatches = new Counter({
      name: "probegate_upstream_driver_name_mismatch_total",
      help: "Times the upstream driver's GetPluginInfo name differed from --driver-name.",
      registers,
    });
    // A state, not only the counter above: the name is asked once per start, so
    // an increase() over a window would forget a mismatch that is still there.
    this.nameMatch = new Gauge({
      name: "probegate_upstream_driver_name_match",
      help: "Once the upstream driver has answered GetPluginInfo: 1 if its name (upstream_name) equals --driver-name (driver_name), 0 if not.",
      labelNames: ["upstream_name", "driver_name"] as const,
      registers,
    });
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
