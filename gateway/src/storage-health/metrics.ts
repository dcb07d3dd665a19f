// The engine-side metrics of storage and volume health. Registered on the
// gateway's registry here rather than in observability/metrics.ts: only the
// health evaluation updates them, and a gateway without it has none.

import type { Counter, Gauge } from "prom-client";
import { counter, gauge } from "../observability/declare.js";
import type { Metrics } from "../observability/metrics.js";

/** Distinct event reasons counted per check; more share the label "Other" (bounded series). */
export const MAX_EVENT_REASONS_PER_CHECK = 32;

export interface HealthMetrics {
  storageEvents: Counter<"check" | "reason">;
  volumesRefused: Counter<"reason">;
  volumesKnown: Gauge;
  statfsOutstanding: Gauge;
  volumeRoundDuration: Gauge;
  volumeChecks: Counter<"result">;
}

function metric<T>(m: Metrics, name: string, make: () => T): T {
  return (m.registry.getSingleMetric(name) as T | undefined) ?? make();
}

export function healthMetrics(m: Metrics, sample: { volumes(): number; statfsOutstanding(): number }): HealthMetrics {
  return {
    storageEvents: metric(m, "probegate_storage_events_total", () => counter(m.registry, "probegate_storage_events_total", "Things storage and volume checks saw happen between two rounds (e.g. Evicted), by check and reason.", ["check", "reason"])),
    volumesRefused: metric(m, "probegate_volumes_refused_total", () => counter(m.registry, "probegate_volumes_refused_total", "Volumes not taken for health evaluation: reason invalid (hostile id or path) or limit (--max-volumes reached).", ["reason"])),
    volumesKnown: metric(m, "probegate_volumes_known", () => gauge(m.registry, "probegate_volumes_known", "Volumes whose health probegate evaluates.", [], {
      collect() {
        this.set(sample.volumes());
      },
    })),
    statfsOutstanding: metric(m, "probegate_statfs_outstanding", () => gauge(m.registry, "probegate_statfs_outstanding", "statfs probes still running (hung ones included); at most one per mount path.", [], {
      collect() {
        this.set(sample.statfsOutstanding());
      },
    })),
    volumeRoundDuration: metric(m, "probegate_volume_round_duration_seconds", () => gauge(m.registry, "probegate_volume_round_duration_seconds", "Wall time of the last background evaluation of every known volume.")),
    volumeChecks: metric(m, "probegate_volume_checks_total", () => counter(m.registry, "probegate_volume_checks_total", "Volume check evaluations (one per volume and plugin): result run (the plugin was called) or reused (its stable verdict stood: nothing it reads had changed).", ["result"])),
  };
}
