/** How much of a client-supplied name an error message echoes back. */
export const ECHO_MAX_CHARS = 128;

/** Echoes a client-supplied string into an error message, cut to a readable length. */
export function echo(value: string): string {
  return value.length <= ECHO_MAX_CHARS ? value : `${value.slice(0, ECHO_MAX_CHARS)}… (${value.length} characters)`;
}
