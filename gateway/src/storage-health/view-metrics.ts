// Storage and volume health as metrics, read from the StorageHealthView when
// Prometheus scrapes (nothing is kept between scrapes, so a cleared entry's
// series is gone at the next scrape). Label sets are bounded whatever the
// checks report: statuses are the spec's few, file system names and reasons
// are capped per process, and per-volume series exist only for volumes with an
// adverse entry, capped too.
import type { Registry } from "prom-client";
import { gauge } from "../observability/declare.js";
import type { StorageHealthView, VolumeHealthStatus } from "./view.js";

const onRegistry = new WeakMap<Registry, StorageHealthMetrics>();

/**
 * The storage and volume health gauges of a registry, registered on first
 * use: the gateway registers them at start in every mode (a node without
 * health checks shows zero counts), and the evaluator attaches its view.
 */
export function storageHealthMetrics(registry: Registry): StorageHealthMetrics {
  let m = onRegistry.get(registry);
  if (!m) onRegistry.set(registry, (m = new StorageHealthMetrics(registry)));
  return m;
}

/** Distinct file system names kept as label values; later ones are reported as fs="_other". */
export const FS_LABEL_CAP = 32;
/** Distinct reasons kept as label values (operators' plugins may add their own); later ones are reason="_other". */
export const REASON_LABEL_CAP = 64;
/**
 * Per-volume series (volume, status, reason) at most: only volumes with an
 * adverse entry have one, so a healthy node exports none; a node where every
 * one of --max-volumes volumes fails shows the first ones and the rest in
 * probegate_volume_health_entries_dropped. The counts per status stay exact.
 */
export const VOLUME_SERIES_CAP = 64;

const VOLUME_STATES: readonly (VolumeHealthStatus | "HEALTHY" | "UNKNOWN")[] = ["HEALTHY", "UNKNOWN", "DEGRADED", "INACCESSIBLE", "DATA_LOSS"];

/** A bounded set of label values: the first `cap` distinct ones seen, the rest folded into "_other". */
class LabelCap {
  private readonly seen = new Set<string>();
  constructor(private readonly cap: number) {}
  value(v: string): string {
    if (this.seen.has(v)) return v;
    if (this.seen.size >= this.cap) return "_other";
    this.seen.add(v);
    return v;
  }
}

export class StorageHealthMetrics {
  private view: StorageHealthView | undefined;
  private readonly fsNames = new LabelCap(FS_LABEL_CAP);
  private readonly reasons = new LabelCap(REASON_LABEL_CAP);

  constructor(registry: Registry) {
    const self = this;
    gauge(
      registry,
      "probegate_storage_health",
      "1 for each storage health entry this node reports (NodeGetStorageHealth): status STORAGE_DEGRADED or STORAGE_UNREACHABLE, its reason, and the file system (fs, \"\" when the check named none). No series: nothing adverse known.",
      ["status", "reason", "fs"] as const,
      {
        collect() {
          this.reset();
          for (const e of self.view?.storage() ?? []) {
            this.set({ status: e.status, reason: self.reasons.value(e.reason), fs: e.fs ? self.fsNames.value(e.fs) : "" }, 1);
          }
        },
      },
    );
    gauge(
      registry,
      "probegate_volume_health",
      "Volumes known on this node by health: HEALTHY (evaluated, no entry), UNKNOWN (not evaluated yet), or with at least one entry of status DEGRADED, INACCESSIBLE, DATA_LOSS (a volume may count in several).",
      ["status"] as const,
      {
        collect() {
          const n = new Map<string, number>(VOLUME_STATES.map((s) => [s, 0]));
          for (const v of self.view?.volumes() ?? []) {
            if (v.entries === undefined) n.set("UNKNOWN", n.get("UNKNOWN")! + 1);
            else if (v.entries.length === 0) n.set("HEALTHY", n.get("HEALTHY")! + 1);
            else for (const s of new Set(v.entries.map((e) => e.status))) n.set(s, (n.get(s) ?? 0) + 1);
          }
          for (const [status, count] of n) this.set({ status }, count);
        },
      },
    );
    gauge(registry, "probegate_volume_health_entries_dropped", `Per-volume health entries not exported as probegate_volume_health_entries series (over ${VOLUME_SERIES_CAP}).`, [], {
      collect() {
        let total = 0;
        for (const v of self.view?.volumes() ?? []) total += v.entries?.length ?? 0;
        this.set(Math.max(0, total - VOLUME_SERIES_CAP));
      },
    });
    gauge(
      registry,
      "probegate_volume_health_entries",
      `1 for each adverse entry of a volume (NodeGetVolumeHealth): volume id, status, reason. At most ${VOLUME_SERIES_CAP} series; healthy volumes have none.`,
      ["volume", "status", "reason"] as const,
      {
        collect() {
          this.reset();
          let series = 0;
          for (const v of self.view?.volumes() ?? []) {
            for (const e of v.entries ?? []) {
              if (series >= VOLUME_SERIES_CAP) return;
              this.set({ volume: v.ref.volumeId.slice(0, 128), status: e.status, reason: self.reasons.value(e.reason) }, 1);
              series++;
            }
          }
        },
      },
    );
  }

  /** The view the gauges read from; before this, they show no entries and zero counts. */
  attach(view: StorageHealthView): void {
    this.view = view;
  }
}
