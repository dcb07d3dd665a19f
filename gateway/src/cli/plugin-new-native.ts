// The Rust and C projects of `probegate plugin new --lang rust|c` (ABI v2).
// A project is self-contained: the SDK's sources in vendor/, the build script
// (plugins/native-build.mjs) and the gateway's fixture runner (the bundle the
// packed AssemblyScript SDK carries) in tools/, so `npm test` needs node and
// the compiler, nothing from a registry. The project's own files are
// plugins/templates/shared/ and plugins/templates/<lang>/.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type ProjectFile, templateFiles, walk } from "./plugin-templates.js";

type Lang = "rust" | "c";

/** Every file of a new Rust or C project, from the probegate tree at `root`. */
export function nativeProjectFiles(lang: Lang, name: string, source: string, root: string): ProjectFile[] {
  const sdkDir = join(root, "plugins", lang === "rust" ? "sdk-rust" : "sdk-c");
  const buildScript = join(root, "plugins", "native-build.mjs");
  const runner = join(root, "dist", "sdk", "package", "runner", "plugin-test.mjs");
  for (const [path, hint] of [
    [sdkDir, "this installation does not ship the SDK sources"],
    [buildScript, "this installation does not ship plugins/native-build.mjs"],
    [runner, "run `npm run build` (or `npm run sdk:pack`) in " + root],
  ] as const) {
    if (!existsSync(path)) throw new Error(`${path} is missing: ${hint}`);
  }
  const vendor = lang === "rust" ? "vendor/probegate-sdk" : "vendor/probegate-sdk-c";
  return [
    ...templateFiles(root, lang, { name, source, vendor }),
    { rel: "tools/build.mjs", from: buildScript },
    { rel: "tools/plugin-test.mjs", from: runner },
    ...walk(sdkDir).map((rel) => ({ rel: `${vendor}/${rel}`, from: join(sdkDir, rel) })),
  ];
}
