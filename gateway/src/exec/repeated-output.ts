// A command's output is usually what it printed last time (a healthy node's
// `lctl get_param *.state` is the same listing round after round). Decoding
// it anew makes a new string every round, and a result string lives for the
// source's TTL, so it outlives the young generation: each copy is garbage in
// the old or large-object space until V8's next full collection, which on an
// idle gateway is minutes away. With 64 mounts on 64 OSTs the listing is
// 561 KiB, and those dead copies were most of the RSS that volumes cost
// (bench/health.ts `rss`). An output equal to the last one gives the last
// one's string instead.
//
// Through the command spawner the comparison is the spawner's (spawner.c,
// "Kept output"): an unchanged output is not even sent, so the gateway reads,
// buffers and decodes nothing. On the direct spawn the bytes are compared
// here (a memcmp).

import { decodeUtf8 } from "../support/decode.js";
import type { KeepOutput, SpawnedRun } from "./spawner.js";

/** The last stdout of one command source. */
export class RepeatedOutput {
  private direct: { bytes: Buffer; cut: boolean; text: string } | undefined;
  /** The output the spawner keeps in `slot`, by the token it keeps it under. */
  private kept: { token: number; text: string } | undefined;

  /** `slot`: the spawner's slot for this source (CommandSpawner.slotFor), if it has one. */
  constructor(private readonly slot?: number) {}

  /** Direct spawn: the bytes read. */
  text(bytes: Buffer, cut: boolean): string {
    const last = this.direct;
    if (last && last.cut === cut && last.bytes.equals(bytes)) return last.text;
    const text = decodeUtf8(bytes, cut);
    this.direct = { bytes: own(bytes), cut, text };
    return text;
  }

  /** What a spawner request asks it to keep, or undefined without a slot. */
  keep(): KeepOutput | undefined {
    return this.slot === undefined ? undefined : { slot: this.slot, held: this.kept?.token ?? 0 };
  }

  /**
   * A spawner's answer to a request that carried `asked` (keep()'s value then).
   * Undefined when it says "the same" of an output not held here, which the
   * protocol rules out: the caller fails the run rather than guess.
   */
  spawned(run: Pick<SpawnedRun, "stdout" | "stdoutCut" | "stdoutSame" | "token">, asked: KeepOutput | undefined): string | undefined {
    if (run.stdoutSame) return asked && this.kept && this.kept.token === asked.held ? this.kept.text : undefined;
    const text = decodeUtf8(run.stdout, run.stdoutCut);
    if (asked) this.kept = run.stdoutCut ? undefined : { token: run.token, text };
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
