import type { SourceResult } from "./sources/index.js";

/** The check input's `round` (plugins/ABI.md): integer epoch seconds; previousEpoch 0 on a plugin's first round. */
export interface RoundInfo {
  epoch: number;
  previousEpoch: number;
}

/** The ABI input document (plugins/ABI.md): only the sources the plugin lists, ages instead of timestamps. */
export function buildCheckInput(
  mode: "node" | "controller",
  sources: ReadonlyArray<readonly [string, SourceResult]>,
  facts: Readonly<Record<string, string>>,
  nowMs: number,
  /** The plugin's validated configuration; absent for plugins that declare none. */
  config?: Readonly<Record<string, unknown>>,
  /** When the round started and when the previous round ran this plugin (epoch seconds; data, not a clock). */
  round?: Readonly<RoundInfo>,
): string {
  const out: Record<string, unknown> = {};
  for (const [name, r] of sources) {
    out[name] = {
      ok: r.ok,
      exitCode: r.exitCode,
      stdout: r.stdout,
      stderr: r.stderr,
      error: r.error,
      truncated: r.truncated,
      ageMs: Math.max(0, Math.round(nowMs - r.fetchedAtMs)),
    };
  }
  const doc: Record<string, unknown> = { mode, sources: out, facts };
  if (config !== undefined) doc.config = config;
  if (round !== undefined) doc.round = { epoch: round.epoch, previousEpoch: round.previousEpoch };
  return JSON.stringify(doc);
}
