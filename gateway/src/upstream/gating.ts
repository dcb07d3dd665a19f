import { failing, type ReadinessSnapshot } from "../engine/readiness.js";
import { GATED_PATHS, type GateName } from "./methods.js";

/** The request paths of the gated calls (--gate is parsed in cli/config.ts). */
export function gatedPaths(gates: ReadonlySet<GateName>): Set<string> {
  return new Set([...gates].map((g) => GATED_PATHS[g]));
}

/**
 * Why a gated call must be refused now, or undefined to let it through.
 * Mounting on a node whose Lustre client is broken fails slowly and leaves
 * half-set-up state behind; refusing early with UNAVAILABLE makes kubelet
 * retry later instead.
 */
export function notReadyReason(s: ReadinessSnapshot): string | undefined {
  if (s.ready && s.live) return undefined;
  if (s.phase === "initializing") return "node not ready: initializing (first checks have not completed)";
  const list = [...failing(s, "liveness"), ...failing(s, "readiness")]
    .map((c) => `${c.name}: ${c.reason}: ${c.message}`)
    .join("; ");
  return `node not ready: ${list || "readiness checks failing"}`;
}
