// Human-written durations and sizes from the --sources file. Bare numbers are
// refused on purpose: "timeout: 3" could mean seconds or milliseconds, and
// guessing wrong turns a 3 s timeout into a 3 ms one.

const DURATION = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m)$/;
const DURATION_FACTOR: Record<string, number> = { ms: 1, s: 1000, m: 60_000 };

/** "500ms", "3s", "1.5s", "2m" → milliseconds (integer), or null. */
export function parseDuration(text: string): number | null {
  const m = DURATION.exec(text.trim());
  if (!m) return null;
  const ms = Math.round(Number(m[1]) * DURATION_FACTOR[m[2]!]!);
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
