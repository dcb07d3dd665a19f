// `--flag value` pairs of a bench script's command line.

/** The value after `flag` in `args`, or `dflt` when the flag or its value is missing. */
export function flagValue(args: readonly string[], flag: string, dflt: string): string {
  const i = args.indexOf(flag);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : dflt;
}
