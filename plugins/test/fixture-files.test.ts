// The bundled plugins' cases as fixture files (plugins/<name>/fixtures/*.yaml),
// run by the same runner plugin authors use: `probegate plugin test --fixtures`.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runPluginCommand } from "../../gateway/src/cli/plugin-commands";
import { DIST, ROOT, ensureBuilt } from "./harness";

beforeAll(() => ensureBuilt(), 120_000);

const PLUGINS = ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping", "net-interfaces", "volume-lustre-mount", "lustre-imports", "lustre-health-check", "lnet-health", "volume-lustre-health", "lnet-servers", "lnet-peer-health"];

describe("bundled plugins' fixture files", () => {
  it.each(PLUGINS)("%s: every case passes", async (name) => {
    const dir = join(ROOT, "plugins", name, "fixtures");
    const count = readdirSync(dir).filter((f) => f.endsWith(".yaml")).length;
    expect(count).toBeGreaterThanOrEqual(5);
    let out = "";
    const code = await runPluginCommand(["test", join(DIST, `${name}.wasm`), "--fixtures", dir], {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (out += s) },
      cwd: ROOT,
    });
    expect(out.trim().split("\n").at(-1), out).toBe(`${count} passed, 0 failed`);
    expect(out.split("\n").filter((l) => l.startsWith("ok    "))).toHaveLength(count);
    expect(code).toBe(0);
  });
});
