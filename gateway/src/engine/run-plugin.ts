import type { CheckOutcome, PluginRuntime } from "../runtime/runtime.js";
import type { LoadedPlugin, Mode } from "../runtime/types.js";
import { buildCheckInput, type RoundInfo } from "./check-input.js";
import type { SourceCatalog, SourceResult } from "./sources/index.js";

/** What running a plugin takes: the runtime that holds it, the catalog its sources come from, the gateway's mode. */
export interface PluginRunDeps {
  runtime: Pick<PluginRuntime, "runCheck">;
  catalog: Pick<SourceCatalog, "read">;
  mode: Mode;
}

/**
 * Runs one plugin once: reads the sources it names with the facts known so
 * far, then its check() with its configuration. The scheduled rounds and the
 * on-demand volume checks both go through here, so a plugin sees the same
 * input either way. Never rejects (neither read() nor runCheck() does).
 */
export async function runPlugin(
  deps: PluginRunDeps,
  p: LoadedPlugin,
  facts: Readonly<Record<string, string>>,
  round?: Readonly<RoundInfo>,
): Promise<CheckOutcome> {
  const sources = await Promise.all(
    p.manifest.sources.map(async (name) => [name, await deps.catalog.read(name, facts)] as [string, SourceResult]),
  );
  return deps.runtime.runCheck(p, (config) => buildCheckInput(deps.mode, sources, facts, Date.now(), config, round));
}
