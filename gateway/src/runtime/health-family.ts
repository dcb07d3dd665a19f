// Which CSI health statuses a plugin may report follows from its probe kind:
// a storage check speaks for the node's backend, a volume check for one
// volume. A status from the other family would be sent on the wrong RPC, so
// it makes the whole call bad output (counted towards quarantine like any),
// never a silently dropped entry.

import { STORAGE_HEALTH_STATUSES, VOLUME_HEALTH_STATUSES, type CheckOutput, type ProbeKind } from "./types.js";

const FAMILY: Partial<Record<ProbeKind, readonly string[]>> = {
  storage: STORAGE_HEALTH_STATUSES,
  volume: VOLUME_HEALTH_STATUSES,
};

/** Why `output` is bad for a plugin of kind `probe`, or "" when it is fine. Readiness and liveness output is never refused for it (their health is ignored). */
export function healthFamilyProblem(probe: ProbeKind, output: CheckOutput): string {
  const allowed = FAMILY[probe];
  if (!allowed || !output.health) return "";
  const i = output.health.findIndex((e) => !allowed.includes(e.status));
  if (i < 0) return "";
  return `invalid check output: health.${i}.status: ${output.health[i]!.status} is not a ${probe} status (expected one of ${allowed.join(", ")})`;
}
