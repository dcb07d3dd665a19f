// The engine-side metrics of storage and volume health. Registered on the
// gateway's registry here rather than in observability/metrics.ts: only the
// health evaluation updates them, and a gateway without it has none.

import { Counter, Gauge } from "prom-client";
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
  const registers = [m.registry];
  return {
    storageEvents: metric(m, "probegate_storage_events_total", () => new Counter({
      name: "probegate_storage_events_total",
      help: "Things storage and volume checks saw happen between two rounds (e.g. Evicted), by check and reason.",
      labelNames: ["check", "reason"] as const,
      registers,
    })),
    volumesRefused: metric(m, "probegate_volumes_refused_total", () => new Counter({
      name: "probegate_volumes_refused_total",
      help: "Volumes not taken for health evaluation: reason invalid (hostile id or path) or limit (--max-volumes reached).",
      labelNames: ["reason"] as const,
      registers,
    })),
    volumesKnown: metric(m, "probegate_volumes_known", () => new Gauge({
      name: "probegate_volumes_known",
      help: "Volumes whose health probegate evaluates.",
      registers,
      collect() {
        this.set(sample.volumes());
      },
    })),
    statfsOutstanding: metric(m, "probegate_statfs_outstanding", () => new Gauge({
      name: "probegate_statfs_outstanding",
      help: "statfs probes still running (hung ones included); at most one per mount path.",
      registers,
      collect() {
        this.set(sample.statfsOutstanding());
      },
    })),
    volumeRoundDuration: metric(m, "probegate_volume_round_duration_seconds", () => new Gauge({
      name: "probegate_volume_round_duration_seconds",
      help: "Wall time of the last background evaluation of every known volume.",
      registers,
    })),
    volumeChecks: metric(m, "probegate_volume_checks_total", () => new Counter({
      name: "probegate_volume_checks_total",
      help: "Volume check evaluations (one per volume and plugin): result run (the plugin was called) or reused (its stable verdict stood: nothing it reads had changed).",
      labelNames: ["result"] as const,
      registers,
    })),
  };
}
