// The health entries of one scope (the node's storage, or one volume) as the
// plugins' latest results make them: cleaned (one line, at most 1024
// characters), de-duplicated by (status, reason), the first kept (the spec's
// rule), each with the time its (status, reason) was first seen without a gap.
// A plugin that faults keeps its last good entries for a few rounds (a
// sandbox hiccup is not news) and then stands for one HealthCheckFailed entry:
// a check that cannot run never reads as "nothing adverse".

import type { CheckOutcome } from "../runtime/runtime.js";
import type { HealthOutputEntry } from "../runtime/types.js";
import { oneLine } from "../support/one-line.js";
import type { HealthEntry } from "./view.js";

export const MESSAGE_MAX = 1024;
/** Rounds a faulted plugin's last good entries are kept before HealthCheckFailed replaces them. */
export const FAULT_GRACE_ROUNDS = 3;
export const HEALTH_CHECK_FAILED = "HealthCheckFailed";


type Unstamped<S extends string> = Omit<HealthEntry<S>, "since">;

interface PluginState<S extends string> {
  /** The entries of the last verdict, while they still stand. */
  good: Array<Unstamped<S>> | undefined;
  /** The HealthCheckFailed entry, once the plugin has faulted past the grace (or before any verdict). */
  failed: Unstamped<S> | undefined;
  faults: number;
}

export interface PluginResult {
  check: string;
  outcome: CheckOutcome;
}

export class ScopeHealth<S extends string> {
  private readonly plugins = new Map<string, PluginState<S>>();
  private readonly since = new Map<string, string>();
  private current: readonly HealthEntry<S>[] = Object.freeze([]);
  private key = "";

  /** `degraded` is the family's status for "cannot tell" (STORAGE_DEGRADED or DEGRADED). */
  constructor(private readonly degraded: S) {}

  entries(): readonly HealthEntry<S>[] {
    return this.current;
  }

  /**
   * Applies one round's results: `results` holds every plugin that ran for
   * this scope; plugins missing from it are gone and their entries with them.
   * Returns whether the entries changed, messages included: the encoded
   * answers are rebuilt on a change, and an answer naming the OST that was
   * down two rounds ago is wrong. (Events and the Node condition look at
   * (status, reason, fs) only, so a message that changes every round, "held
   * for N s", writes nothing to the API.)
   */
  apply(results: readonly PluginResult[], now: Date): boolean {
    const present = new Set(results.map((r) => r.check));
    for (const name of [...this.plugins.keys()]) if (!present.has(name)) this.plugins.delete(name);
    for (const { check, outcome } of results) {
      let st = this.plugins.get(check);
      if (!st) {
        st = { good: undefined, failed: undefined, faults: 0 };
        this.plugins.set(check, st);
      }
      if (outcome.kind === "verdict") {
        st.good = (outcome.output.health ?? []).map((e) => this.clean(e as HealthOutputEntry, check));
        st.failed = undefined;
        st.faults = 0;
        continue;
      }
      st.faults++;
      if (st.good !== undefined && st.faults <= FAULT_GRACE_ROUNDS) continue;
      st.good = undefined;
      st.failed = {
        status: this.degraded,
        reason: HEALTH_CHECK_FAILED,
        message: oneLine(`${check}: the check could not run: ${outcome.reason}: ${outcome.message}`, MESSAGE_MAX),
        check,
      };
    }
    const isoNow = now.toISOString();
    const seen = new Set<string>();
    const out: HealthEntry<S>[] = [];
    // By check name, so which of two equal (status, reason) entries wins does not depend on timing.
    for (const name of [...this.plugins.keys()].sort()) {
      const st = this.plugins.get(name)!;
      const list = st.good ?? (st.failed ? [st.failed] : []);
      for (const e of list) {
        const k = `${e.status}\0${e.reason}`;
        if (seen.has(k)) continue;
        seen.add(k);
        if (!this.since.has(k)) this.since.set(k, isoNow);
        out.push(Object.freeze({ ...e, since: this.since.get(k)! }));
      }
    }
    for (const k of [...this.since.keys()]) if (!seen.has(k)) this.since.delete(k);
    this.current = Object.freeze(out);
    const key = JSON.stringify(out.map((e) => [e.status, e.reason, e.fs ?? "", e.check, e.message]));
    const changed = key !== this.key;
    this.key = key;
    return changed;
  }

  private clean(e: HealthOutputEntry, check: string): Unstamped<S> {
    return {
      status: e.status as string as S,
      reason: e.reason,
      message: oneLine(e.message, MESSAGE_MAX),
      ...(e.fs !== undefined ? { fs: e.fs } : {}),
      check,
    };
  }
}
