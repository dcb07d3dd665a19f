// The scaffolded plugin must compile and behave, not just be written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { instantiateSync } from "@assemblyscript/loader";
import { scaffoldPlugin } from "../../gateway/src/cli/plugin-new";
import { ROOT, input, okSource } from "./harness";
// @ts-expect-error plain JS module without types
import { abiProblems, buildModule } from "../build.mjs";

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "pg-scaffold-"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("scaffoldPlugin", () => {
  it.each(["", "A", "-x", "x-", "has_underscore", "a".repeat(64), "sdk", "../up"])("rejects the name %j", async (name) => {
    await expect(scaffoldPlugin(name, { dir: tmp })).rejects.toThrow(/invalid plugin name/);
  });

  it("writes a skeleton that compiles to an ABI-clean plugin and checks its fixtures", async () => {
    const files = await scaffoldPlugin("line-count", { dir: tmp, sdkDir: join(ROOT, "plugins", "sdk") });
    expect(files.map((f) => relative(tmp, f)).sort()).toEqual(
      ["line-count/README.md", "line-count/fixtures/fail.txt", "line-count/fixtures/pass.txt", "line-count/index.ts"].sort(),
    );
    expect(readFileSync(files.find((f) => f.endsWith("README.md"))!, "utf8")).toContain("probegate plugin test");

    const wasm = await buildModule(relative(ROOT, join(tmp, "line-count", "index.ts")), join(tmp, "line-count.wasm"));
    const bytes = readFileSync(wasm);
    expect(abiProblems(bytes)).toEqual([]);
    const ex: any = instantiateSync(bytes, { env: { abort: () => { throw new Error("abort"); }, trace() {}, seed: () => 1 } }).exports;
    const run = (stdout: string) => {
      const ptr = ex.__pin(ex.__newString(JSON.stringify(input({ "proc.modules": okSource(stdout) }))));
      try {
        return JSON.parse(ex.__getString(ex.check(ptr)));
      } finally {
        ex.__unpin(ptr);
      }
    };
    expect(JSON.parse(ex.__getString(ex.manifest()))).toMatchObject({ abi: 1, name: "line-count", sources: ["proc.modules"] });
    expect(run(readFileSync(join(tmp, "line-count", "fixtures", "pass.txt"), "utf8"))).toMatchObject({ status: "pass", reason: "Ok" });
    expect(run(readFileSync(join(tmp, "line-count", "fixtures", "fail.txt"), "utf8"))).toMatchObject({ status: "fail", reason: "TooFewLines" });
    expect(run("")).toMatchObject({ status: "fail", reason: "ParseError" });
  });

  it("refuses to overwrite an existing plugin", async () => {
    await scaffoldPlugin("twice", { dir: tmp });
    await expect(scaffoldPlugin("twice", { dir: tmp })).rejects.toThrow(/already exists/);
  });

  it("finds the repo SDK on its own", async () => {
    const files = await scaffoldPlugin("auto-sdk", { dir: tmp });
    const index = readFileSync(files[0], "utf8");
    const m = /from "([^"]+)"/.exec(index)!;
    expect(existsSync(join(tmp, "auto-sdk", m[1], "index.ts"))).toBe(true);
  });
});
