// The two bounded readers of procfs/sysfs files must give the same answers:
// a source moved from one to the other (read-file.ts) must not change what a
// plugin sees, how a cut is reported, or the words of a failure.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { release, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readCapped, readKernelFile, type FileRead } from "../src/engine/sources/read-file.js";

const dir = mkdtempSync(join(tmpdir(), "pg-read-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string | Buffer): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

describe.each([
  ["readCapped (thread pool)", (p: string, cap: number) => readCapped(p, cap)],
  ["readKernelFile (event loop)", async (p: string, cap: number): Promise<FileRead> => readKernelFile(p, cap)],
])("%s", (_name, read) => {
  it("reads a small file whole", async () => {
    expect(await read(file("small", "up\n"), 4096)).toEqual({ ok: true, text: "up\n", truncated: false });
  });

  it("reads a file over several chunks (past the first 4 KiB and a 64 KiB read) to its end", async () => {
    const big = Array.from({ length: 9000 }, (_, i) => `line ${i}\n`).join("");
    expect(big.length).toBeGreaterThan(64 * 1024);
    expect(await read(file("big", big), 1 << 20)).toEqual({ ok: true, text: big, truncated: false });
  });

  it("tells a file exactly at the cap from one cut at it", async () => {
    expect(await read(file("at-cap", "x".repeat(100)), 100)).toEqual({ ok: true, text: "x".repeat(100), truncated: false });
    expect(await read(file("over-cap", "x".repeat(101)), 100)).toEqual({ ok: true, text: "x".repeat(100), truncated: true });
  });

  it("never ends a cut text in half a character", async () => {
    // "é" is two bytes: a cap of 4 falls inside the third one.
    const r = await read(file("utf8", "aaéé"), 5);
    expect(r).toEqual({ ok: true, text: "aaé", truncated: true });
  });

  it("words a missing file, a directory and an unreadable one like every file source", async () => {
    const missing = join(dir, "nope");
    expect(await read(missing, 10)).toEqual({ ok: false, code: "ENOENT", error: `ENOENT: ${missing} does not exist` });
    const sub = join(dir, "a-dir");
    mkdirSync(sub, { recursive: true });
    expect(await read(sub, 10)).toEqual({ ok: false, code: "EISDIR", error: `EISDIR: ${sub} cannot be read` });
  });

  it("reads a real procfs file, whose stat size is 0, to its end", async () => {
    const r = await read("/proc/sys/kernel/osrelease", 4096);
    expect(r).toEqual({ ok: true, text: `${release()}\n`, truncated: false });
    const own = await read("/proc/self/status", 1 << 20);
    expect(own.ok && own.text).toMatch(/^Name:\t.*\n[\s\S]*\nVmRSS:/);
  });
});

describe("readKernelFile", () => {
  it("does not wait for a writer when a FIFO stands where a kernel file should be", () => {
    const fifo = join(dir, "fifo");
    const made = spawnSync("mkfifo", [fifo]);
    if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
    // A blocking open() would never return: the file's tests would hang.
    expect(readKernelFile(fifo, 10)).toEqual({ ok: true, text: "", truncated: false });
  });
});
