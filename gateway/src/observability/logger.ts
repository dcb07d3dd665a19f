import pino, { type Logger, type LevelWithSilent } from "pino";

export type { Logger };

export const LOG_LEVELS: readonly LevelWithSilent[] = [
  "trace",
  "debug",
  "info",
  "warn",
  "error",
  "fatal",
  "silent",
];

/**
 * Structured JSON to stderr, so stdout stays free for CLI output.
 * Redaction is a second line of defence: secret-bearing CSI fields are
 * stripped before anything is logged (see gateway mode), never logged whole.
 */
export function createLogger(level: LevelWithSilent = "info"): Logger {
  return pino(
    {
      level,
      base: { name: "probegate" },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: ["*.secrets", "*.*.secrets", "secrets"], censor: "[REDACTED]" },
    },
    pino.destination({ fd: 2, sync: false }),
  );
}
