// ABI v2 plugins in a running gateway, beside ABI v1 ones: net-interfaces in
// AssemblyScript, Rust and C, loaded together, report the same condition
// (status, reason, message) on every fixture a node can reproduce — the
// fixture's interfaces come from a fake `lnetctl net show` (through
// lnet-nets' fact) and their states from a fake sysfs; and hostile v2 modules
// are refused or quarantined with their reasons while the rest keeps
// answering. The Rust and C author's walk is plugin-author-walk-native.test.ts.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readFixture } from "../src/cli/plugin-test/fixture-file.js";
import { compareVerdict } from "../src/cli/plugin-test/fixture-run.js";
import { fakeLnet, netShowOver } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess } from "./helpers/gateway-process.js";
import { readyzConditions as conditions } from "./helpers/readyz.js";
import { gatewayTestScope } from "./helpers/test-scope.js";
import { op, v2Module } from "./hostile/wasm-asm.js";

const FIXTURES = join(ROOT, "plugins", "net-interfaces", "fixtures");
const BUILDS = {
  "net-interfaces": join(ROOT, "dist", "plugins", "net-interfaces.wasm"),
  "net-interfaces-rust": join(ROOT, "plugins", "examples", "net-interfaces-rust", "net-interfaces-rust.wasm"),
  "net-interfaces-c": join(ROOT, "plugins", "examples", "net-interfaces-c", "net-interfaces-c.wasm"),
};
const NAMES = Object.keys(BUILDS);

const scope = gatewayTestScope();
const { running, nodes } = scope;

async function until<T>(fn: () => Promise<T | null>, what: string, timeoutMs = 30_000): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v !== null) return v;
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** The fixture's operstate lines as (interface, state), or why sysfs cannot produce them. */
function reproducible(stdout: string): Array<[string, string]> | string {
  if (stdout.includes("\r")) return "CRLF (the gateway writes LF)";
  const lines = stdout.split("\n").filter((l) => l.trim().length > 0);
  if (lines.length === 0) return "no lines (the gateway lists every interface of the fact)";
  const out: Array<[string, string]> = [];
  for (const l of lines) {
    const f = l.trim().split(/\s+/);
    if (f.length !== 2 || !/^[A-Za-z0-9_.-]{1,15}$/.test(f[0]!)) return `a line the gateway never writes (${JSON.stringify(l)})`;
    out.push([f[0]!, f[1]!]);
  }
  return out;
}

describe("net-interfaces in three languages, one gateway", () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".yaml")).sort();
  for (const f of files) {
    const text = readFileSync(join(FIXTURES, f), "utf8");
    const stdoutFile = /stdoutFile: (.+)/.exec(text)?.[1]?.trim();
    const stdout = stdoutFile ? readFileSync(join(FIXTURES, stdoutFile), "utf8") : "";
    const shape = reproducible(stdout);
    const title = typeof shape === "string" ? `${f}: skipped: sysfs cannot produce it, ${shape}; the fixture runner covers it` : `${f}: the three report the same condition, the fixture's`;
    it.skipIf(typeof shape === "string")(
      title,
      async () => {
        const ifaces = shape as Array<[string, string]>;
        const c = await readFixture(join(FIXTURES, f));
        const node = fakeLnet({
          netShow: { out: netShowOver(ifaces.map(([i]) => i)) },
          // "absent" is what the gateway prints for an interface without a sysfs entry.
          operstate: Object.fromEntries(ifaces.filter(([, s]) => s !== "absent").map(([i, s]) => [i, `${s}\n`])),
        });
        nodes.push(node);
        const plugins = join(scope.path(), f.replace(/\.yaml$/, ""));
        mkdirSync(plugins);
        copyFileSync(join(ROOT, "dist", "plugins", "lnet-nets.wasm"), join(plugins, "lnet-nets.wasm"));
        for (const [name, file] of Object.entries(BUILDS)) {
          copyFileSync(file, join(plugins, `${name}.wasm`));
          if (c.config) writeFileSync(join(plugins, `${name}.json`), JSON.stringify(c.config));
        }
        const gw = await startGatewayProcess([`--path.sysfs=${node.sysfs}`, `--path.procfs=${node.procfs}`, "--check-interval=1s", `--plugins-dir=${plugins}`], { env: node.env });
        running.push(gw);
        const seen = await until(async () => {
          const cs = (await conditions(gw)).filter((x) => NAMES.includes(x.name));
          const done = cs.length === 3 && cs.every((x) => compareVerdict(c.expect, { ...x, status: x.status as "pass", facts: {} }).every((r) => r.ok));
          return done ? cs : null;
        }, `${NAMES.join(", ")} to report the fixture's verdict`);
        const [as, ...ported] = NAMES.map((n) => seen.find((x) => x.name === n)!);
        for (const p of ported) expect({ ...p, name: as!.name }).toMatchObject({ status: as!.status, reason: as!.reason, message: as!.message });
      },
      60_000,
    );
  }
});

describe("hostile ABI v2 modules in a running gateway", () => {
  it("a looping one is quarantined, refused ones are listed with their reasons, and the good ones keep answering", async () => {
    const plugins = join(scope.path(), "hostile");
    mkdirSync(plugins);
    writeFileSync(join(plugins, "spin.wasm"), v2Module("spin", { check: [...op.spin, ...op.unreachable] }));
    writeFileSync(join(plugins, "liar.wasm"), v2Module("liar", { manifest: JSON.stringify({ abi: 1, name: "liar", version: "1.0.0", modes: ["node"] }) }));
    writeFileSync(join(plugins, "mixed.wasm"), v2Module("mixed", { imports: [{ module: "env", name: "abort", params: ["i32", "i32", "i32", "i32"], results: [] }] }));
    writeFileSync(join(plugins, "good-v2.wasm"), v2Module("good-v2"));
    copyFileSync(BUILDS["net-interfaces-c"], join(plugins, "net-interfaces-c.wasm"));
    const node = fakeLnet({ netShow: { out: netShowOver(["eth0"]) }, operstate: { eth0: "up\n" } });
    nodes.push(node);
    copyFileSync(join(ROOT, "dist", "plugins", "lnet-nets.wasm"), join(plugins, "lnet-nets.wasm"));
    const gw = await startGatewayProcess(
      [`--path.sysfs=${node.sysfs}`, `--path.procfs=${node.procfs}`, `--plugins-dir=${plugins}`, "--check-interval=1s", "--plugin-timeout=200ms", "--quarantine-after=2", "--quarantine-backoff=30s"],
      { env: node.env },
    );
    running.push(gw);
    const text = await until(async () => {
      const t = await (await fetch(`http://${gw.http}/readyz?verbose`)).text();
      return t.includes("[-]spin failed: PluginQuarantined") && t.includes("[+]net-interfaces-c ok") ? t : null;
    }, "the looping module to be quarantined");
    expect(text).toMatch(/\[-\]spin failed: PluginQuarantined: .*PluginTimeout/);
    expect(text).toMatch(/\[!\]liar\.wasm refused: AbiMismatch: manifest says abi 1, but the module's imports and exports are ABI v2's/);
    expect(text).toMatch(/\[!\]mixed\.wasm refused: AbiMismatch: .*imports ABI v1's env\.abort/);
    expect(text).toContain("[+]good-v2 ok");
    // The gateway itself stays live, whatever its plugins do.
    expect((await fetch(`http://${gw.http}/livez`)).status).toBe(200);
  }, 60_000);
});
