import { judge } from "../engine/readiness-verdict.js";
import { cannotTell, type Condition, type ReadinessSnapshot, type ProbeKind } from "../engine/readiness.js";
import type { HealthEntry, StorageHealthView } from "../storage-health/view.js";
import { oneLine } from "../support/one-line.js";

/** A verbose line's bound: a check's line is its name, reason and a message cut at 1024 characters. */
const LINE_MAX = 4096;

export interface ReadyzView {
  ok: boolean;
  lines: string[];
}

/**
 * The verdict of one health endpoint for one request, computed from the
 * snapshot minus the checks the caller excluded (like the Kubernetes API
 * server's ?exclude=), with one verbose line per check.
 */
export function readyzView(s: ReadinessSnapshot, probe: ProbeKind, exclude: ReadonlySet<string>): ReadyzView {
  const lines: string[] = [];
  if (probe === "readiness" && s.phase === "initializing") lines.push("[-]initializing: first evaluation has not completed");
  for (const c of s.conditions) {
    if (c.probe !== probe) continue;
    if (exclude.has(c.name)) lines.push(`[+]${c.name} excluded: ${c.status === "fail" ? "failed" : "ok"}`);
    else lines.push(conditionLine(c));
  }
  if (probe === "readiness") {
    // An unhealthy node is not ready either: Probe answers with an error then.
    for (const c of s.conditions) {
      if (c.probe === "liveness" && failsLiveness(c) && !exclude.has(c.name)) {
        lines.push(`[-]${c.name} (liveness) failed: ${c.reason}: ${c.message}`);
      } else if (cannotTell(c) && !exclude.has(c.name)) {
        // Not a reason to restart, but nothing vouches for the node either (judge()).
        lines.push(`[-]${c.name} (liveness) cannot run: ${c.reason}: ${c.message}`);
      }
    }
  }
  for (const r of s.refusals) lines.push(`[!]${r.dir ? `${r.dir}/` : ""}${r.file} refused: ${r.reason}: ${r.message}`);
  for (const o of s.overrides ?? []) lines.push(`[+]plugin ${o.name}: ${o.file} overrides ${o.replaced}`);
  // The engine already made every message one line; this pass keeps it so
  // whatever reaches a snapshot (a file name, a --sources problem).
  return { ok: verdict(s, probe, exclude), lines: lines.map((l) => oneLine(l, LINE_MAX)) };
}

/** A failure that makes the node unhealthy: judged by the plugin, not a fault of it (see judge()). */
function failsLiveness(c: Condition): boolean {
  return c.severity === "required" && c.status === "fail" && !c.fault;
}

/**
 * The endpoint's verdict: the snapshot's own (what Probe and gRPC health say)
 * unless the caller excluded checks; then the engine's rules run again on the rest.
 */
function verdict(s: ReadinessSnapshot, probe: ProbeKind, exclude: ReadonlySet<string>): boolean {
  const v = exclude.size === 0 ? s : judge(s.conditions.filter((c) => !exclude.has(c.name)), s.phase !== "initializing");
  return probe === "readiness" ? v.ready && v.live : v.live;
}

function conditionLine(c: Condition): string {
  if (c.status === "pass") return `[+]${c.name} ok`;
  const label = c.status === "warn" ? "warn" : c.severity === "advisory" ? "failed (advisory)" : "failed";
  const mark = c.status === "fail" && c.severity === "required" ? "-" : "+";
  return `[${mark}]${c.name} ${label}: ${c.reason}: ${c.message}`;
}

/** Parses ?exclude=a&exclude=b,c into a set. */
export function excludeSet(values: readonly string[]): Set<string> {
  const set = new Set<string>();
  for (const v of values) for (const name of v.split(",")) if (name.trim()) set.add(name.trim());
  return set;
}

/** Volumes listed one per line in ?verbose; the rest are counted. Metrics carry every one. */
export const VERBOSE_MAX_VOLUMES = 50;

function entryText(e: HealthEntry<string>): string {
  return oneLine(`${e.status} ${e.reason} (${e.check}, since ${e.since}): ${e.message}`);
}

/**
 * Storage and volume health for ?verbose. They never change the endpoint's
 * verdict (storage health is not readiness), so adverse entries are marked
 * [!] like the other notes, not [-]. Only the view's memory is read.
 */
export function storageHealthLines(view: StorageHealthView | undefined, maxVolumes = VERBOSE_MAX_VOLUMES): string[] {
  if (!view) return [];
  const lines: string[] = [];
  if (view.hasStorageChecks()) {
    const storage = view.storage();
    if (storage.length === 0) lines.push("[+]storage health: no adverse condition known");
    for (const e of storage) lines.push(`[!]storage health: ${entryText(e)}`);
  }
  if (view.hasVolumeChecks()) {
    const volumes = view.volumes();
    let shown = 0;
    for (const { ref, entries } of volumes) {
      if (shown === maxVolumes) break;
      shown++;
      const id = oneLine(ref.volumeId, 256);
      if (entries === undefined) lines.push(`[+]volume ${id}: not evaluated yet`);
      else if (entries.length === 0) lines.push(`[+]volume ${id}: no adverse condition known`);
      else for (const e of entries) lines.push(`[!]volume ${id}: ${entryText(e)}`);
    }
    if (volumes.length > shown) lines.push(`[+]${volumes.length - shown} more volumes not listed (probegate lists ${maxVolumes})`);
  }
  return lines;
}

/** The same for the JSON form: entries as the view holds them, the volumes bounded alike. */
export function storageHealthJson(view: StorageHealthView, maxVolumes = VERBOSE_MAX_VOLUMES) {
  const volumes = view.hasVolumeChecks() ? view.volumes() : [];
  return {
    storageChecks: view.hasStorageChecks(),
    volumeChecks: view.hasVolumeChecks(),
    storage: view.hasStorageChecks() ? view.storage() : [],
    volumes: volumes.slice(0, maxVolumes).map(({ ref, entries }) => ({ volumeId: ref.volumeId, evaluated: entries !== undefined, entries: entries ?? [] })),
    volumesNotListed: Math.max(0, volumes.length - maxVolumes),
  };
}
