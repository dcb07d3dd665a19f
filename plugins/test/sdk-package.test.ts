// plugins/sdk as an npm package: its version follows the ABI, and the packed
// tarball (npm run build) holds the sources, the build step and the runner.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { findPackedSdk } from "../../gateway/src/cli/plugin-new";
import { ABI_V1 } from "../../gateway/src/runtime/abi/v1";
import { parseManifest } from "../../gateway/src/runtime/schema";
import { ROOT } from "./harness";
// @ts-expect-error plain JS module; types in tools/build.d.mts
import { ABI_VERSION, ALLOWED_IMPORTS } from "../sdk/tools/build.mjs";

const sdk = JSON.parse(readFileSync(join(ROOT, "plugins", "sdk", "package.json"), "utf8"));

describe("@probegate/plugin-sdk", () => {
  it("has the ABI as its major version, in step with the SDK source and the gateway", () => {
    expect(sdk.name).toBe("@probegate/plugin-sdk");
    expect(Number(sdk.version.split(".")[0])).toBe(sdk.probegate.abi);
    expect(ABI_VERSION).toBe(sdk.probegate.abi);
    expect(readFileSync(join(ROOT, "plugins", "sdk", "abi.ts"), "utf8")).toContain(`export const ABI_VERSION: i32 = ${sdk.probegate.abi};`);
    const m = { abi: sdk.probegate.abi, name: "x", version: "1.0.0", description: "", sources: [], modes: ["node"] };
    expect(parseManifest(JSON.stringify(m)).ok).toBe(true);
    expect(parseManifest(JSON.stringify({ ...m, abi: sdk.probegate.abi + 1 })).ok).toBe(false);
  });

  it("pins the compiler this repository builds with, and allows exactly the gateway's imports", () => {
    const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    expect(sdk.peerDependencies.assemblyscript).toBe(root.devDependencies.assemblyscript);
    // The gateway's list is ABI v1's descriptor (the loader checks modules against it).
    expect([...ABI_V1.imports.keys()]).toEqual([...ALLOWED_IMPORTS]);
  });

  it("is packed by npm run build with its sources, compiler options, build step, types, README and runner", () => {
    const { tarball } = findPackedSdk();
    const files = execFileSync("tar", ["tzf", tarball], { encoding: "utf8" }).trim().split("\n").sort();
    for (const f of ["index.ts", "abi.ts", "log.ts", "asconfig.json", "tools/build.mjs", "tools/build.d.mts", "tools/cli.mjs", "runner/plugin-test.mjs", "README.md", "package.json"]) {
      expect(files).toContain(`package/${f}`);
    }
    expect(files.some((f) => f.includes("test") && !f.includes("plugin-test"))).toBe(false);
  });
});
