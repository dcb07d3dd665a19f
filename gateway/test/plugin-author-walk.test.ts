// The plugin author's walk, as documented, outside this checkout: `probegate
// plugin new` into an empty directory, `npm install` (AssemblyScript from the
// registry or npm's cache, the SDK from the vendored tarball), `npm run build`,
// `npm test`, then the built .wasm in a running gateway's --plugins-dir.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fakeLnet } from "./helpers/fake-lnet.js";
import { BIN, ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { gatewayTestScope } from "./helpers/test-scope.js";
import { runClean } from "./helpers/run-clean.js";

const scope = gatewayTestScope();
const { running, nodes } = scope;

const sh = runClean;

async function untilReadyz(gw: GatewayProcess, line: string, timeoutMs = 30_000): Promise<string> {
  const start = Date.now();
  let last = "";
  while (Date.now() - start < timeoutMs) {
    last = await (await fetch(`http://${gw.http}/readyz?verbose`)).text();
    if (last.split("\n").includes(line)) return last;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${line}; last /readyz?verbose:\n${last}`);
}

describe("plugin author walk", () => {
  it("plugin new → npm install → npm run build → npm test → a check in /readyz?verbose", async () => {
    expect(scope.path().startsWith(ROOT)).toBe(false);
    expect(tmpdir().startsWith(ROOT)).toBe(false);
    const started = Date.now();

    const created = await sh([process.execPath, BIN, "plugin", "new", "mount-lines", "--dir", scope.path()], scope.path());
    expect(created.code, created.out).toBe(0);
    const project = join(scope.path(), "mount-lines");
    const pkg = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    expect(pkg.devDependencies.assemblyscript).toBe(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).devDependencies.assemblyscript);
    expect(pkg.devDependencies["@probegate/plugin-sdk"]).toBe("file:vendor/probegate-plugin-sdk-1.0.0.tgz");
    // Nothing in the project points back into this checkout.
    for (const f of ["package.json", "asconfig.json", "assembly/index.ts", "README.md"]) {
      expect(readFileSync(join(project, f), "utf8")).not.toContain(ROOT);
    }

    const install = await sh(["npm", "install", "--no-audit", "--no-fund", "--prefer-offline"], project);
    expect(install.code, install.out).toBe(0);
    const build = await sh(["npm", "run", "build"], project);
    expect(build.code, build.out).toBe(0);
    expect(build.out).toMatch(/built build\/mount-lines\.wasm \(\d+ bytes/);
    const test = await sh(["npm", "test"], project);
    expect(test.code, test.out).toBe(0);
    expect(test.out).toMatch(/^ok +one line fails — fail TooFewLines$/m);
    expect(test.out).toMatch(/^ok +two lines pass — pass Ok$/m);
    expect(test.out).toContain("2 passed, 0 failed");
    const walkMs = Date.now() - started;
    // Reported, not asserted (a shared machine): the time of the walk from an empty directory.
    process.stderr.write(`plugin author walk (new, install, build, test): ${walkMs} ms\n`);

    // A broken expectation fails `npm test` with exit 1 and the plugin's log() line.
    const pass = join(project, "fixtures", "two-lines.yaml");
    writeFileSync(pass, readFileSync(pass, "utf8").replace("reason: Ok", "reason: Fine"));
    const broken = await sh(["npm", "test"], project);
    expect(broken.code).toBe(1);
    expect(broken.out).toMatch(/✗ reason +Fine +Ok/);
    expect(broken.out).toMatch(/trace: proc\.modules: 2 non-empty line\(s\)/);
    expect(broken.out).toContain("1 passed, 1 failed");

    // The built module, as is, in a running gateway.
    const wasm = join(project, "build", "mount-lines.wasm");
    expect(existsSync(wasm)).toBe(true);
    const node = fakeLnet({ base: "healthy", modules: "lnet 1 0 - Live 0x0\nlustre 1 0 - Live 0x0\n" });
    nodes.push(node);
    const gw = await startGatewayProcess(
      [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", `--plugins-dir=${join(project, "build")}`],
      { env: node.env },
    );
    running.push(gw);
    await untilReadyz(gw, "[+]mount-lines ok");
    node.update({ modules: "lnet 1 0 - Live 0x0\n" });
    await untilReadyz(gw, "[-]mount-lines failed: TooFewLines: proc.modules printed 1 line(s); need 2");
  }, 300_000);
});
