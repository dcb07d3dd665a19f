// Storage and volume health metrics: read from the health view at scrape
// time, through the gateway's own registry, with bounded label sets.
import { describe, expect, it } from "vitest";
import { FS_LABEL_CAP, storageHealthMetrics, VOLUME_SERIES_CAP } from "../src/storage-health/view-metrics.js";
import { Metrics } from "../src/observability/metrics.js";
import { TestHealthView } from "./helpers/test-health-view.js";

/** The gateway's registry with the storage health gauges, as main.ts registers them in every mode. */
function gatewayMetrics(): Metrics {
  const m = new Metrics({ processMetrics: false });
  storageHealthMetrics(m.registry);
  return m;
}

async function scrape(m: Metrics): Promise<string> {
  return m.registry.metrics();
}
const lines = (text: string, name: string) => text.split("\n").filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));

describe("storage health metrics", () => {
  it("before a view is attached: counts zero, no entries", async () => {
    const text = await scrape(gatewayMetrics());
    expect(lines(text, "probegate_storage_health")).toEqual([]);
    expect(lines(text, "probegate_volume_health").sort()).toEqual(
      ["DATA_LOSS", "DEGRADED", "HEALTHY", "INACCESSIBLE", "UNKNOWN"].map((s) => `probegate_volume_health{status="${s}"} 0`),
    );
    expect(text).toMatch(/^# TYPE probegate_storage_health gauge$/m);
  });

  it("one series per storage entry while it exists; gone at the next scrape once cleared", async () => {
    const m = gatewayMetrics();
    const view = new TestHealthView();
    storageHealthMetrics(m.registry).attach(view);
    view.setStorage([
      { status: "STORAGE_UNREACHABLE", reason: "MdtUnreachable", fs: "lustrefs" },
      { status: "STORAGE_DEGRADED", reason: "LnetNiDegraded", fs: undefined },
    ]);
    expect(lines(await scrape(m), "probegate_storage_health").sort()).toEqual([
      'probegate_storage_health{status="STORAGE_DEGRADED",reason="LnetNiDegraded",fs=""} 1',
      'probegate_storage_health{status="STORAGE_UNREACHABLE",reason="MdtUnreachable",fs="lustrefs"} 1',
    ]);
    view.setStorage([]);
    expect(lines(await scrape(m), "probegate_storage_health")).toEqual([]);
  });

  it("file system names are capped; volumes counted by status; per-volume series only for adverse ones, capped", async () => {
    const m = gatewayMetrics();
    const view = new TestHealthView();
    storageHealthMetrics(m.registry).attach(view);
    view.setStorage(Array.from({ length: FS_LABEL_CAP + 10 }, (_, i) => ({ status: "STORAGE_DEGRADED" as const, reason: `R${i}`, fs: `fs${i}` })));
    const fsValues = new Set(lines(await scrape(m), "probegate_storage_health").map((l) => /fs="([^"]*)"/.exec(l)![1]));
    expect(fsValues.size).toBe(FS_LABEL_CAP + 1);
    expect(fsValues.has("_other")).toBe(true);

    view.setVolume({ volumeId: "healthy", origin: "mounts" }, []);
    view.setVolume({ volumeId: "new", origin: "request" }, undefined);
    for (let i = 0; i < VOLUME_SERIES_CAP + 5; i++) view.setVolume({ volumeId: `bad-${i}`, origin: "publish" }, [{ status: "INACCESSIBLE", reason: "MountHung" }]);
    view.setVolume({ volumeId: "both", origin: "publish" }, [{ status: "INACCESSIBLE", reason: "MdtUnreachable" }, { status: "DEGRADED", reason: "ReadOnly" }]);
    const text = await scrape(m);
    expect(lines(text, "probegate_volume_health").sort()).toEqual([
      'probegate_volume_health{status="DATA_LOSS"} 0',
      'probegate_volume_health{status="DEGRADED"} 1',
      'probegate_volume_health{status="HEALTHY"} 1',
      `probegate_volume_health{status="INACCESSIBLE"} ${VOLUME_SERIES_CAP + 6}`,
      'probegate_volume_health{status="UNKNOWN"} 1',
    ]);
    expect(lines(text, "probegate_volume_health_entries")).toHaveLength(VOLUME_SERIES_CAP);
    expect(text).toContain('probegate_volume_health_entries{volume="bad-0",status="INACCESSIBLE",reason="MountHung"} 1');
    expect(lines(text, "probegate_volume_health_entries_dropped")).toEqual(["probegate_volume_health_entries_dropped 7"]);
  });
});
