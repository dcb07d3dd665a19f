// The command spawner's wire protocol, defined once: the op codes, flags,
// bounds and frame layouts that gateway/native/spawner.c and spawner.ts speak.
// The C side reads them from gateway/native/spawner-protocol.h, which is
// generated from this file (`npm run native:header`) and checked in, so a
// machine without the TypeScript build still compiles the spawner;
// gateway/test/spawner-protocol.test.ts fails when the header is stale or
// spawner.c stops using its names.
//
// Every integer is a u32, little-endian; every frame is prefixed with the
// length (u32) of what follows it; a string is a u32 length and its bytes (no
// NUL). A frame begins with the fixed words of its layout, then its tail.

/** Request and reply op codes (the first word of a frame). */
export const SPAWNER_OPS = Object.freeze({
  /** Run a command: RUN words, then str path, str argv[argc], str env[envc] ("K=V"). */
  REQ_RUN: 1,
  /** Kill a running command's process group: KILL words. */
  REQ_KILL: 2,
  /** As REQ_RUN, also keeping stdout in a slot (spawner.c, "Kept output"): RUN_KEEP words, then as REQ_RUN. */
  REQ_RUN_KEEP: 3,
  /** The command started: STARTED words. */
  REP_STARTED: 1,
  /** The command ended (or never started): DONE words, stdout bytes, u32 stderr length, stderr bytes. */
  REP_DONE: 2,
});

/** Bits of a DONE reply's `flags` word. */
export const SPAWNER_DONE_FLAGS = Object.freeze({
  EXITED: 1,
  TIMED_OUT: 2,
  STDOUT_CUT: 4,
  STDERR_CUT: 8,
  /** stdout is the kept output the request named `held`: its length is 0 and the gateway gives the text it holds. */
  SAME_OUT: 16,
});

export const SPAWNER_LIMITS = Object.freeze({
  /** A frame's length past this is a protocol error (the spawner exits). */
  MAX_FRAME: 64 * 1024 * 1024,
  /** Kept-output slots (one per command source). */
  KEEP_SLOTS: 64,
  /** After a kill, how long pipes held open by something outside the group are waited for. */
  GRACE_MS: 1000,
  /** timeout_ms meaning "none": the gateway bounds its wait itself (a statfs probe). */
  NO_TIMEOUT: 0xffff_ffff,
});

/** The fixed words at the start of each frame, in order. */
export const SPAWNER_LAYOUTS = Object.freeze({
  RUN: ["type", "id", "timeout_ms", "cap", "argc", "envc"],
  RUN_KEEP: ["type", "id", "timeout_ms", "cap", "slot", "held", "argc", "envc"],
  KILL: ["type", "id"],
  STARTED: ["type", "id", "pid"],
  DONE: ["type", "id", "spawn_errno", "flags", "exit_code", "signal", "stdout_len"],
} as const satisfies Record<string, readonly string[]>);

type Layouts = typeof SPAWNER_LAYOUTS;

/** Byte offset of a word within a frame (after its length prefix). */
export function wordOffset<L extends keyof Layouts>(layout: L, word: Layouts[L][number]): number {
  const i = (SPAWNER_LAYOUTS[layout] as readonly string[]).indexOf(word);
  if (i < 0) throw new Error(`spawner protocol: no word ${word} in ${layout}`);
  return 4 * i;
}

/** Bytes of a layout's fixed words. */
export function fixedBytes(layout: keyof Layouts): number {
  return 4 * SPAWNER_LAYOUTS[layout].length;
}

const upper = (s: string): string => s.toUpperCase();

/** gateway/native/spawner-protocol.h, as generated from the definitions above. */
export function spawnerProtocolHeader(): string {
  const lines = [
    "/* Generated from gateway/src/exec/spawner-protocol.ts by `npm run native:header`: do not edit. */",
    "#ifndef PROBEGATE_SPAWNER_PROTOCOL_H",
    "#define PROBEGATE_SPAWNER_PROTOCOL_H",
    "",
    `#define SP_MAX_FRAME ${SPAWNER_LIMITS.MAX_FRAME}u`,
    `#define SP_KEEP_SLOTS ${SPAWNER_LIMITS.KEEP_SLOTS}`,
    `#define SP_GRACE_MS ${SPAWNER_LIMITS.GRACE_MS}`,
    `#define SP_NO_TIMEOUT ${SPAWNER_LIMITS.NO_TIMEOUT}u`,
    "",
    `enum sp_op { ${Object.entries(SPAWNER_OPS).map(([k, v]) => `SP_${k} = ${v}`).join(", ")} };`,
    `enum sp_done_flag { ${Object.entries(SPAWNER_DONE_FLAGS).map(([k, v]) => `SP_F_${k} = ${v}`).join(", ")} };`,
    "",
    "/* Word indexes of each frame's fixed words (u32 each, after the length prefix), and their count. */",
  ];
  for (const [name, words] of Object.entries(SPAWNER_LAYOUTS)) {
    const entries = words.map((w, i) => `SP_${name}_${upper(w)} = ${i}`);
    lines.push(`enum { ${[...entries, `SP_${name}_WORDS = ${words.length}`].join(", ")} };`);
  }
  lines.push("", "#endif", "");
  return lines.join("\n");
}

/** A frame's fixed words, in the layout's order (the caller adds the length prefix and any tail). */
export function encodeWords<L extends keyof Layouts>(layout: L, values: Readonly<Record<Layouts[L][number], number>>): Buffer {
  const words = SPAWNER_LAYOUTS[layout] as readonly Layouts[L][number][];
  const b = Buffer.allocUnsafe(4 * words.length);
  words.forEach((w, i) => b.writeUInt32LE(values[w] >>> 0, 4 * i));
  return b;
}
