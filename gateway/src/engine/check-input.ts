import type { SourceResult } from "./sources/index.js";

/** The ABI input document (plugins/ABI.md): only the sources the plugin lists, ages instead of timestamps. */
export function buildCheckInput(
  mode: "node" | "controller",
  sources: ReadonlyArray<readonly [string, SourceResult]>,
  facts: Readonly<Record<string, string>>,
  nowMs: number,
  /** The plugin's validated configuration; absent for plugins that declare none. */
  config?: Readonly<Record<string, unknown>>,
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
  return JSON.stringify(config === undefined ? { mode, sources: out, facts } : { mode, sources: out, facts, config });
}
