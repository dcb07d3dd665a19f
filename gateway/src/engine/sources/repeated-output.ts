// A command's output is usually what it printed last time (a healthy node's
// `lctl get_param *.state` is the same listing round after round). Decoding
// it anew makes a new string every round, and a result string lives for the
// source's TTL, so it outlives the young generation: each copy is garbage in
// the old or large-object space until V8's next full collection, which on an
// idle gateway is minutes away. With 64 mounts on 64 OSTs the listing is
// 561 KiB, and those dead copies were most of the RSS that volumes cost
// (bench/health.ts `rss`). Bytes equal to the last run's give the last run's
// string instead: a memcmp, no allocation that outlives the call.

import { decodeUtf8 } from "./decode.js";

/** The last decoding of one command source's stdout. */
export class RepeatedOutput {
  private last: { key: string; bytes: Buffer; cut: boolean; text: string } | undefined;

  /**
   * `key` names the exact command (argv with its facts filled in): a source
   * whose argument changed is a different command, never compared.
   */
  text(key: string, bytes: Buffer, cut: boolean): string {
    const last = this.last;
    if (last && last.key === key && last.cut === cut && last.bytes.equals(bytes)) return last.text;
    const text = decodeUtf8(bytes, cut);
    this.last = { key, bytes: own(bytes), cut, text };
    return text;
  }
}

/** The bytes in a buffer of their own: a kept view would keep the whole read or pool slab it points into. */
function own(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length) return bytes;
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}
