// `probegate plugin new` writes a standalone project; the whole author walk
// (npm install, build, test, into a gateway) is gateway/test/plugin-author-walk.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
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

  it.each([
    ["rust", ["Cargo.toml", "src/lib.rs", "vendor/probegate-sdk/Cargo.toml", "vendor/probegate-sdk/src/lib.rs"]],
    ["c", ["src/check.c", "vendor/probegate-sdk-c/probegate.c", "vendor/probegate-sdk-c/probegate.h"]],
  ] as const)("writes a standalone %s project (ABI v2) that builds and tests with `npm test`", async (lang, own) => {
    const name = `lines-${lang}`;
    const files = (await scaffoldPlugin(name, { dir: tmp, lang })).map((f) => relative(join(tmp, name), f));
    expect(files).toEqual(expect.arrayContaining([".gitignore", "README.md", "fixtures/one-line.yaml", "fixtures/two-lines.yaml", "package.json", "tools/build.mjs", "tools/plugin-test.mjs", ...own]));
    const p = (f: string) => join(tmp, name, f);
    const pkg = JSON.parse(readFileSync(p("package.json"), "utf8"));
    expect(pkg.scripts).toEqual({ build: "node tools/build.mjs", test: "node tools/build.mjs test" });
    expect(pkg.probegate).toMatchObject({ lang, name });
    expect(pkg.dependencies ?? pkg.devDependencies).toBeUndefined();
    // The SDK and the build script are copies of this tree's, the runner the packed SDK's bundle.
    const sdk = lang === "rust" ? ["sdk-rust/src/lib.rs", "vendor/probegate-sdk/src/lib.rs"] : ["sdk-c/probegate.h", "vendor/probegate-sdk-c/probegate.h"];
    expect(readFileSync(p(sdk[1]!))).toEqual(readFileSync(join(ROOT, "plugins", sdk[0]!)));
    expect(readFileSync(p("tools/build.mjs"))).toEqual(readFileSync(join(ROOT, "plugins", "native-build.mjs")));
    for (const f of files) if (!f.startsWith("tools/")) expect(readFileSync(p(f), "utf8"), f).not.toContain(ROOT);
    expect(parseYaml(readFileSync(p("fixtures/one-line.yaml"), "utf8")).expect).toMatchObject({ status: "fail", reason: "TooFewLines" });
  });

  it.each(["assemblyscript", "rust", "c"] as const)("writes every file of plugins/templates/shared and plugins/templates/%s, placeholders filled", async (lang) => {
    const name = `from-templates-${lang}`;
    const files = (await scaffoldPlugin(name, { dir: tmp, lang, source: "lnet.stats" })).map((f) => relative(join(tmp, name), f));
    for (const part of ["shared", lang]) {
      const dir = join(ROOT, "plugins", "templates", part);
      for (const rel of readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath ?? (e as { path: string }).path, e.name)))) {
        // Stored without the dot: npm pack leaves .gitignore files out of a package.
        const dest = rel === "gitignore" ? ".gitignore" : rel;
        expect(files, dest).toContain(dest);
        const text = readFileSync(join(tmp, name, dest), "utf8");
        expect(text, dest).not.toMatch(/\{\{\w+\}\}/);
        if (readFileSync(join(dir, rel), "utf8").includes("{{name}}")) expect(text, dest).toContain(name);
      }
    }
    expect(readFileSync(join(tmp, name, "fixtures", "two-lines.yaml"), "utf8")).toContain("  lnet.stats:\n");
  });

  it("rejects an unknown language", async () => {
    await expect(scaffoldPlugin("go-check", { dir: tmp, lang: "go" as "c" })).rejects.toThrow(/invalid language "go": use assemblyscript, rust, c/);
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
