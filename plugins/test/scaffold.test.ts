// `probegate plugin new` writes a standalone project; the whole author walk
// (npm install, build, test, into a gateway) is gateway/test/plugin-author-walk.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { parse as parseYaml } from "yaml";
import { findPackedSdk, scaffoldPlugin } from "../../gateway/src/cli/plugin-new";
import { ROOT } from "./harness";

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "pg-scaffold-"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("scaffoldPlugin", () => {
  it.each(["", "A", "-x", "x-", "has_underscore", "a".repeat(64), "sdk", "../up"])("rejects the name %j", async (name) => {
    await expect(scaffoldPlugin(name, { dir: tmp })).rejects.toThrow(/invalid plugin name/);
  });

  it("writes a standalone project around the packed SDK of this installation", async () => {
    const files = await scaffoldPlugin("line-count", { dir: tmp });
    expect(files.map((f) => relative(join(tmp, "line-count"), f)).sort()).toEqual([
      ".gitignore", "README.md", "asconfig.json", "assembly/index.ts", "assembly/tsconfig.json",
      "fixtures/one-line.yaml", "fixtures/two-lines.yaml", "package.json", "vendor/probegate-plugin-sdk-1.0.0.tgz",
    ]);
    const p = (f: string) => join(tmp, "line-count", f);
    const pkg = JSON.parse(readFileSync(p("package.json"), "utf8"));
    const sdkPkg = JSON.parse(readFileSync(join(ROOT, "plugins", "sdk", "package.json"), "utf8"));
    expect(pkg.devDependencies).toEqual({
      "@probegate/plugin-sdk": "file:vendor/probegate-plugin-sdk-1.0.0.tgz",
      assemblyscript: sdkPkg.peerDependencies.assemblyscript,
    });
    expect(pkg.scripts.test).toBe("probegate-plugin test build/line-count.wasm --fixtures fixtures");
    expect(readFileSync(p("vendor/probegate-plugin-sdk-1.0.0.tgz"))).toEqual(readFileSync(findPackedSdk().tarball));
    expect(readFileSync(p("assembly/index.ts"), "utf8")).toContain('from "@probegate/plugin-sdk"');
    // One passing and one failing case, in the documented format.
    expect(parseYaml(readFileSync(p("fixtures/two-lines.yaml"), "utf8")).expect).toMatchObject({ status: "pass", reason: "Ok" });
    expect(parseYaml(readFileSync(p("fixtures/one-line.yaml"), "utf8")).expect).toMatchObject({ status: "fail", reason: "TooFewLines" });
    const readme = readFileSync(p("README.md"), "utf8");
    expect(readme).toContain("npm install");
    expect(readme).toContain('"@probegate/plugin-sdk": "^1.0.0"');
  });

  it("refuses to overwrite an existing project", async () => {
    await scaffoldPlugin("twice", { dir: tmp });
    await expect(scaffoldPlugin("twice", { dir: tmp })).rejects.toThrow(/already exists/);
  });

  it("says how to get a packed SDK when the given one is missing", async () => {
    writeFileSync(join(tmp, "x.tgz"), "");
    await expect(scaffoldPlugin("no-sdk", { dir: tmp, sdkTarball: join(tmp, "missing.tgz") })).rejects.toThrow(/no packed SDK at/);
    await expect(scaffoldPlugin("no-sdk2", { dir: tmp, sdkTarball: join(tmp, "x.tgz") })).rejects.toThrow(/sdk:pack/);
  });
});
