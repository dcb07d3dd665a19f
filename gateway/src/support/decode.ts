// Command and file output as text: the one place bytes become a source's string.

/**
 * Invalid bytes become U+FFFD instead of throwing. When the output was cut,
 * streaming mode holds back a multi-byte character split by the cut rather
 * than turning its first bytes into garbage.
 */
export function decodeUtf8(buf: Buffer, cut: boolean): string {
  return new TextDecoder("utf-8", { fatal: false }).decode(buf, { stream: cut });
}

/** Text cut to at most `cap` UTF-8 bytes, never through a character (which would end in U+FFFD, past the cap). */
export function capUtf8(text: string, cap: number): { text: string; cut: boolean } {
  const buf = Buffer.from(text, "utf8");
  return buf.length > cap ? { text: decodeUtf8(buf.subarray(0, cap), true), cut: true } : { text, cut: false };
}
