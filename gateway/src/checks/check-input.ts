import type { SourceResult } from "../engine/sources/index.js";

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
  // Keyed like an object literal: a repeated name keeps its first place and its last value.
  const byName = new Map<string, SourceResult>();
  for (const [name, r] of sources) byName.set(name, r);
  const parts: string[] = [];
  for (const [name, r] of byName) {
    parts.push(`${JSON.stringify(name)}:${encodedResult(r)},"ageMs":${Math.max(0, Math.round(nowMs - r.fetchedAtMs))}}`);
  }
  let doc = `{"mode":${JSON.stringify(mode)},"sources":{${parts.join(",")}},"facts":${JSON.stringify(facts)}`;
  if (config !== undefined) doc += `,"config":${JSON.stringify(config)}`;
  if (round !== undefined) {
    doc += `,"round":{"epoch":${Math.max(0, Math.trunc(round.epoch))},"previousEpoch":${Math.max(0, Math.trunc(round.previousEpoch))}}`;
  }
  return `${doc}}`;
}

/**
 * A source result's JSON without its closing brace (ageMs follows). Results
 * are frozen and shared for their TTL, so one lctl output read by a storage
 * check and by the volume check of every volume in a round is escaped once.
 * The encodings are dropped all at once ENCODED_KEEP_MS after the first of a
 * batch: a round's calls come in one burst, and an encoding kept for as long
 * as its result lives (a kept verdict keeps its sources, the command cache
 * its last result) held an escaped copy of a 64-mount listing, 590 KiB,
 * resident between rounds.
 */
const ENCODED_KEEP_MS = 2_000;
let encoded = new Map<SourceResult, string>();
let dropEncoded: NodeJS.Timeout | null = null;
function encodedResult(r: SourceResult): string {
  let text = encoded.get(r);
  if (text === undefined) {
    text = JSON.stringify({ ok: r.ok, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, error: r.error, truncated: r.truncated }).slice(0, -1);
    if (Object.isFrozen(r)) {
      encoded.set(r, text);
      if (dropEncoded === null) {
        dropEncoded = setTimeout(() => {
          encoded = new Map();
          dropEncoded = null;
        }, ENCODED_KEEP_MS);
        dropEncoded.unref();
      }
    }
  }
  return text;
}
