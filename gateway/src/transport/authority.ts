// RFC 3986 authority without userinfo: an IP literal in brackets or a reg-name, then an optional port.
const AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::\d{0,5})?$/;

/**
 * Whether a Host or :authority value can be part of a URL. The RPC and HTTP
 * layers build URLs from it and throw on a bad one, so the edge answers such
 * requests with 400 / INVALID_ARGUMENT before they get that far.
 */
export function validAuthority(value: string): boolean {
  return value.length <= 255 && AUTHORITY.test(value);
}

/** Used when a request names no authority at all (HTTP/1.0, or HTTP/2 without :authority or Host). */
export const DEFAULT_AUTHORITY = "localhost";
