// Which health statuses a plugin may report depends on its probe kind
// (plugins/ABI.md, "Health"): node-level storage plugins speak for the
// backend, volume plugins for one volume. The engine and `plugin test` share
// this rule, so a fixture fails exactly where a node would.

import { STORAGE_HEALTH_STATUSES, VOLUME_HEALTH_STATUSES, type CheckOutput, type ProbeKind } from "./types.js";

const STORAGE = new Set<string>(STORAGE_HEALTH_STATUSES);
const VOLUME = new Set<string>(VOLUME_HEALTH_STATUSES);

/**
 * The output as the host keeps it: readiness/liveness plugins lose `health`
 * and `events` (ignored, their meaning is unchanged) and keep `stable` (the
 * engine reuses any check's stable verdict, checks/stable-memo.ts); a storage or volume
 * plugin reporting the other family's status gets a problem text (the host
 * treats it as PluginBadOutput).
 */
export function applyHealthFamily(probe: ProbeKind, output: CheckOutput): { ok: true; output: CheckOutput } | { ok: false; message: string } {
  if (probe !== "storage" && probe !== "volume") {
    if (output.health === undefined && output.events === undefined) return { ok: true, output };
    const { health: _h, events: _e, ...rest } = output;
    return { ok: true, output: rest };
  }
  const allowed = probe === "storage" ? STORAGE : VOLUME;
  const bad = (output.health ?? []).find((e) => !allowed.has(e.status));
  if (bad) {
    return {
      ok: false,
      message: `health status ${bad.status} is not allowed for a probe "${probe}" plugin (allowed: ${[...allowed].join(", ")})`,
    };
  }
  return { ok: true, output };
}
