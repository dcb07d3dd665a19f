// A check's last verdict, kept while it may be reused. A plugin marks a
// verdict `stable` when it would be the same at any later round given the
// same sources, facts, configuration and module (plugins/ABI.md, "Health"):
// on a healthy node nothing such a check reads changes between rounds, so
// calling it again (building its input, a sandbox round trip, a parse of the
// whole listing) is cost without news. The engine's rounds (once per check)
// and the volume rounds (once per volume and check) both keep them here.
// Only a verdict is kept, never a fault: a check that could not run is tried
// again every round.

import type { CheckOutcome } from "../runtime/runtime.js";
import type { LoadedPlugin } from "../runtime/types.js";
import type { SourceResult } from "../engine/sources/index.js";

/** What one call was computed from, and what it answered. */
export interface StableVerdict {
  /** The module (the runtime keeps the same object while file and bytes are unchanged). */
  plugin: LoadedPlugin;
  config: unknown;
  /** JSON of `config`, for a configuration object replaced by an equal one. */
  configJson: string;
  facts: Readonly<Record<string, string>>;
  sources: ReadonlyArray<readonly [string, SourceResult]>;
  outcome: CheckOutcome;
}

/** The configuration a call would get: `usable` false means the call would fault (ConfigInvalid). */
export interface CallConfig {
  value: unknown;
  usable: boolean;
}

/** Whether the host may keep `outcome` instead of calling again: a verdict marked stable, carrying no events. */
export function isStable(outcome: CheckOutcome): boolean {
  return outcome.kind === "verdict" && outcome.output.stable === true && (outcome.output.events?.length ?? 0) === 0;
}

export function remember(
  plugin: LoadedPlugin,
  config: CallConfig,
  facts: Readonly<Record<string, string>>,
  sources: ReadonlyArray<readonly [string, SourceResult]>,
  outcome: CheckOutcome,
): StableVerdict | undefined {
  if (!isStable(outcome) || !config.usable) return undefined;
  return { plugin, config: config.value, configJson: JSON.stringify(config.value) ?? "", facts, sources, outcome };
}

/** The kept verdict, when every input of the call about to be made is equal to those it came from. */
export function reuse(
  kept: StableVerdict | undefined,
  plugin: LoadedPlugin,
  config: CallConfig,
  facts: Readonly<Record<string, string>>,
  sources: ReadonlyArray<readonly [string, SourceResult]>,
): CheckOutcome | undefined {
  if (!kept || kept.plugin !== plugin || !config.usable) return undefined;
  if (kept.config !== config.value && kept.configJson !== (JSON.stringify(config.value) ?? "")) return undefined;
  if (!sameFacts(kept.facts, facts) || kept.sources.length !== sources.length) return undefined;
  for (let i = 0; i < sources.length; i++) {
    const [name, r] = sources[i]!;
    const [keptName, keptR] = kept.sources[i]!;
    if (name !== keptName || !sameResult(keptR, r)) return undefined;
  }
  return kept.outcome;
}

function sameFacts(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  if (a === b) return true;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** What the plugin sees of a source (its age aside): the catalog shares results for their TTL, so usually the same object. */
function sameResult(a: SourceResult, b: SourceResult): boolean {
  if (a === b) return true;
  return (
    a.ok === b.ok &&
    a.exitCode === b.exitCode &&
    a.truncated === b.truncated &&
    a.error === b.error &&
    a.stderr === b.stderr &&
    ((a.stdoutKey !== undefined && a.stdoutKey === b.stdoutKey) || a.stdout === b.stdout)
  );
}

/**
 * A kept verdict, reused this round, holding this round's sources (equal to
 * its own, reuse() said so): what it held could be a listing the command no
 * longer prints, kept alive by nothing else.
 */
export function keptWith(kept: StableVerdict, sources: ReadonlyArray<readonly [string, SourceResult]>): StableVerdict {
  return kept.sources === sources ? kept : { ...kept, sources };
}
