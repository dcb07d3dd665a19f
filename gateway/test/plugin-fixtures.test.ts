// `probegate plugin test --fixtures`: fixture files run through the gateway's
// own sandbox, input builder and source replay, against the bundled plugins.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pluginTest } from "./helpers/plugin-test-cli.js";
import { ROOT } from "./helpers/gateway-process.js";
import { compileHostile } from "./hostile/build.js";
import { tempDir } from "./hostile/harness.js";

const NETS = join(ROOT, "dist", "plugins", "lnet-nets.wasm");
const MODULES = join(ROOT, "dist", "plugins", "kernel-modules.wasm");
const PING = join(ROOT, "dist", "plugins", "lnet-self-ping.wasm");
const NI_DOWN = join(ROOT, "plugins", "fixtures", "net_show", "ni-down.yaml");
const IMPORTS = join(ROOT, "dist", "plugins", "lustre-imports.wasm");
const VOLUME_HEALTH = join(ROOT, "dist", "plugins", "volume-lustre-health.wasm");
const LUSTRE = join(ROOT, "plugins", "fixtures", "lustre");

let dir: { path: string; cleanup: () => Promise<void> };
beforeAll(async () => {
  dir = await tempDir();
  writeFileSync(join(dir.path, "tracer.wasm"), await compileHostile("tracer"));
}, 120_000);
afterAll(() => dir.cleanup());

let seq = 0;
/** Writes fixture files into a fresh directory; returns it. */
function fixtures(files: Record<string, string>): string {
  const d = join(dir.path, `case-${++seq}`);
  mkdirSync(d, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}

const run = (...argv: string[]) => pluginTest(dir.path, ...argv);

const niDown = `name: one NI down
facts: {lnet.selfNid: 10.1.0.4@tcp}
sources:
  lnetctl.net_show:
    stdoutFile: ${NI_DOWN}
expect:
  status: fail
  reason: NiDown
  message: "10.1.0.4@tcp (down)"
  facts: {lnet.interfaces: eth0}
`;

describe("fixture files", () => {
  it("passes a matching case: one line per case, then the summary, exit 0", async () => {
    const d = fixtures({ "ni-down.yaml": niDown });
    const r = await run(NETS, "--fixtures", d);
    expect(r.stdout).toMatch(/^ok +one NI down — fail NiDown$/m);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("1 passed, 0 failed");
    expect(r.code).toBe(0);
  });

  it("reads stdoutFile relative to the fixture and takes several paths after --fixtures", async () => {
    const d = fixtures({ "out.txt": "net:\n    - net type: lo\n", "lo.yaml": "sources:\n  lnetctl.net_show: {stdoutFile: out.txt}\nexpect: {status: fail, reason: NoNonLoopbackNet}\n" });
    const e = fixtures({ "ni-down.yaml": niDown });
    const r = await run(NETS, "--fixtures", join(d, "lo.yaml"), e);
    expect(r.stdout).toContain("ok    lo — fail NoNonLoopbackNet");
    expect(r.stdout).toContain("2 passed, 0 failed");
    expect(r.code).toBe(0);
  });

  it("reports a mismatch side by side with exit 1, and still runs the other cases", async () => {
    const d = fixtures({
      "a-wrong.yaml": niDown.replace("reason: NiDown", "reason: NetsUp").replace("status: fail", "status: pass").replace("eth0}", "eth9}"),
      "b-right.yaml": niDown,
    });
    const r = await run(NETS, "--fixtures", d);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAIL {2}one NI down \(case-\d+\/a-wrong\.yaml\) — got fail NiDown$/m);
    expect(r.stdout).toMatch(/^ +expected +actual$/m);
    expect(r.stdout).toMatch(/^ +✗ status +pass +fail$/m);
    expect(r.stdout).toMatch(/^ +✗ reason +NetsUp +NiDown$/m);
    expect(r.stdout).toMatch(/^ +✗ facts\.lnet\.interfaces +eth9 +eth0$/m);
    // A field that matched is shown without the mark.
    expect(r.stdout).toMatch(/^ {6}message +…10\.1\.0\.4@tcp \(down\)… +.*10\.1\.0\.4@tcp \(down\)/m);
    expect(r.stdout).toContain("ok    one NI down — fail NiDown");
    expect(r.stdout.trim().split("\n").at(-1)).toBe("1 passed, 1 failed");
  });

  it("refuses malformed fixtures with the key and its line, exit 2", async () => {
    const d = fixtures({
      "typo.yaml": "name: typo\nsources:\n  lnetctl.net_show:\n    stdot: hi\nexpect:\n  status: pass\n  colour: red\n",
      "syntax.yaml": "expect:\n  status: [pass\n",
      "no-expect.yaml": "sources: {}\n",
      "both.yaml": "sources:\n  lnetctl.net_show: {stdout: a, stdoutFile: b}\nexpect: {status: pass}\n",
      "missing-file.yaml": "sources:\n  lnetctl.net_show: {stdoutFile: nowhere.txt}\nexpect: {status: pass}\n",
      "bad-status.yaml": "expect: {status: ok}\n",
      "bad-fault.yaml": "sources:\n  lnetctl.net_show: {fault: hang}\nexpect: {status: fail}\n",
      "unknown-source.yaml": "sources:\n  lnetctl.net_shw: {stdout: x}\nexpect: {status: fail}\n",
      "z-good.yaml": niDown,
    });
    const r = await run(NETS, "--fixtures", d);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/typo\.yaml:4: unknown key "stdot" in sources\.lnetctl\.net_show/);
    expect(r.stdout).toMatch(/typo\.yaml:7: unknown key "colour" in expect/);
    expect(r.stdout).toMatch(/syntax\.yaml:\d+: YAML syntax/);
    expect(r.stdout).toMatch(/no-expect\.yaml:1: missing expect/);
    expect(r.stdout).toMatch(/both\.yaml:2: .*give stdout or stdoutFile, not both/);
    expect(r.stdout).toMatch(/missing-file\.yaml:2: stdoutFile nowhere\.txt: cannot read: ENOENT/);
    expect(r.stdout).toMatch(/bad-status\.yaml:1: expect\.status: /);
    expect(r.stdout).toMatch(/bad-fault\.yaml:2: sources\.lnetctl\.net_show\.fault: /);
    expect(r.stdout).toMatch(/unknown-source\.yaml:2: unknown source lnetctl\.net_shw/);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("1 passed, 0 failed, 8 errors");
  });

  it("config: is the plugin's configuration, checked like NAME.yaml; --config is the default for cases without one", async () => {
    const d = fixtures({
      "optional.yaml": niDown.replace("name: one NI down\n", "name: optional tcp\nconfig: {optionalNets: [tcp]}\n").replace(/expect:[\s\S]*/, "expect: {status: warn, reason: NiDegraded}\n"),
      "typo.yaml": niDown.replace("name: one NI down\n", "name: typo\nconfig:\n  optionalNet: [tcp]\n"),
      "plain.yaml": niDown,
    });
    const r = await run(NETS, "--fixtures", d);
    expect(r.stdout).toMatch(/^ok +optional tcp — warn NiDegraded$/m);
    expect(r.stdout).toMatch(/^ok +one NI down — fail NiDown$/m);
    expect(r.stdout).toContain(`${join(`case-${seq}`, "typo.yaml")}:2: ConfigInvalid: config: unknown key "optionalNet" (known keys: optionalNets, requiredNets, minUpPerNet, ignoreNids, lnetConfiguredAt)`);
    expect(r.code).toBe(2);

    writeFileSync(join(dir.path, "lnet-nets.yaml"), "optionalNets: [tcp]\n");
    const withDefault = await run(NETS, "--config", "lnet-nets.yaml", "--fixtures", join(d, "plain.yaml"));
    // The case expects NiDown, the configuration says warn: --config reached the case.
    expect(withDefault.code).toBe(1);
    expect(withDefault.stdout).toContain("NiDegraded");
    const modules = await run(MODULES, "--fixtures", fixtures({ "c.yaml": "config: {modules: lnet}\nsources: {proc.modules: {stdout: \"lnet 1 0 - Live 0x0\\n\"}}\nexpect: {status: pass}\n" }));
    expect(modules.code).toBe(2);
    expect(modules.stdout).toContain("modules: expected a list of strings");
  });

  it("refuses a case in a mode the plugin does not declare (the gateway would never run it)", async () => {
    const d = fixtures({ "ctl.yaml": niDown.replace("name: one NI down", "name: on a controller\nmode: controller") });
    const r = await run(NETS, "--fixtures", d);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain("lnet-nets declares modes node; the gateway never runs it in mode controller");
  });

  it("exits 2 for a plugin the gateway would refuse, and for --fixtures mixed with per-run flags", async () => {
    writeFileSync(join(dir.path, "junk.wasm"), "not wasm");
    const d = fixtures({ "ni-down.yaml": niDown });
    const refused = await run("junk.wasm", "--fixtures", d);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("would refuse junk.wasm: CompileError");
    const mixed = await run(NETS, "--fixtures", d, "--source", `lnetctl.net_show=${NI_DOWN}`);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain("--source cannot be combined with --fixtures");
    const none = await run(NETS, "--fixtures", join(dir.path, "nope"));
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("no such file or directory");
  });
});

describe("health, events and round", () => {
  // An OST evicted at 1764000600 and FULL again by 1764000601.
  const evicted = (round: string, expect: string) => `name: evicted and recovered
${round}sources:
  lctl.import_states: {stdoutFile: ${join(LUSTRE, "ost-evicted-recovered.states.txt")}}
  lfs.getname: {stdoutFile: ${join(LUSTRE, "ost-evicted-recovered.getname.txt")}}
expect:
  status: pass
${expect}`;

  it("round: reaches the plugin as input.round; events are compared entry by entry", async () => {
    const d = fixtures({
      "counted.yaml": evicted("round: {epoch: 1764000625, previousEpoch: 1764000595}\n", "  events:\n    - {reason: Evicted, fs: lustrefs, target: lustrefs-OST0003, at: 1764000600}\n  health: []\n"),
      "already-counted.yaml": evicted("round: {epoch: 1764000655, previousEpoch: 1764000625}\n", "  events:\n    - {reason: Evicted}\n"),
    });
    const r = await run(IMPORTS, "--fixtures", d);
    expect(r.stdout).toMatch(/^ok +evicted and recovered — pass ImportsHealthy$/m);
    expect(r.stdout).toMatch(/^ +✗ events\[0\] +Evicted +\(none\)$/m);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("1 passed, 1 failed");
    expect(r.code).toBe(1);
  });

  it("a case without round runs as a first round starting now (previousEpoch 0): no events", async () => {
    const d = fixtures({ "first.yaml": evicted("", "  events: []\n") });
    const r = await run(IMPORTS, "--fixtures", d);
    expect(r.stdout).toContain("1 passed, 0 failed");
  });

  it("health: exact entries in order; a missing or extra entry, or another message, fails the case", async () => {
    const down = (expect: string) => `name: OST down
round: {epoch: 1764000700, previousEpoch: 1764000670}
sources:
  lctl.import_states: {stdoutFile: ${join(LUSTRE, "ost-down-2.16.states.txt")}}
  lfs.getname: {stdoutFile: ${join(LUSTRE, "ost-down-2.16.getname.txt")}}
expect:
  status: warn
${expect}`;
    const d = fixtures({
      "a-right.yaml": down("  health:\n    - {status: STORAGE_DEGRADED, reason: OstUnreachable, fs: lustrefs, message: OST0003}\n"),
      "b-none.yaml": down("  health: []\n"),
      "c-extra.yaml": down("  health:\n    - {status: STORAGE_DEGRADED, reason: OstUnreachable}\n    - {status: STORAGE_UNREACHABLE, reason: MdtUnreachable}\n"),
      "d-message.yaml": down("  health:\n    - {status: STORAGE_DEGRADED, reason: OstUnreachable, message: OST0009}\n"),
    });
    const r = await run(IMPORTS, "--fixtures", d);
    expect(r.stdout).toMatch(/^ok +OST down — warn OstUnreachable$/m);
    expect(r.stdout).toMatch(/^ +✗ health\[0\] +\(none\) +STORAGE_DEGRADED OstUnreachable fs=lustrefs lustrefs at \/mnt\/lustre: OST0003/m);
    expect(r.stdout).toMatch(/^ +✗ health\[1\] +STORAGE_UNREACHABLE MdtUnreachable +\(none\)$/m);
    // The expected column is clipped at 40 characters.
    expect(r.stdout).toMatch(/^ +✗ health\[0\] +STORAGE_DEGRADED OstUnreachable …OST000…/m);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("1 passed, 3 failed");
  });

  it("stable: compared when given (absent in the output is false), and must be a boolean", async () => {
    // volume-lustre-health's own cases, their source files found from here.
    const own = (name: string, stable: string) =>
      readFileSync(join(ROOT, "plugins", "volume-lustre-health", "fixtures", name), "utf8")
        .replaceAll("../../fixtures/lustre/", `${LUSTRE}/`)
        .replace(/^  stable: .*$/m, `  stable: ${stable}`);
    const d = fixtures({
      "a-healthy.yaml": own("healthy.yaml", "true"),
      "b-healthy-not.yaml": own("healthy.yaml", "false"),
      "c-grace.yaml": own("osts-within-grace.yaml", "true"),
      "d-grace-not.yaml": own("osts-within-grace.yaml", "false"),
    });
    const r = await run(VOLUME_HEALTH, "--fixtures", d);
    expect(r.stdout).toMatch(/^ +✗ stable +false +true$/m);
    expect(r.stdout).toMatch(/^ +✗ stable +true +false$/m);
    expect(r.stdout.trim().split("\n").at(-1)).toBe("2 passed, 2 failed");
    const bad = await run(VOLUME_HEALTH, "--fixtures", fixtures({ "bad.yaml": own("healthy.yaml", "yes") }));
    expect(bad.code).toBe(2);
    expect(bad.stdout).toMatch(/bad\.yaml:\d+: expect\.stable: must be true or false$/m);
  });

  it("refuses malformed round and health expectations with the key and its line", async () => {
    const d = fixtures({
      "round.yaml": "round: {epoch: 5, previous: 1}\nexpect: {status: pass}\n",
      "neg.yaml": "round: {epoch: -1}\nexpect: {status: pass}\n",
      "health.yaml": "expect:\n  status: pass\n  health:\n    - {status: DEGRADED, reason: X, colour: red}\n",
    });
    const r = await run(IMPORTS, "--fixtures", d);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/round\.yaml:1: unknown key "previous" in round \(known: epoch, previousEpoch\)/);
    expect(r.stdout).toMatch(/neg\.yaml:1: round\.epoch: /);
    expect(r.stdout).toMatch(/health\.yaml:4: unknown key "colour" in expect\.health\.0 \(known: status, reason, message, fs\)/);
  });

  it("the input document carries round for a run from flags too", async () => {
    const r = await run(IMPORTS, "--source", `lctl.import_states=${join(LUSTRE, "healthy-2.15.states.txt")}`, "--json");
    const doc = JSON.parse(r.stdout);
    expect(doc.input.round.previousEpoch).toBe(0);
    expect(Math.abs(doc.input.round.epoch - Date.now() / 1000)).toBeLessThan(600);
    expect(doc.verdict ?? doc.result ?? doc).toBeTruthy();
  });
});

describe("source faults: the plugin sees what the gateway would give it", () => {
  const faultCase = (source: string, fault: string, extra = "") =>
    `sources:\n  ${source}:\n    fault: ${fault}\n${extra}expect:\n  status: fail\n  reason: SourceFailed\n`;

  it("timeout: ETIMEDOUT with the command's own deadline, partial output kept", async () => {
    const d = fixtures({ "t.yaml": faultCase("lnetctl.net_show", "timeout", "    stdout: 'net:'\n").replace("expect:", "expect:\n  message: 'source lnetctl.net_show failed: ETIMEDOUT: lnetctl net show timed out after 3000 ms'") });
    const r = await run(NETS, "--fixtures", d);
    expect(r.stdout).toContain("1 passed, 0 failed");
    expect(r.code).toBe(0);
  });

  it("not-found: ENOENT for a command not on PATH and for a missing file", async () => {
    const d = fixtures({
      "cmd.yaml": faultCase("lnetctl.net_show", "not-found").replace("expect:", "expect:\n  message: 'ENOENT: lnetctl not found on PATH'"),
    });
    expect((await run(NETS, "--fixtures", d)).stdout).toContain("1 passed, 0 failed");
    const f = fixtures({ "file.yaml": faultCase("proc.modules", "not-found").replace("expect:", "expect:\n  message: 'ENOENT: /proc/modules does not exist'") });
    const r = await run(MODULES, "--fixtures", f);
    expect(r.stdout).toContain("1 passed, 0 failed");
  });

  it("truncated: EFBIG, the output kept as cut, which lnet-nets refuses to judge", async () => {
    const d = fixtures({
      "cut.yaml": `sources:\n  lnetctl.net_show:\n    stdoutFile: ${NI_DOWN}\n    fault: truncated\nexpect:\n  status: fail\n  reason: SourceFailed\n  message: "EFBIG: lnetctl net show output exceeded 1048576 bytes"\n`,
    });
    const r = await run(NETS, "--fixtures", d);
    expect(r.stdout).toContain("1 passed, 0 failed");
    // The same through the flags, with the input shown as JSON.
    const j = await run(NETS, "--source", `lnetctl.net_show=${NI_DOWN}`, "--source-fault", "lnetctl.net_show=truncated", "--json");
    const src = JSON.parse(j.stdout).input.sources["lnetctl.net_show"];
    expect(src).toMatchObject({ ok: false, exitCode: null, truncated: true, error: "EFBIG: lnetctl net show output exceeded 1048576 bytes" });
    expect(src.stdout.length).toBeGreaterThan(100);
  });

  it("refuses faults a source cannot have, naming the line", async () => {
    const d = fixtures({ "file-timeout.yaml": faultCase("proc.modules", "timeout"), "file-stderr.yaml": "sources:\n  proc.modules: {stderr: boom}\nexpect: {status: fail}\n" });
    const r = await run(MODULES, "--fixtures", d);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/file-timeout\.yaml:2: proc\.modules: file sources have no deadline/);
    expect(r.stdout).toMatch(/file-stderr\.yaml:2: proc\.modules: only command sources have stderr/);
  });

  it("a missing fact fails the source before it runs, as on a node", async () => {
    const d = fixtures({ "no-nid.yaml": "sources:\n  lnetctl.ping: {stdout: 'x'}\nexpect: {status: fail, reason: SelfNidUnavailable}\n" });
    const r = await run(PING, "--fixtures", d);
    expect(r.stdout).toContain("1 passed, 0 failed");
  });

  it("--source-stderr and --source-exit reach the plugin; bad --source-fault values are refused", async () => {
    writeFileSync(join(dir.path, "err.txt"), "lnetctl: cannot get networks\n");
    const r = await run(NETS, "--source-stderr", "lnetctl.net_show=err.txt", "--source-exit", "lnetctl.net_show=1", "--json");
    const src = JSON.parse(r.stdout).input.sources["lnetctl.net_show"];
    expect(src).toMatchObject({ ok: false, exitCode: 1, stderr: "lnetctl: cannot get networks\n", error: "exit status 1" });
    expect(r.code).toBe(1);
    const bad = await run(NETS, "--source-fault", "lnetctl.net_show=hang");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("timeout, not-found, truncated");
  });

  it("--timeout takes a duration and still a bare number of milliseconds", async () => {
    for (const t of ["2s", "750ms", "900"]) expect((await run(NETS, "--source", `lnetctl.net_show=${NI_DOWN}`, "--timeout", t)).code).toBe(1);
    const bad = await run(NETS, "--timeout", "2 seconds");
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--timeout expects a duration");
  });
});

describe("traces", () => {
  it("shows a plugin's trace lines in a single run (the host keeps 8 per call)", async () => {
    const r = await run("tracer.wasm");
    const traces = r.stdout.split("\n").filter((l) => l.startsWith("trace: "));
    expect(traces).toHaveLength(8);
    expect(traces[0]).toBe("trace: tracing 0");
  });

  it("shows them in a failing fixture's report, not in a passing one's", async () => {
    const d = fixtures({ "a.yaml": "expect: {status: fail}\n", "b.yaml": "expect: {status: pass}\n" });
    const r = await run("tracer.wasm", "--fixtures", d);
    const [, failing] = r.stdout.split(/^FAIL/m);
    const passing = r.stdout.split(/^FAIL/m)[0]!;
    expect(failing).toMatch(/^ +trace: tracing 7$/m);
    expect(passing).not.toContain("trace:");
  });
});
