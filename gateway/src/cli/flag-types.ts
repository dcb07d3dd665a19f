// The value types a flag can have: each parser turns what was typed into the
// value Config holds, or throws a UsageError naming the flag.
import { parseDuration } from "../engine/sources/index.js";
import { parseEndpoint, type Endpoint } from "../transport/endpoint.js";

/** A bad command line: printed as one line, exit code 2. */
export class UsageError extends Error {}

/** Parses a flag's text (given, from its env variable, or its default) into its value. */
export type FlagParser<T> = (raw: string, flag: string) => T;

export const text: FlagParser<string> = (raw) => raw;

export const nonEmpty: FlagParser<string> = (raw, flag) => {
  if (raw === "") throw new UsageError(`--${flag}: must not be empty`);
  return raw;
};

export const duration: FlagParser<number> = (raw, flag) => {
  const ms = parseDuration(raw);
  if (ms === null) throw new UsageError(`--${flag}: invalid duration "${raw}" (use e.g. 500ms, 5s, 1m)`);
  return ms;
};

/** Node timers hold at most 2^31-1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

/** A duration at least min long (and no longer than a timer can wait). */
export function durationAtLeast(min: number, why = ""): FlagParser<number> {
  return (raw, flag) => {
    const ms = duration(raw, flag);
    if (ms < min || ms <= 0) {
      throw new UsageError(`--${flag}: must be at least ${min > 0 ? formatDuration(min) : "1ms"}${why ? ` (${why})` : ""}, got "${raw}"`);
    }
    if (ms > MAX_TIMER_MS) throw new UsageError(`--${flag}: must be at most 24 days`);
    return ms;
  };
}

export function wholeNumber(max: number): FlagParser<number> {
  return (raw, flag) => {
    if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
      throw new UsageError(`--${flag}: expected a whole number from 1 to ${max}, got "${raw}"`);
    }
    return Number(raw);
  };
}

/** An absolute path (as the mount table shows it). */
export const absolutePath: FlagParser<string> = (raw, flag) => {
  if (!raw.startsWith("/") || raw.includes("\0")) throw new UsageError(`--${flag}: expected an absolute path, got "${raw}"`);
  return raw;
};

export function oneOf<const T extends string>(choices: readonly T[]): FlagParser<T> {
  return (raw, flag) => {
    const list = choices.length === 2 ? choices.join(" or ") : choices.join(", ");
    if (!choices.includes(raw as T)) throw new UsageError(`--${flag}: expected ${list}, got "${raw}"`);
    return raw as T;
  };
}

export const endpoint: FlagParser<Endpoint> = (raw, flag) => {
  // A socket path without its scheme is the commonest slip (it is how kubelet's directories are written).
  if (raw.startsWith("/")) throw new UsageError(`--${flag}: "${raw}" has no scheme; a unix socket is written unix://${raw}`);
  try {
    return parseEndpoint(raw);
  } catch (err) {
    throw new UsageError(`--${flag}: ${(err as Error).message}`);
  }
};

/** 5000 → "5s", 120000 → "2m", 500 → "500ms": a default as one would type it. */
export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
