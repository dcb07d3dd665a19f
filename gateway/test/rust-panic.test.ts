// Issue 31: a Rust plugin's panic!() message reaches `probegate plugin test`
// and the `[-]` line of a running gateway (the SDK's panic hook), instead of a
// bare `unreachable`. Skipped, by name, without a rustc that has wasm32.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runProbegate, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { untilReadyz } from "./helpers/readyz.js";
import { compileEcho } from "./hostile/build.js";
// @ts-expect-error: a plain .mjs build script, no types
import { buildProject, findRustc } from "../../plugins/native-build.mjs";

const LIB_RS = `use probegate_sdk::{Input, Manifest, Verdict};

fn manifest() -> Manifest {
    Manifest::new("panicky", "0.1.0", "panics on purpose")
}

fn check(input: &Input) -> Verdict {
    let depth = input.fact("depth").map_or(42, |_| 7);
    if depth > 0 {
        panic!("state is {} levels deep\\n[+]spoofed ok", depth);
    }
    Verdict::pass("Ok", String::from("never"))
}

probegate_sdk::export_plugin!(manifest, check);
`;

describe("a Rust plugin that panics", () => {
  const rust = findRustc();
  it.skipIf(!rust.ok)(
    rust.ok ? "names the panic and where it happened in plugin test and /readyz" : `names the panic (skipped: ${rust.why})`,
    async () => {
      const project = tempDir("probegate-panicky-");
      fs.mkdirSync(path.join(project, "src"));
      fs.writeFileSync(path.join(project, "src", "lib.rs"), LIB_RS);
      fs.writeFileSync(
        path.join(project, "package.json"),
        JSON.stringify({ name: "panicky", private: true, probegate: { lang: "rust", name: "panicky", sdk: path.join(ROOT, "plugins", "sdk-rust"), out: "build/panicky.wasm" } }),
      );
      const { wasm } = buildProject(project) as { wasm: string };

      const t = await runProbegate(["plugin", "test", wasm]);
      const out = t.stdout + t.stderr;
      expect(t.code, out).not.toBe(0);
      expect(out).toMatch(/PluginTrap/);
      expect(out).toMatch(/abort: panic: state is 42 levels deep.*at \.\/src\/lib\.rs:10:9/s);

      const plugins = tempDir("probegate-panicky-plugins-");
      fs.copyFileSync(wasm, path.join(plugins, "panicky.wasm"));
      fs.writeFileSync(path.join(plugins, "ready.wasm"), await compileEcho({ name: "ready-ok" }));
      const gw: GatewayProcess = await startGatewayProcess([`--plugins-dir=${plugins}`, "--mode=node", "--check-interval=1s", "--quarantine-after=100"]);
      try {
        const r = await untilReadyz(gw, (x) => x.text.includes("[-]panicky failed: PluginTrap"), "the panic reported", 30_000);
        const line = r.text.split("\n").find((l) => l.startsWith("[-]panicky"))!;
        expect(line).toBe(String.raw`[-]panicky failed: PluginTrap: abort: panic: state is 42 levels deep\n[+]spoofed ok at ./src/lib.rs:10:9`);
        expect(r.text.split("\n").some((l) => l.startsWith("[+]spoofed"))).toBe(false);
      } finally {
        await gw.stop();
      }
    },
    240_000,
  );
});
