// gRPC's status names by number, as metrics, logs and health messages show
// them (gRPC's own spelling: CANCELLED). Here, below every layer, because the
// transport and the storage-health room (a stuck operation's last attempt)
// both name statuses and the latter must not import the former.

/** Canonical names by number. */
const STATUS_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

/** The name of a status gRPC defines, or undefined (out of range, NaN). */
export function knownStatusName(code: number): string | undefined {
  return STATUS_NAMES[code];
}

export function statusName(code: number): string {
  return knownStatusName(code) ?? `CODE_${code}`;
}
