import type { CheckOutcome, PluginRuntime } from "../runtime/runtime.js";
import type { LoadedPlugin, Mode } from "../runtime/types.js";
import { buildCheckInput, type RoundInfo } from "./check-input.js";
import type { SourceCatalog, SourceResult } from "../engine/sources/index.js";

/**
 * What running a plugin takes: the runtime that holds it, the catalog its
 * sources come from, the gateway's mode. Running is split in two halves
 * (readPluginSources, then runPluginOn unless a stable verdict stands) so
 * the scheduled rounds and the volume checks can tell from the sources read
 * whether check() needs to run at all; both call the same halves, so a
 * plugin sees the same input either way.
 */
export interface PluginRunDeps {
  runtime: Pick<PluginRuntime, "runCheck">;
  catalog: Pick<SourceCatalog, "read">;
  mode: Mode;
}

/** The names of the sources whose program could not be started (missing tool). */
export function missingTools(sources: ReadonlyArray<readonly [string, SourceResult]>): string[] {
  return sources.filter(([, r]) => toolMissing(r)).map(([name]) => name);
}

/** The sources a plugin names, read with the facts known so far, in its order. Never rejects. */
export function readPluginSources(
  deps: Pick<PluginRunDeps, "catalog">,
  p: LoadedPlugin,
  facts: Readonly<Record<string, string>>,
): Promise<Array<[string, SourceResult]>> {
  return Promise.all(p.manifest.sources.map(async (name) => [name, await deps.catalog.read(name, facts)] as [string, SourceResult]));
}

/**
 * The plugin's check() on sources already read (readPluginSources): the
 * engine and the volume checks read first to tell whether a stable verdict
 * still stands.
 */
export function runPluginOn(
  deps: Pick<PluginRunDeps, "runtime" | "mode">,
  p: LoadedPlugin,
  sources: ReadonlyArray<readonly [string, SourceResult]>,
  facts: Readonly<Record<string, string>>,
  round?: Readonly<RoundInfo>,
): Promise<CheckOutcome> {
  return deps.runtime.runCheck(p, (config) => buildCheckInput(deps.mode, sources, facts, Date.now(), config, round));
}

/**
 * The source's program could not be run at all: not on PATH, not executable,
 * or nsenter/chroot exiting 126/127 because the program is missing behind the
 * prefix (path-lookup.ts words the first two).
 */
function toolMissing(r: SourceResult): boolean {
  if (r.ok) return false;
  return /^ENOENT: \S+ not found (on PATH|or not executable)/.test(r.error ?? "") || r.exitCode === 126 || r.exitCode === 127;
}
