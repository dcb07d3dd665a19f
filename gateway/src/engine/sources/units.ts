// Human-written durations and sizes from the --sources file. Bare numbers are
// refused on purpose: "timeout: 3" could mean seconds or milliseconds, and
// guessing wrong turns a 3 s timeout into a 3 ms one.

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * "500ms", "3s", "1.5s", "2m", "1m30s" → milliseconds (integer), or null: the
 * Go-style durations Kubernetes manifests use, for flags and the --sources file.
 */
export function parseDuration(text: string): number | null {
  const s = text.trim();
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(s)) return null;
  let total = 0;
  for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  const ms = Math.round(total);
  return Number.isSafeInteger(ms) ? ms : null;
}

const SIZE = /^([0-9]+)(B|KiB|MiB)?$/;
const SIZE_FACTOR: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 * 1024 };

/** 4096, "4096", "64KiB", "1MiB" → bytes, or null. */
export function parseSize(value: string | number): number | null {
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? value : null;
  const m = SIZE.exec(value.trim());
  if (!m) return null;
  const bytes = Number(m[1]) * SIZE_FACTOR[m[2] ?? "B"]!;
  return Number.isSafeInteger(bytes) ? bytes : null;
}
