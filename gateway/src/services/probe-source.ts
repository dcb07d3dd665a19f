import { Code } from "@connectrpc/connect";
import { failing, type ReadinessProvider } from "../engine/state.js";

/**
 * What Probe answers. CSI: an error means unhealthy (restart may help),
 * ready:false means healthy but initializing, ready:true means ready.
 */
export type ProbeAnswer =
  | { kind: "ok"; ready: boolean }
  | { kind: "error"; code: Code; message: string };

/**
 * Probe's source of truth. Synchronous answers are the norm (they come from
 * memory); gateway mode may return a promise while it asks the upstream driver.
 */
export interface ProbeSource {
  answer(): ProbeAnswer | Promise<ProbeAnswer>;
}

/** Probe from local checks only: liveness failures are errors, readiness is the ready field. */
export class LocalProbeSource implements ProbeSource {
  constructor(private readonly readiness: ReadinessProvider) {}

  answer(): ProbeAnswer {
    const s = this.readiness.snapshot();
    if (!s.live) {
      const list = failing(s, "liveness")
        .map((c) => `${c.name}: ${c.reason}: ${c.message}`)
        .join("; ");
      return { kind: "error", code: Code.FailedPrecondition, message: `unhealthy: ${list || "liveness check failing"}` };
    }
    return { kind: "ok", ready: s.ready };
  }
}
