// Reading an HTTP/1.1 response off a raw socket, strictly enough to call it
// well-formed or not: a status line, header lines, and a body framed by
// Content-Length, chunked encoding, or the connection's close.

export interface H1Response {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** A server stream still open: the head and whole first message(s) are here, the end is not (and need not come). */
  open?: boolean;
}

export type H1Parse = { done: false } | { done: true; response: H1Response } | { done: true; malformed: string };

const HEADER_END = Buffer.from("\r\n\r\n");

/**
 * Parses `data` (all bytes received so far); `closed` says the server has closed.
 * `serverStream`: the call is a server stream (Health/Watch), whose chunked
 * answer stays open by design, so a head and at least one whole enveloped
 * message already count as an answer.
 */
export function parseH1Response(data: Buffer, closed: boolean, requestMethod = "GET", serverStream = false): H1Parse {
  const end = data.indexOf(HEADER_END);
  if (end < 0) {
    if (data.length > 64 * 1024) return { done: true, malformed: "no end of headers in 64 KiB" };
    if (closed) return { done: true, malformed: data.length ? "connection closed inside the response headers" : "empty" };
    return { done: false };
  }
  const lines = data.subarray(0, end).toString("latin1").split("\r\n");
  const m = /^HTTP\/1\.[01] (\d{3}) [^\r\n]*$/.exec(lines[0]) ?? /^HTTP\/1\.[01] (\d{3})$/.exec(lines[0]);
  if (!m) return { done: true, malformed: `bad status line ${JSON.stringify(lines[0].slice(0, 80))}` };
  const status = Number(m[1]);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(line.slice(0, colon))) {
      return { done: true, malformed: `bad header line ${JSON.stringify(line.slice(0, 80))}` };
    }
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = data.subarray(end + 4);
  const noBody = requestMethod === "HEAD" || status === 204 || status === 304 || (status >= 100 && status < 200);
  if (noBody) return { done: true, response: { status, headers, body: Buffer.alloc(0) } };
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    const { body, error, more } = dechunk(rest);
    if (error) return { done: true, malformed: error };
    if (!more) return { done: true, response: { status, headers, body } };
    if (closed) return { done: true, malformed: "connection closed inside a chunked body" };
    if (serverStream && status === 200 && wholeEnvelopes(body) > 0) return { done: true, response: { status, headers, body, open: true } };
    return { done: false };
  }
  if (headers["content-length"] !== undefined) {
    if (!/^\d+$/.test(headers["content-length"])) return { done: true, malformed: `bad content-length ${headers["content-length"]}` };
    const len = Number(headers["content-length"]);
    if (rest.length >= len) return { done: true, response: { status, headers, body: rest.subarray(0, len) } };
    return closed ? { done: true, malformed: `connection closed after ${rest.length} of ${len} body bytes` } : { done: false };
  }
  // Body delimited by the close (RFC 9112 §6.3 rule 8).
  return closed ? { done: true, response: { status, headers, body: rest } } : { done: false };
}

/** The chunks read so far; `more` while the terminating chunk has not come. */
function dechunk(b: Buffer): { body: Buffer; more: boolean; error?: string } {
  const parts: Buffer[] = [];
  const partial = (more: boolean, error?: string) => ({ body: Buffer.concat(parts), more, error });
  let off = 0;
  for (;;) {
    const nl = b.indexOf("\r\n", off);
    if (nl < 0) return partial(true);
    const sizeText = b.subarray(off, nl).toString("latin1").split(";")[0].trim();
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) return partial(false, `bad chunk size ${JSON.stringify(sizeText.slice(0, 20))}`);
    const size = parseInt(sizeText, 16);
    off = nl + 2;
    if (size === 0) {
      // Trailer section, then an empty line.
      const endT = b.indexOf("\r\n", off);
      if (endT < 0) return partial(true);
      if (endT === off) return partial(false);
      return partial(b.indexOf(HEADER_END, off) < 0);
    }
    if (b.length < off + size + 2) return partial(true);
    parts.push(b.subarray(off, off + size));
    if (b[off + size] !== 13 || b[off + size + 1] !== 10) return partial(false, "chunk not followed by CRLF");
    off += size + 2;
  }
}

/** How many whole 5-byte-prefixed messages (gRPC-Web, Connect streaming) `body` starts with. */
function wholeEnvelopes(body: Buffer): number {
  let n = 0;
  let off = 0;
  while (body.length >= off + 5) {
    const end = off + 5 + body.readUInt32BE(off + 1);
    if (body.length < end) break;
    n++;
    off = end;
  }
  return n;
}
