/**
 * The largest request message probegate decodes for the calls it answers
 * itself (Identity, Health, reflection). Their requests are empty or hold a
 * service name, file name or symbol; 4 KiB leaves room for any real one while
 * bounding what a hostile message can make the decoder build (at most ~2,000
 * unknown fields or JSON keys). Larger requests get RESOURCE_EXHAUSTED unread.
 */
export const SELF_ANSWERED_MAX_BYTES = 4096;

/** How much of a client-supplied name an error message echoes back. */
export const ECHO_MAX_CHARS = 128;

/** Echoes a client-supplied string into an error message, cut to a readable length. */
export function echo(value: string): string {
  return value.length <= ECHO_MAX_CHARS ? value : `${value.slice(0, ECHO_MAX_CHARS)}… (${value.length} characters)`;
}
