import type { SourceResult } from "./sources/index.js";

/**
 * When the evaluation round started and when the previous one that ran this
 * plugin did (0: none), in whole epoch seconds. Data, not a clock: plugins
 * compare it with timestamps in their sources (an import's state_history) and
 * stay deterministic; fixtures set it.
 */
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
  /** Absent: the document has no `round` (plugins then see epoch 0). */
  round?: RoundInfo,
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
  if (round !== undefined) doc.round = { epoch: Math.max(0, Math.trunc(round.epoch)), previousEpoch: Math.max(0, Math.trunc(round.previousEpoch)) };
  return JSON.stringify(doc);
}
