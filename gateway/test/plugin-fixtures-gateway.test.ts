// A fixture that passes in `plugin test --fixtures` gives the same verdict in
// a real gateway whose fake lnetctl prints the same outputs (exit status,
// stderr, a hang, an overflow, a missing binary). And plugin trace lines reach
// the gateway log at debug, rate-limited per plugin.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { pluginTest } from "./helpers/plugin-test-cli.js";
import { fakeLnet, type FakeCommand, type FakeLnet } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { TRACE_LIMITS } from "../src/runtime/trace-log.js";
import { compileHostile } from "./hostile/build.js";
import { tempDir } from "./hostile/harness.js";

const NETS = join(ROOT, "dist", "plugins", "lnet-nets.wasm");
const fixture = (p: string) => join(ROOT, "plugins", "fixtures", p);

let dir: { path: string; cleanup: () => Promise<void> };
let pluginsDir: string;
beforeAll(async () => {
  dir = await tempDir();
  pluginsDir = join(dir.path, "plugins");
  mkdirSync(pluginsDir);
  copyFileSync(NETS, join(pluginsDir, "lnet-nets.wasm"));
});
afterAll(() => dir.cleanup());

const running: GatewayProcess[] = [];
const nodes: FakeLnet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
  for (const n of nodes.splice(0)) n.cleanup();
});

const cli = (...argv: string[]) => pluginTest(dir.path, ...argv);

interface Scenario {
  name: string;
  /** What the fake lnetctl does. */
  fake: FakeCommand;
  /** The same, as a fixture's source entry (stdout/stderr files are written beside it). */
  saved: { stdout?: string; stderr?: string; exitCode?: number; fault?: string };
}

let seq = 0;
/**
 * Asks the runner what the plugin says to `saved`, writes that as a fixture's
 * expectation, checks the fixture passes, and returns the /readyz line the
 * gateway must show for it.
 */
async function expectedLine(s: Scenario): Promise<string> {
  const d = join(dir.path, `s${++seq}`);
  mkdirSync(d);
  const lines = ["sources:", "  lnetctl.net_show:"];
  const flags: string[] = [];
  if (s.saved.stdout !== undefined) {
    writeFileSync(join(d, "out.txt"), s.saved.stdout);
    lines.push("    stdoutFile: out.txt");
    flags.push("--source", `lnetctl.net_show=${join(d, "out.txt")}`);
  }
  if (s.saved.stderr !== undefined) {
    writeFileSync(join(d, "err.txt"), s.saved.stderr);
    lines.push("    stderrFile: err.txt");
    flags.push("--source-stderr", `lnetctl.net_show=${join(d, "err.txt")}`);
  }
  if (s.saved.exitCode !== undefined) {
    lines.push(`    exitCode: ${s.saved.exitCode}`);
    flags.push("--source-exit", `lnetctl.net_show=${s.saved.exitCode}`);
  }
  if (s.saved.fault !== undefined) {
    lines.push(`    fault: ${s.saved.fault}`);
    flags.push("--source-fault", `lnetctl.net_show=${s.saved.fault}`);
  }
  const once = await cli(NETS, ...flags, "--json");
  const v = JSON.parse(once.stdout).outcome.output as { status: string; reason: string; message: string };
  expect(v.status).toBe("fail");
  lines.push("expect:", `  status: ${v.status}`, `  reason: ${v.reason}`, `  message: ${JSON.stringify(v.message)}`);
  writeFileSync(join(d, `${s.name}.yaml`), `${lines.join("\n")}\n`);
  const r = await cli(NETS, "--fixtures", d);
  expect(r.stdout, r.stdout).toContain("1 passed, 0 failed");
  expect(r.code).toBe(0);
  return `[-]lnet-nets failed: ${v.reason}: ${v.message}`;
}

async function untilLine(gw: GatewayProcess, want: string, timeoutMs = 30_000): Promise<void> {
  const start = Date.now();
  let last = "";
  while (Date.now() - start < timeoutMs) {
    last = await (await fetch(`http://${gw.http}/readyz?verbose`)).text();
    if (last.split("\n").includes(want)) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for the line\n  ${want}\nlast /readyz?verbose:\n${last}`);
}

describe("runner and gateway agree", () => {
  it("for output, exit status, stderr, an overflow and a hang of lnetctl net show", async () => {
    const niDown = (await import("node:fs")).readFileSync(fixture("net_show/ni-down.yaml"), "utf8");
    const errDoc = (await import("node:fs")).readFileSync(fixture("net_show/lnet-down-error.yaml"), "utf8");
    const big = `net:\n${"    - net type: tcp\n      local NI(s):\n        - nid: 10.1.0.4@tcp\n          status: up\n".repeat(16_000)}`;
    expect(big.length).toBeGreaterThan(1024 * 1024);
    const scenarios: Scenario[] = [
      { name: "ni-down", fake: { out: niDown, exit: 0 }, saved: { stdout: niDown } },
      { name: "exit-1", fake: { out: errDoc, err: "lnetctl: cannot get networks\n", exit: 1 }, saved: { stdout: errDoc, stderr: "lnetctl: cannot get networks\n", exitCode: 1 } },
      { name: "overflow", fake: { out: big, exit: 0 }, saved: { stdout: big } },
      { name: "hang", fake: { out: "net:\n", exit: 0, delayMs: 600_000 }, saved: { stdout: "", fault: "timeout" } },
    ];
    const node = fakeLnet({ base: "healthy" });
    nodes.push(node);
    const gw = await startGatewayProcess(
      [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", "--log-level=info", `--plugins-dir=${pluginsDir}`],
      { env: node.env },
    );
    running.push(gw);
    for (const s of scenarios) {
      const want = await expectedLine(s);
      node.clear("net_show");
      node.update({ netShow: s.fake });
      await untilLine(gw, want);
    }
  }, 180_000);

  it("for an lnetctl that is not installed", async () => {
    const want = await expectedLine({ name: "not-found", fake: {}, saved: { fault: "not-found" } });
    const node = fakeLnet({ base: "healthy" });
    nodes.push(node);
    const emptyBin = join(dir.path, "empty-bin");
    mkdirSync(emptyBin, { recursive: true });
    const gw = await startGatewayProcess(
      [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", "--log-level=info", `--plugins-dir=${pluginsDir}`],
      { env: { ...node.env, PATH: emptyBin } },
    );
    running.push(gw);
    await untilLine(gw, want);
  }, 60_000);
});

describe("trace lines in the gateway log", () => {
  it("are logged at debug with the plugin's file, and rate-limited per plugin", async () => {
    const d = join(dir.path, "tracer-plugins");
    mkdirSync(d);
    writeFileSync(join(d, "tracer.wasm"), await compileHostile("tracer"));
    const started = Date.now();
    const gw = await startGatewayProcess(["--check-interval=1s", "--log-level=debug", `--plugins-dir=${d}`]);
    running.push(gw);
    const traces = () => gw.logs().filter((l) => l.msg === "plugin trace");
    // The plugin traces 8 lines (the host's per-call cap) on every check, so
    // rounds pile up far more than the budget; once the budget has refilled,
    // the next line logged says how many were dropped meanwhile.
    const start = Date.now();
    while (!traces().some((l) => typeof l.droppedTraces === "number") && Date.now() - start < 60_000) {
      await new Promise((r) => setTimeout(r, 200));
    }
    const lines = traces();
    expect(lines[0]).toMatchObject({ plugin: "tracer.wasm", trace: "tracing 0", level: 20 });
    const withDrops = lines.find((l) => typeof l.droppedTraces === "number")!;
    expect(withDrops, JSON.stringify(lines.slice(-3))).toBeDefined();
    expect(withDrops.droppedTraces as number).toBeGreaterThan(0);
    // Never more than the budget allows over the time the gateway has run.
    const elapsedMs = Date.now() - started;
    expect(traces().length).toBeLessThanOrEqual(TRACE_LIMITS.burst + Math.ceil(elapsedMs / TRACE_LIMITS.refillMs));
  }, 90_000);

  it("are not logged above debug", async () => {
    const d = join(dir.path, "tracer-plugins");
    const gw = await startGatewayProcess(["--check-interval=1s", "--log-level=info", `--plugins-dir=${d}`]);
    running.push(gw);
    const start = Date.now();
    while (!gw.logs().some((l) => l.msg === "plugin loaded") && Date.now() - start < 30_000) await new Promise((r) => setTimeout(r, 100));
    // Several check rounds.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(gw.logs().filter((l) => l.msg === "plugin trace")).toEqual([]);
  }, 60_000);
});
