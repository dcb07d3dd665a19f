/**
 * The largest request message probegate decodes for the calls it answers
 * itself (Identity, Health, reflection). Their requests are empty or hold a
 * service name, file name or symbol; 4 KiB leaves room for any real one while
 * bounding what a hostile message can make the decoder build (at most ~2,000
 * unknown fields or JSON keys). Larger requests get RESOURCE_EXHAUSTED unread.
 */
export const SELF_ANSWERED_MAX_BYTES = 4096;

export { echo, ECHO_MAX_CHARS } from "../support/echo.js";
