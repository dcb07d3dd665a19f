// The plugin author's walk for Rust and C (ABI v2), outside this checkout:
// `probegate plugin new --lang rust|c`, `npm test` (build with the system's
// compiler, then every fixture through the gateway's runner), then the built
// modules in a running gateway's --plugins-dir beside an AssemblyScript check.
// Skipped, by name, without the compilers.
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fakeLnet } from "./helpers/fake-lnet.js";
import { BIN, ROOT, startGatewayProcess } from "./helpers/gateway-process.js";
import { gatewayTestScope } from "./helpers/test-scope.js";
import { runClean as sh } from "./helpers/run-clean.js";
import { untilReadyz } from "./helpers/readyz.js";
// @ts-expect-error: a plain .mjs build script, no types
import { findClang, findRustc } from "../../plugins/native-build.mjs";

const scope = gatewayTestScope();
const { running, nodes } = scope;

describe("the Rust and C author's walk", () => {
  const rust = findRustc();
  const clang = findClang();
  const missing = [rust, clang].filter((t) => !t.ok).map((t) => t.why);
  it.skipIf(missing.length > 0)(
    missing.length > 0
      ? `plugin new --lang rust|c → npm test → beside an AssemblyScript check in a gateway (skipped: ${missing.join("; ")})`
      : "plugin new --lang rust|c → npm test → beside an AssemblyScript check in a gateway",
    async () => {
      const plugins = join(scope.path(), "walk-plugins");
      mkdirSync(plugins);
      for (const lang of ["rust", "c"]) {
        const name = `lines-${lang}`;
        const created = await sh([process.execPath, BIN, "plugin", "new", name, "--lang", lang, "--dir", scope.path()], scope.path());
        expect(created.code, created.out).toBe(0);
        const project = join(scope.path(), name);
        // Standalone: nothing points back into this checkout.
        for (const f of ["package.json", "README.md", lang === "rust" ? "src/lib.rs" : "src/check.c"]) expect(readFileSync(join(project, f), "utf8")).not.toContain(ROOT);
        const test = await sh(["npm", "test"], project);
        expect(test.code, test.out).toBe(0);
        expect(test.out).toMatch(/^ok +one line fails — fail TooFewLines$/m);
        expect(test.out).toContain("2 passed, 0 failed");
        // A broken expectation fails with exit 1 and shows the plugin's log line.
        const pass = join(project, "fixtures", "two-lines.yaml");
        const good = readFileSync(pass, "utf8");
        writeFileSync(pass, good.replace("reason: Ok", "reason: Fine"));
        const broken = await sh(["npm", "test"], project);
        expect(broken.code, broken.out).toBe(1);
        expect(broken.out).toMatch(/trace: proc\.modules: 2 non-empty line\(s\)/);
        writeFileSync(pass, good);
        const wasm = join(project, "build", `${name}.wasm`);
        expect(existsSync(wasm)).toBe(true);
        copyFileSync(wasm, join(plugins, `${name}.wasm`));
      }
      copyFileSync(join(ROOT, "dist", "plugins", "kernel-modules.wasm"), join(plugins, "kernel-modules.wasm"));
      const node = fakeLnet({ modules: "lnet 1 0 - Live 0x0\nlustre 1 0 - Live 0x0\n" });
      nodes.push(node);
      const gw = await startGatewayProcess([`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", `--plugins-dir=${plugins}`], { env: node.env });
      running.push(gw);
      const has = (...lines: string[]) => (r: { text: string }) => lines.every((l) => r.text.split("\n").some((x) => x.startsWith(l)));
      await untilReadyz(gw, has("[+]lines-rust ok", "[+]lines-c ok", "[+]kernel-modules ok"), "the Rust, C and AssemblyScript checks to pass", 30_000);
      node.update({ modules: "lnet 1 0 - Live 0x0\n" });
      const after = (await untilReadyz(gw, has("[-]lines-rust failed: TooFewLines", "[-]lines-c failed: TooFewLines"), "the Rust and C checks to fail", 30_000)).text;
      expect(after).toContain("[-]lines-rust failed: TooFewLines: proc.modules printed 1 line(s); need 2");
      expect(after).toContain("[-]lines-c failed: TooFewLines: proc.modules printed 1 line(s); need 2");
      expect(after).toMatch(/\[-\]kernel-modules failed: ModulesMissing/);
    },
    240_000,
  );
});
