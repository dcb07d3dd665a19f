// The plugin directory is rescanned on every poll; an unchanged file is not
// read again (its inode, size and change times match the last read), but no
// change, however small, may hide behind that: same-size rewrites in place,
// within one tick of the kernel's coarse inode clock, must be seen at once.
import { chmod, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { scanPluginDir } from "../src/runtime/plugin-dir.js";
import { RACY_MS } from "../src/support/file-identity.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function newDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), "pg-rescan-"));
  dirs.push(d);
  return d;
}

async function scan(dir: string) {
  const r = await scanPluginDir(dir, 1024 * 1024);
  if (!r.exists) throw new Error("directory missing");
  return r;
}

const text = (b: Uint8Array | null) => Buffer.from(b ?? new Uint8Array()).toString("utf8");

describe("plugin directory rescans", () => {
  it("sees every same-size rewrite in place, even within one tick of the inode clock", async () => {
    const dir = await newDir();
    const file = join(dir, "a.wasm");
    const cfg = join(dir, "a.yaml");
    const seen: string[] = [];
    for (const letter of ["A", "B", "C", "D", "E", "F"]) {
      // Same inode, same size, back to back: only the content differs.
      await writeFile(file, letter.repeat(64));
      await writeFile(cfg, `modules: [${letter.repeat(4)}]\n`);
      const r = await scan(dir);
      expect(text(r.files[0]!.bytes)).toBe(letter.repeat(64));
      expect(r.configs[0]!.text).toBe(`modules: [${letter.repeat(4)}]\n`);
      seen.push(r.files[0]!.sha256);
    }
    expect(new Set(seen).size).toBe(6);
  });

  it("reuses an unchanged file's bytes once it has settled, and reads it again after any change", async () => {
    const dir = await newDir();
    const file = join(dir, "a.wasm");
    await writeFile(file, "settled".repeat(10));
    await new Promise((r) => setTimeout(r, RACY_MS + 100));
    const first = await scan(dir);
    const second = await scan(dir);
    // The same buffer: the file was not read again.
    expect(second.files[0]!.bytes).toBe(first.files[0]!.bytes);
    expect(second.files[0]!.sha256).toBe(first.files[0]!.sha256);

    // A rewrite of the same size is read (and the old bytes are not served).
    await writeFile(file, "SETTLED".repeat(10));
    const third = await scan(dir);
    expect(text(third.files[0]!.bytes)).toBe("SETTLED".repeat(10));
    expect(third.files[0]!.sha256).not.toBe(first.files[0]!.sha256);

    // Replaced by a rename (a new inode), as a ConfigMap swap or an atomic install does.
    await writeFile(join(dir, ".next"), "renamed".repeat(10));
    await rename(join(dir, ".next"), file);
    const fourth = await scan(dir);
    expect(text(fourth.files[0]!.bytes)).toBe("renamed".repeat(10));

    // A file that becomes unreadable is reported, not served from memory.
    if (process.getuid?.() !== 0) {
      await chmod(file, 0o000);
      const fifth = await scan(dir);
      expect(fifth.files).toHaveLength(0);
      expect(fifth.errors.map((e) => e.name)).toEqual(["a.wasm"]);
    }
  });
});
