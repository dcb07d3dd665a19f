// The command spawner's protocol has one definition (gateway/src/exec/
// spawner-protocol.ts). The C side compiles against the header generated from
// it, and the gateway side encodes and decodes with it; here: the checked-in
// header is the generated one, spawner.c spells no op code, flag or frame size
// itself, and the built binary answers frames made from the definition alone
// (without spawner.ts) as the definition says.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  encodeWords,
  fixedBytes,
  SPAWNER_DONE_FLAGS,
  SPAWNER_LAYOUTS,
  SPAWNER_LIMITS,
  SPAWNER_OPS,
  spawnerProtocolHeader,
  wordOffset,
} from "../src/exec/spawner-protocol.js";
import { defaultSpawnerPath } from "../src/exec/spawner.js";
import { ROOT } from "./helpers/gateway-process.js";

const NATIVE = join(ROOT, "gateway", "native");
const SPAWNER = defaultSpawnerPath();

describe("the spawner protocol's one definition", () => {
  it("is what gateway/native/spawner-protocol.h holds (run `npm run native:header` after changing it)", () => {
    expect(readFileSync(join(NATIVE, "spawner-protocol.h"), "utf8")).toBe(spawnerProtocolHeader());
  });

  it("is where spawner.c takes every op code, flag, bound and frame size from", () => {
    const c = readFileSync(join(NATIVE, "spawner.c"), "utf8");
    expect(c).toContain('#include "spawner-protocol.h"');
    // Code only: the comments may describe the protocol in words.
    const code = c.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
    for (const name of Object.keys(SPAWNER_OPS)) expect(code).toContain(`SP_${name}`);
    for (const name of Object.keys(SPAWNER_DONE_FLAGS)) expect(code).toContain(`SP_F_${name}`);
    for (const name of Object.keys(SPAWNER_LIMITS)) expect(code).toContain(`SP_${name}`);
    for (const layout of Object.keys(SPAWNER_LAYOUTS)) expect(code).toContain(`SP_${layout}_WORDS`);
    // No op code compared or written as a bare number, no frame offset by hand.
    expect(code).not.toMatch(/\btype\s*[=!]=\s*\d/);
    expect(code).not.toMatch(/put32\([a-z]+ \+ \d+,/);
    expect(code).not.toMatch(/#define\s+(MAX_FRAME|GRACE_MS|MAX_SLOTS)\b/);
  });

  it("is where spawner.ts takes them from (no copy of its numbers)", () => {
    const ts = readFileSync(join(ROOT, "gateway", "src", "exec", "spawner.ts"), "utf8");
    expect(ts).toContain('from "./spawner-protocol.js"');
    expect(ts).not.toMatch(/const (REQ|REP|F)_[A-Z_]+ = \d/);
    expect(ts).not.toMatch(/flags & \d/);
  });
});

/** Frames read from a spawner process: whole replies, split by their length prefix. */
class RawSpawner {
  readonly child: ChildProcessWithoutNullStreams;
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  readonly exited: Promise<number | null>;

  constructor(path: string) {
    this.child = spawn(path, [], { stdio: ["pipe", "pipe", "ignore"] as never, env: {} }) as unknown as ChildProcessWithoutNullStreams;
    this.child.stdout.on("data", (c: Buffer) => {
      this.buf = Buffer.concat([this.buf, c]);
      for (const w of this.waiters.splice(0)) w();
    });
    this.exited = new Promise((r) => this.child.on("exit", (code) => r(code)));
  }

  send(words: Buffer, strings: string[] = []): void {
    const tail = strings.flatMap((s) => {
      const b = Buffer.from(s);
      const n = Buffer.alloc(4);
      n.writeUInt32LE(b.length);
      return [n, b];
    });
    const body = Buffer.concat([words, ...tail]);
    const len = Buffer.alloc(4);
    len.writeUInt32LE(body.length);
    this.child.stdin.write(Buffer.concat([len, body]));
  }

  async frame(): Promise<Buffer> {
    for (;;) {
      if (this.buf.length >= 4) {
        const len = this.buf.readUInt32LE(0);
        if (this.buf.length >= 4 + len) {
          const f = this.buf.subarray(4, 4 + len);
          this.buf = this.buf.subarray(4 + len);
          return f;
        }
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
}

const word = (f: Buffer, layout: "STARTED" | "DONE", w: string): number => f.readUInt32LE(wordOffset(layout, w as never));

function done(f: Buffer): { flags: number; code: number; signal: number; stdout: string; stderr: string } {
  expect(word(f, "DONE", "type")).toBe(SPAWNER_OPS.REP_DONE);
  const outLen = word(f, "DONE", "stdout_len");
  const at = fixedBytes("DONE");
  const errLen = f.readUInt32LE(at + outLen);
  expect(f.length).toBe(at + outLen + 4 + errLen);
  return {
    flags: word(f, "DONE", "flags"),
    code: f.readInt32LE(wordOffset("DONE", "exit_code")),
    signal: word(f, "DONE", "signal"),
    stdout: f.subarray(at, at + outLen).toString(),
    stderr: f.subarray(at + outLen + 4, at + outLen + 4 + errLen).toString(),
  };
}

const run = (id: number, argv: string[], extra: { timeout?: number; keep?: { slot: number; held: number } } = {}) => {
  const common = { id, timeout_ms: extra.timeout ?? 5000, cap: 4096, argc: argv.length, envc: 0 };
  const words = extra.keep
    ? encodeWords("RUN_KEEP", { type: SPAWNER_OPS.REQ_RUN_KEEP, ...common, ...extra.keep })
    : encodeWords("RUN", { type: SPAWNER_OPS.REQ_RUN, ...common, slot: 0, held: 0 });
  return { words, strings: [argv[0]!, ...argv] };
};

describe.skipIf(SPAWNER === undefined)("the built spawner speaks the definition", () => {
  let raw: RawSpawner | undefined;
  afterEach(() => {
    raw?.child.kill("SIGKILL");
    raw = undefined;
  });

  it("answers a run with STARTED (its pid) and DONE (exited, status, stdout, stderr)", async () => {
    raw = new RawSpawner(SPAWNER!);
    const r = run(7, ["/bin/sh", "-c", "echo out; echo err >&2; exit 3"]);
    raw.send(r.words, r.strings);
    const started = await raw.frame();
    expect(started.length).toBe(fixedBytes("STARTED"));
    expect(word(started, "STARTED", "type")).toBe(SPAWNER_OPS.REP_STARTED);
    expect(word(started, "STARTED", "id")).toBe(7);
    expect(word(started, "STARTED", "pid")).toBeGreaterThan(1);
    const f = await raw.frame();
    expect(word(f, "DONE", "id")).toBe(7);
    expect(done(f)).toEqual({ flags: SPAWNER_DONE_FLAGS.EXITED, code: 3, signal: 0, stdout: "out\n", stderr: "err\n" });
  });

  it("kills on KILL, times out on timeout_ms, and says SAME_OUT for a kept output it was told is held", async () => {
    raw = new RawSpawner(SPAWNER!);
    const sleeper = run(1, ["/bin/sleep", "30"]);
    raw.send(sleeper.words, sleeper.strings);
    await raw.frame();
    raw.send(encodeWords("KILL", { type: SPAWNER_OPS.REQ_KILL, id: 1 }));
    const killed = done(await raw.frame());
    expect(killed.flags).toBe(SPAWNER_DONE_FLAGS.EXITED);
    expect(killed.signal).toBe(9);

    const slow = run(2, ["/bin/sleep", "30"], { timeout: 100 });
    raw.send(slow.words, slow.strings);
    await raw.frame();
    expect(done(await raw.frame()).flags).toBe(SPAWNER_DONE_FLAGS.EXITED | SPAWNER_DONE_FLAGS.TIMED_OUT);

    const first = run(3, ["/bin/echo", "same"], { keep: { slot: 5, held: 0 } });
    raw.send(first.words, first.strings);
    await raw.frame();
    expect(done(await raw.frame())).toMatchObject({ flags: SPAWNER_DONE_FLAGS.EXITED, stdout: "same\n" });
    // The output of run 3 is held: an equal one is not sent again.
    const again = run(4, ["/bin/echo", "same"], { keep: { slot: 5, held: 3 } });
    raw.send(again.words, again.strings);
    await raw.frame();
    expect(done(await raw.frame())).toMatchObject({ flags: SPAWNER_DONE_FLAGS.EXITED | SPAWNER_DONE_FLAGS.SAME_OUT, stdout: "" });
  });

  it("refuses an op code the definition does not have, and a frame past MAX_FRAME (exit status 2)", async () => {
    const known = new Set<number>([SPAWNER_OPS.REQ_RUN, SPAWNER_OPS.REQ_KILL, SPAWNER_OPS.REQ_RUN_KEEP]);
    const unknown = [...Array(16).keys()].find((n) => !known.has(n))!;
    raw = new RawSpawner(SPAWNER!);
    raw.send(encodeWords("KILL", { type: unknown, id: 1 }));
    expect(await raw.exited).toBe(2);

    raw = new RawSpawner(SPAWNER!);
    const len = Buffer.alloc(4);
    len.writeUInt32LE(SPAWNER_LIMITS.MAX_FRAME + 1);
    raw.child.stdin.write(len);
    expect(await raw.exited).toBe(2);
  });
});
