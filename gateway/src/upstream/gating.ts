import { failing, type HealthSnapshot } from "../engine/state.js";
import { GATED_PATHS, type GateName } from "./methods.js";

/** Parses `--gate node-stage,node-publish` (empty string or "none" = no gating). */
export function parseGates(raw: string): Set<GateName> {
  const out = new Set<GateName>();
  for (const part of raw.split(",").map((s) => s.trim()).filter(Boolean)) {
    if (part === "none") continue;
    if (part !== "node-stage" && part !== "node-publish") {
      throw new Error(`--gate: unknown gate ${JSON.stringify(part)} (known: node-stage, node-publish, none)`);
    }
    out.add(part);
  }
  return out;
}

export function gatedPaths(gates: ReadonlySet<GateName>): Set<string> {
  return new Set([...gates].map((g) => GATED_PATHS[g]));
}

/**
 * Why a gated call must be refused now, or undefined to let it through.
 * Mounting on a node whose Lustre client is broken fails slowly and leaves
 * half-set-up state behind; refusing early with UNAVAILABLE makes kubelet
 * retry later instead.
 */
export function notReadyReason(s: HealthSnapshot): string | undefined {
  if (s.ready && s.live) return undefined;
  if (s.phase === "initializing") return "node not ready: initializing (first checks have not completed)";
  const list = [...failing(s, "liveness"), ...failing(s, "readiness")]
    .map((c) => `${c.name}: ${c.reason}: ${c.message}`)
    .join("; ");
  return `node not ready: ${list || "readiness checks failing"}`;
}
