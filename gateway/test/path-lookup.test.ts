import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolveProgram } from "../src/exec/path-lookup.js";

describe("resolveProgram's memory of where a program was found", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function tree(): { a: string; b: string; path: string } {
    const root = mkdtempSync(join(tmpdir(), "pg-path-"));
    dirs.push(root);
    const a = join(root, "a");
    const b = join(root, "b");
    mkdirSync(a);
    mkdirSync(b);
    return { a, b, path: `${a}:${b}` };
  }

  function tool(dir: string, mode = 0o755): string {
    const p = join(dir, "lnetctl");
    writeFileSync(p, "#!/bin/true\n");
    chmodSync(p, mode);
    return p;
  }

  it("reports a program removed after it was found as not found, with the usual text", async () => {
    const t = tree();
    const p = tool(t.b);
    expect(await resolveProgram("lnetctl", t.path)).toEqual({ ok: true, path: p });
    rmSync(p);
    expect(await resolveProgram("lnetctl", t.path)).toEqual({ ok: false, error: "ENOENT: lnetctl not found on PATH" });
  });

  it("searches again when the found one stops being executable, and finds the next in PATH", async () => {
    const t = tree();
    const first = tool(t.a);
    expect(await resolveProgram("lnetctl", t.path)).toEqual({ ok: true, path: first });
    const second = tool(t.b);
    chmodSync(first, 0o644);
    expect(await resolveProgram("lnetctl", t.path)).toEqual({ ok: true, path: second });
  });

  it("keeps each PATH apart: the same name under another PATH is searched there", async () => {
    const t = tree();
    const inA = tool(t.a);
    const inB = tool(t.b);
    expect(await resolveProgram("lnetctl", t.a)).toEqual({ ok: true, path: inA });
    expect(await resolveProgram("lnetctl", t.b)).toEqual({ ok: true, path: inB });
    expect(await resolveProgram("lnetctl", `${t.b}:${t.a}`)).toEqual({ ok: true, path: inB });
  });
});
