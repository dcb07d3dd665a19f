// log(): a line for the plugin's author, not for its verdict. It reaches the
// `plugin test` output (and a failing fixture's report) and, at
// `--log-level debug`, the gateway log, rate-limited per plugin. The host
// keeps the first 8 lines of a call and 256 characters of each.

/** Writes one trace line through the ABI's `env.trace` import. */
export function log(message: string): void {
  trace(message);
}

/** A line with up to five numbers appended, e.g. `logValues("NIs seen", 2, nis.length)`. */
export function logValues(message: string, n: i32, a0: f64 = 0, a1: f64 = 0, a2: f64 = 0, a3: f64 = 0, a4: f64 = 0): void {
  trace(message, n, a0, a1, a2, a3, a4);
}
