/**
 * The path of a request target without its query. An absolute-form target
 * (`POST http://host/csi.v1.Identity/Probe`, RFC 9112 §3.2.2) names the same
 * resource as its origin form, so it routes the same way.
 */
export function requestPath(target: string | undefined): string {
  let t = target ?? "/";
  if (!t.startsWith("/")) {
    const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(t);
    if (m) t = t.slice(m[0].length) || "/";
  }
  const q = t.indexOf("?");
  return q < 0 ? t : t.slice(0, q);
}
