import { Code } from "@connectrpc/connect";
import { failing, type ReadinessProvider } from "../engine/readiness.js";

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

/**
 * What the ready field follows (--probe-ready). A failing liveness check is an
 * error in every policy; they differ only in how readiness reaches Probe:
 * - readiness: the readiness checks, always;
 * - startup: false until the readiness checks have passed once, then true;
 * - liveness: never (always true): readiness shows in /readyz and gating instead.
 *   Gateway mode's default, `--probe-ready=upstream`, is this combined with the
 *   driver's own Probe: the livenessprobe sidecar turns ready:false into a failed
 *   liveness check, and a restart cannot bring LNet back.
 */
export type LocalProbePolicy = "readiness" | "startup" | "liveness";

/** Probe from local checks: liveness failures are errors, the ready field follows the policy. */
export class LocalProbeSource implements ProbeSource {
  private startedOnce = false;

  constructor(
    private readonly readiness: ReadinessProvider,
    private readonly policy: LocalProbePolicy = "readiness",
  ) {
    if (policy === "startup") {
      // Latched from every published snapshot, not only those a Probe happens to see.
      const unsubscribe = readiness.subscribe((s) => {
        if (s.ready) {
          this.startedOnce = true;
          unsubscribe();
        }
      });
    }
  }

  answer(): ProbeAnswer {
    const s = this.readiness.snapshot();
    if (!s.live) {
      const list = failing(s, "liveness")
        .map((c) => `${c.name}: ${c.reason}: ${c.message}`)
        .join("; ");
      return { kind: "error", code: Code.FailedPrecondition, message: `unhealthy: ${list || "liveness check failing"}` };
    }
    switch (this.policy) {
      case "readiness":
        return { kind: "ok", ready: s.ready };
      case "startup":
        if (s.ready) this.startedOnce = true;
        return { kind: "ok", ready: this.startedOnce };
      case "liveness":
        return { kind: "ok", ready: true };
    }
  }
}
