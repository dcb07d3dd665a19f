// The node reporter's failure log, shared by the watch and the reconcile
// loop: each distinct failure (step and code) is logged once, not once per
// retry, and the first success after failures says so.
import type { Logger } from "../observability/logger.js";
import type { KubeError } from "./client/api.js";

export class FailureLog {
  private readonly failures = new Map<string, number>();

  constructor(private readonly log: Logger) {}

  succeeded(step: string): void {
    const n = this.failures.get(step);
    if (n !== undefined) {
      this.failures.delete(step);
      this.log.info({ step, failures: n }, "Kubernetes API requests succeed again");
    }
    for (const k of [...this.failures.keys()]) if (k.startsWith(`${step}\u0000`)) this.failures.delete(k);
  }

  failed(step: string, e: KubeError): void {
    const key = `${step}\u0000${e.key}`;
    const seen = this.failures.get(key);
    if (seen === undefined) this.log.warn({ step, status: e.status, error: e.message }, "Kubernetes API request failed; retrying");
    this.failures.set(key, (seen ?? 0) + 1);
    this.failures.set(step, (this.failures.get(step) ?? 0) + 1);
  }
}
