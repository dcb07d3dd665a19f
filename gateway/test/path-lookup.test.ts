import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { resolveProgram } from "../src/exec/path-lookup.js";
import { runCommand } from "../src/exec/run-command.js";
import { CommandSpawner, defaultSpawnerPath } from "../src/exec/spawner.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Two PATH directories, a before b, removed after the test. */
function tree(): { a: string; b: string; path: string; env: NodeJS.ProcessEnv } {
  const root = mkdtempSync(join(tmpdir(), "pg-path-"));
  dirs.push(root);
  const a = join(root, "a");
  const b = join(root, "b");
  mkdirSync(a);
  mkdirSync(b);
  return { a, b, path: `${a}:${b}`, env: Object.freeze({ PATH: `${a}:${b}` }) };
}

describe("resolveProgram's memory of where a program was found", () => {

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

// runCommand starts a program from where it was last found without checking
// it first (the start is the check): a start that fails as a missing or
// non-executable file would must give what a fresh search gives.
describe.each([
  ["through the command spawner", true],
  ["by a direct spawn", false],
])("a command whose program changed since it was found, %s", (_way, viaSpawner) => {
  const spawner = viaSpawner ? new CommandSpawner(defaultSpawnerPath() ? { path: defaultSpawnerPath()! } : {}) : undefined;
  afterAll(() => spawner?.stop());

  function tool(dir: string, says: string): string {
    const p = join(dir, "lnetctl");
    writeFileSync(p, `#!/bin/sh\necho ${says}\n`);
    chmodSync(p, 0o755);
    return p;
  }

  const run = (env: NodeJS.ProcessEnv) =>
    runCommand({ argv: ["lnetctl", "net", "show"], label: "lnetctl net show", timeoutMs: 10_000, maxOutputBytes: 4096, env, ...(spawner ? { spawner } : {}) });

  it("runs and says it is not on PATH once it was removed, like a first run", async () => {
    if (viaSpawner && spawner?.fallbackReason) return;
    const t = tree();
    const p = tool(t.a, "from-a");
    expect(await run(t.env)).toMatchObject({ ok: true, stdout: "from-a\n" });
    rmSync(p);
    expect(await run(t.env)).toMatchObject({ ok: false, error: "ENOENT: lnetctl not found on PATH", outcome: "error" });
    // Installed again further down PATH: found at once.
    tool(t.b, "from-b");
    expect(await run(t.env)).toMatchObject({ ok: true, stdout: "from-b\n" });
  });

  it("runs the next one in PATH when the one it ran lost its x bit", async () => {
    if (viaSpawner && spawner?.fallbackReason) return;
    const t = tree();
    const first = tool(t.a, "from-a");
    tool(t.b, "from-b");
    expect(await run(t.env)).toMatchObject({ ok: true, stdout: "from-a\n" });
    chmodSync(first, 0o644);
    expect(await run(t.env)).toMatchObject({ ok: true, stdout: "from-b\n" });
  });

  it("runs the next one in PATH when the directory it ran from was replaced by a file", async () => {
    if (viaSpawner && spawner?.fallbackReason) return;
    const t = tree();
    tool(t.a, "from-a");
    tool(t.b, "from-b");
    expect(await run(t.env)).toMatchObject({ ok: true, stdout: "from-a\n" });
    rmSync(t.a, { recursive: true });
    writeFileSync(t.a, "not a directory");
    expect(await run(t.env)).toMatchObject({ ok: true, stdout: "from-b\n" });
  });
});
