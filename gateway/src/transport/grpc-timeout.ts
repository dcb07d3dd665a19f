// grpc-timeout carries a relative deadline: at most 8 ASCII digits and a unit
// (gRPC over HTTP/2 protocol). Hours down to nanoseconds.

const UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1000, m: 1, u: 1e-3, n: 1e-6 };

/** Milliseconds, or undefined when the header is absent or malformed. */
export function parseGrpcTimeout(value: string | string[] | undefined): number | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (!m) return undefined;
  return Number(m[1]) * UNIT_MS[m[2]];
}

/**
 * Formats milliseconds without ever rounding up, so the upstream's deadline is
 * never later than the caller's: the finest unit that fits in 8 digits.
 */
export function formatGrpcTimeout(ms: number): string {
  const us = Math.max(0, Math.floor(ms * 1000));
  if (us < 1e8) return `${us}u`;
  const wholeMs = Math.floor(ms);
  if (wholeMs < 1e8) return `${wholeMs}m`;
  const s = Math.floor(ms / 1000);
  if (s < 1e8) return `${s}S`;
  return `${Math.min(99_999_999, Math.floor(ms / 3_600_000))}H`;
}

/** The longest delay a Node timer can hold (2^31-1 ms, about 24.8 days); longer ones fire at once. */
export const MAX_DEADLINE_MS = 2_147_483_647;

/**
 * Caps a request's deadline headers at MAX_DEADLINE_MS in place. A longer
 * deadline would overflow the timer that enforces it and end the call at once;
 * capped, it ends after 24.8 days, which no caller can tell apart.
 */
export function clampDeadlineHeaders(headers: Record<string, string | string[] | undefined>): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string") {
    const ms = parseGrpcTimeout(grpc);
    if (ms !== undefined && ms > MAX_DEADLINE_MS) headers["grpc-timeout"] = `${Math.floor(MAX_DEADLINE_MS / 1000)}S`;
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_DEADLINE_MS) {
    headers["connect-timeout-ms"] = String(MAX_DEADLINE_MS);
  }
}
