// Issue 17 end to end: quarantine that recovers, per-plugin configuration and
// several plugin directories, through a real gateway process, fake procfs and
// lnetctl, the bundled plugins and /readyz, /metrics.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { fakeLnet, type FakeLnet, type FakeLnetSpec } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { compileAs, compileEcho, compileHostile } from "./hostile/build.js";

const BUNDLED = path.join(ROOT, "dist", "plugins");

const running: GatewayProcess[] = [];
const nodes: FakeLnet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
  for (const n of nodes.splice(0)) n.cleanup();
});

let flaky: Uint8Array;
let flakyRebuilt: Uint8Array;
beforeAll(async () => {
  flaky = await compileHostile("flakymodules");
  const src = fs.readFileSync(path.join(ROOT, "gateway/test/hostile/assembly/flakymodules.ts"), "utf8");
  // Same behaviour, different bytes: a "new version" of the plugin.
  flakyRebuilt = await compileAs(`${src}\nexport const rebuilt: i32 = 2;\n`);
}, 120_000);

async function gatewayOn(spec: FakeLnetSpec, args: string[]) {
  const node = fakeLnet(spec);
  nodes.push(node);
  const gw = await startGatewayProcess(
    [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", "--log-level=info", ...args],
    { env: node.env },
  );
  running.push(gw);
  return { node, gw };
}

async function readyz(gw: GatewayProcess) {
  const res = await fetch(`http://${gw.http}/readyz?verbose`);
  return { status: res.status, text: await res.text() };
}

async function readyzJson(gw: GatewayProcess) {
  const res = await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } });
  return (await res.json()) as {
    conditions: Array<{ name: string; status: string; reason: string; message: string; plugin: { file: string; dir?: string; config?: { file: string; sha256: string } } }>;
    refusals: Array<{ file: string; reason: string; message: string }>;
    overrides: Array<{ name: string; file: string; replaced: string }>;
  };
}

/** Polls /readyz?verbose until `pred` holds; generous because the cores are shared. */
async function until(gw: GatewayProcess, pred: (text: string) => boolean, what: string, timeoutMs = 30_000) {
  const start = Date.now();
  let last = "";
  while (Date.now() - start < timeoutMs) {
    last = (await readyz(gw)).text;
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}; last /readyz?verbose:\n${last}`);
}

async function metric(gw: GatewayProcess, name: string): Promise<number> {
  const text = await (await fetch(`http://${gw.http}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(name) && !l.startsWith("#"));
  return line ? Number(line.split(" ").at(-1)) : NaN;
}

const sha256 = (p: string) => createHash("sha256").update(fs.readFileSync(p)).digest("hex");

describe("quarantine recovers", () => {
  it("a plugin that traps while its input says so is quarantined, then passes again after the input changes, with no file change", async () => {
    const dir = tempDir("probegate-q-");
    fs.writeFileSync(path.join(dir, "flaky-modules.wasm"), flaky);
    const { gw, node } = await gatewayOn({ base: "healthy", modules: "explode 1 0 - Live 0x0\n" }, [
      `--plugins-dir=${dir}`,
      "--quarantine-after=2",
      "--quarantine-backoff=1s",
      "--quarantine-backoff-max=2s",
    ]);
    const q = await until(gw, (t) => t.includes("flaky-modules failed: PluginQuarantined"), "quarantine");
    expect(q).toMatch(/next retry in \d+s \(at \d{4}-\d\d-\d\dT[^)]+\)/);
    expect(await metric(gw, "probegate_plugins_quarantined")).toBe(1);

    // Still faulting: retries happen, each failed one keeps it quarantined.
    const start = Date.now();
    while (Date.now() - start < 30_000 && !((await metric(gw, 'probegate_plugin_quarantine_retries_total{plugin="flaky-modules"}')) >= 1)) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await metric(gw, 'probegate_plugin_quarantine_retries_total{plugin="flaky-modules"}')).toBeGreaterThanOrEqual(1);
    expect((await readyz(gw)).text).toContain("flaky-modules failed: PluginQuarantined");

    // The cause goes away; the file is untouched.
    fs.writeFileSync(path.join(node.procfs, "modules"), "lnet 1 0 - Live 0x0\n");
    await until(gw, (t) => t.includes("[+]flaky-modules ok"), "recovery within the backoff");
    expect(await metric(gw, "probegate_plugins_quarantined")).toBe(0);
    // One log line per transition, not per retry.
    const logs = gw.stderr();
    expect(logs.split("\n").filter((l) => l.includes('"msg":"plugin quarantined"')).length).toBe(1);
    expect(logs.split("\n").filter((l) => l.includes("plugin quarantine ended: a retry succeeded")).length).toBe(1);
  });

  it("a change of the plugin file's content ends the quarantine at once, long before the backoff", async () => {
    const dir = tempDir("probegate-q-");
    fs.writeFileSync(path.join(dir, "flaky-modules.wasm"), flaky);
    const { gw } = await gatewayOn({ base: "healthy", modules: "explode 1 0 - Live 0x0\n" }, [
      `--plugins-dir=${dir}`,
      "--quarantine-after=3",
      "--quarantine-backoff=10m",
      "--quarantine-backoff-max=10m",
    ]);
    const q = await until(gw, (t) => t.includes("flaky-modules failed: PluginQuarantined"), "quarantine");
    expect(q).toMatch(/next retry in (5\d\d|600)s/);
    fs.writeFileSync(path.join(dir, "flaky-modules.wasm"), flakyRebuilt);
    // The new content runs at once (and, the input being unchanged, traps: a plain fault again).
    await until(gw, (t) => t.includes("flaky-modules failed: PluginTrap"), "the new file runs");
    expect(await metric(gw, "probegate_plugins_quarantined")).toBe(0);
    expect(gw.stderr()).toContain("plugin quarantine ended: its file or configuration changed");
  });
});

describe("per-plugin configuration", () => {
  it("on the ni-down node, lnet-nets.yaml with optionalNets: [tcp] turns fail into warn; a typo changes nothing; removing it turns it back", async () => {
    const conf = tempDir("probegate-conf-");
    const { gw } = await gatewayOn({ base: "ni-down" }, [`--plugins-dir=${BUNDLED}`, `--plugins-dir=${conf}`]);
    await until(gw, (t) => t.includes("[-]lnet-nets failed: NiDown"), "NiDown without configuration");

    const file = path.join(conf, "lnet-nets.yaml");
    fs.writeFileSync(file, "# tcp is the management net here\noptionalNets: [tcp]\n");
    await until(gw, (t) => t.includes("[+]lnet-nets warn: NiDegraded") && t.includes("optional net tcp"), "warn with optionalNets");
    let json = await readyzJson(gw);
    const nets = json.conditions.find((c) => c.name === "lnet-nets")!;
    expect(nets.plugin.config).toEqual({ file, sha256: sha256(file) });

    fs.writeFileSync(file, "optionalNets: [tcp]\nminUpPerNett: 1\n");
    const bad = await until(gw, (t) => t.includes("ConfigInvalid"), "the typo refused");
    expect(bad).toContain(`[!]${conf}/lnet-nets.yaml refused: ConfigInvalid: ${file}:2: unknown key "minUpPerNett" (known keys: optionalNets, requiredNets, minUpPerNet, ignoreNids, lnetConfiguredAt)`);
    // The last good configuration stays in force.
    expect(bad).toContain("[+]lnet-nets warn: NiDegraded");
    json = await readyzJson(gw);
    expect(json.conditions.find((c) => c.name === "lnet-nets")!.plugin.config!.sha256).not.toBe(sha256(file));

    fs.unlinkSync(file);
    const back = await until(gw, (t) => t.includes("[-]lnet-nets failed: NiDown"), "defaults again");
    expect(back).not.toContain("ConfigInvalid");
    expect(gw.stderr()).toContain("plugin configuration removed; defaults apply");
  });

  it("a bad configuration at start fails the check with ConfigInvalid instead of running with defaults", async () => {
    const conf = tempDir("probegate-conf-");
    fs.writeFileSync(path.join(conf, "kernel-modules.yaml"), "modules: lnet\n");
    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${BUNDLED}`, `--plugins-dir=${conf}`]);
    const t = await until(gw, (x) => x.includes("]kernel-modules "), "a kernel-modules condition");
    expect(t).toContain("[-]kernel-modules failed: ConfigInvalid:");
    expect(t).toContain("modules: expected a list of strings");
    expect((await readyz(gw)).status).toBe(503);

    fs.writeFileSync(path.join(conf, "kernel-modules.yaml"), "modules: [lnet, ko2iblnd]\n");
    await until(gw, (x) => x.includes("[-]kernel-modules failed: ModulesMissing: kernel module(s) not loaded: ko2iblnd"), "the fixed configuration applies");
  });

  it("a configuration for a plugin that declares none, or for no loaded plugin, is refused by name", async () => {
    const conf = tempDir("probegate-conf-");
    // The bundled checks all declare keys now (lnetConfiguredAt); this one declares none.
    fs.writeFileSync(path.join(conf, "site-echo.wasm"), await compileEcho({ name: "site-echo", modes: ["node"] }));
    fs.writeFileSync(path.join(conf, "site-echo.yaml"), "anything: 1\n");
    fs.writeFileSync(path.join(conf, "lnet-net.json"), '{"optionalNets": ["tcp"]}');
    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${BUNDLED}`, `--plugins-dir=${conf}`]);
    const t = await until(gw, (x) => x.includes("lnet-net.json refused") && x.includes("site-echo.yaml refused") && x.includes("]site-echo "), "both refused");
    expect(t).toMatch(/site-echo\.yaml refused: ConfigInvalid: .*plugin site-echo declares no configuration keys/);
    expect(t).toMatch(/lnet-net\.json refused: ConfigInvalid: .*no plugin named lnet-net is loaded/);
    expect(t).toContain("[-]site-echo failed: ConfigInvalid");

    // Once it has run with a valid (here: no) configuration, a stray file no longer stops it.
    fs.unlinkSync(path.join(conf, "site-echo.yaml"));
    await until(gw, (x) => x.includes("[+]site-echo ok") && !x.includes("site-echo.yaml refused"), "site-echo runs again");
    fs.writeFileSync(path.join(conf, "site-echo.yaml"), "anything: 2\n");
    const later = await until(gw, (x) => x.includes("site-echo.yaml refused"), "refused again");
    expect(later).toContain("[+]site-echo ok");
  });
});

describe("several plugin directories", () => {
  it("a plugin name in a later directory replaces the earlier one's, shown in /readyz?verbose and JSON; removing it restores the first", async () => {
    const extra = tempDir("probegate-extra-");
    // Its verdict follows <procfs>/modules: "warn".
    const override = path.join(extra, "site-modules.wasm");
    fs.writeFileSync(override, await compileEcho({ name: "kernel-modules", sources: ["proc.modules"] }));
    const { gw } = await gatewayOn({ base: "healthy", modules: "warn" }, [`--plugins-dir=${BUNDLED}`, `--plugins-dir=${extra}`]);
    const t = await until(gw, (x) => x.includes("[+]kernel-modules warn: EchoWarn"), "the override runs");
    expect(t).toContain(`[+]plugin kernel-modules: ${override} overrides ${path.join(BUNDLED, "kernel-modules.wasm")}`);
    const json = await readyzJson(gw);
    expect(json.overrides).toEqual([{ name: "kernel-modules", file: override, replaced: path.join(BUNDLED, "kernel-modules.wasm") }]);
    expect(json.conditions.find((c) => c.name === "kernel-modules")!.plugin).toMatchObject({ file: "site-modules.wasm", dir: extra });
    expect(json.refusals).toEqual([]);

    fs.unlinkSync(override);
    await until(gw, (x) => /\]kernel-modules failed: ParseError/.test(x) && !x.includes("overrides"), "the bundled plugin again");
  });

  it("a missing later directory is not an error: the earlier one serves until it appears", async () => {
    const parent = tempDir("probegate-late-");
    const late = path.join(parent, "plugins.d");
    const { gw } = await gatewayOn({ base: "healthy" }, [`--plugins-dir=${BUNDLED}`, `--plugins-dir=${late}`]);
    await until(gw, (x) => x.includes("[+]kernel-modules ok"), "bundled set");
    fs.mkdirSync(late);
    fs.writeFileSync(path.join(late, "kernel-modules.yaml"), "modules: [lnet, lustre, nope]\n");
    await until(gw, (x) => x.includes("kernel module(s) not loaded: nope"), "config from the new directory");
  });
});
