// Quarantine of plugins that keep faulting, and its recovery. Consecutive
// faults are counted per key (the runtime's: file, content, configuration).
// The Nth is reported as PluginQuarantined and the plugin is not called; it is
// retried after a backoff that doubles per failed retry up to a cap, because a
// fault is often transient (an odd lnetctl output during reconfiguration, a
// starved node) and nothing should stay broken for good. One good verdict
// ends the quarantine; a new key (a changed file or configuration) ends it at
// once. Logged once per transition, never per retry.

import type { Logger } from "../observability/logger.js";
import type { CheckOutcome } from "./check-call.js";
import { DEFAULTS, type LoadedPlugin } from "./types.js";

export interface QuarantineOptions {
  after?: number;
  backoffMs?: number;
  backoffMaxMs?: number;
  logger?: Logger;
  onQuarantined?: (p: LoadedPlugin, message: string) => void;
  onRetry?: (p: LoadedPlugin) => void;
  onCount?: (count: number) => void;
}

interface Health {
  faults: number;
  quarantined: boolean;
  lastFault: string;
  /** Failed retries since quarantine began, and when the next one may run (Date.now()). */
  retries: number;
  retryAt: number;
  name: string;
}

export class Quarantine {
  private readonly health = new Map<string, Health>();
  private count = 0;

  constructor(private readonly opts: QuarantineOptions = {}) {}

  isQuarantined(key: string): boolean {
    return this.health.get(key)?.quarantined ?? false;
  }

  /** Calls `call` unless `key` is quarantined and not yet due for a retry; never rejects unless `call` does. */
  async run(key: string, p: LoadedPlugin, call: () => Promise<CheckOutcome>): Promise<CheckOutcome> {
    let h = this.health.get(key);
    if (!h) {
      h = { faults: 0, quarantined: false, lastFault: "", retries: 0, retryAt: 0, name: p.manifest.name };
      this.health.set(key, h);
    }
    if (h.quarantined && Date.now() < h.retryAt) {
      return { kind: "fault", reason: "PluginQuarantined", message: message(h, Date.now()), durationMs: 0 };
    }
    const retrying = h.quarantined;
    if (retrying) this.opts.onRetry?.(p);
    const outcome = await call();
    if (outcome.kind === "verdict") {
      if (h.quarantined) {
        this.opts.logger?.info({ plugin: p.manifest.name, file: p.file, sha256: p.sha256, retries: h.retries + 1 }, "plugin quarantine ended: a retry succeeded");
        this.set(h, false);
      }
      h.faults = 0;
      h.retries = 0;
      return outcome;
    }
    if (outcome.reason === "PluginUnloaded") return outcome;
    h.faults++;
    h.lastFault = `${outcome.reason}: ${outcome.message}`;
    if (retrying) {
      // A failed retry only pushes the next one out: no log line.
      h.retries++;
      h.retryAt = Date.now() + this.backoff(h.retries);
      return { kind: "fault", reason: "PluginQuarantined", message: message(h, Date.now()), durationMs: outcome.durationMs };
    }
    if (h.faults >= (this.opts.after ?? DEFAULTS.quarantineAfter)) {
      h.retries = 0;
      h.retryAt = Date.now() + this.backoff(0);
      this.set(h, true);
      const text = message(h, Date.now());
      this.opts.logger?.warn({ plugin: p.manifest.name, file: p.file, sha256: p.sha256, lastFault: h.lastFault, retryInMs: h.retryAt - Date.now() }, "plugin quarantined");
      this.opts.onQuarantined?.(p, text);
      return { kind: "fault", reason: "PluginQuarantined", message: text, durationMs: outcome.durationMs };
    }
    return outcome;
  }

  /** Forgets every key not in `live`; a quarantine among them ends (its file or configuration changed, or it is gone). */
  retain(live: ReadonlySet<string>): void {
    for (const [k, h] of this.health) {
      if (live.has(k)) continue;
      if (h.quarantined) {
        this.opts.logger?.info({ plugin: h.name }, "plugin quarantine ended: its file or configuration changed");
        this.set(h, false);
      }
      this.health.delete(k);
    }
  }

  private backoff(failedRetries: number): number {
    const base = this.opts.backoffMs ?? DEFAULTS.quarantineBackoffMs;
    const max = Math.max(base, this.opts.backoffMaxMs ?? DEFAULTS.quarantineBackoffMaxMs);
    return Math.min(base * 2 ** Math.min(failedRetries, 30), max);
  }

  private set(h: Health, on: boolean): void {
    if (h.quarantined === on) return;
    h.quarantined = on;
    this.count += on ? 1 : -1;
    this.opts.onCount?.(this.count);
  }
}

function message(h: Health, now: number): string {
  const inS = Math.max(0, Math.ceil((h.retryAt - now) / 1000));
  const at = new Date(h.retryAt).toISOString();
  return `quarantined after ${h.faults} consecutive faults (last: ${h.lastFault}); next retry in ${inS}s (at ${at}), or at once when the plugin file changes`;
}
