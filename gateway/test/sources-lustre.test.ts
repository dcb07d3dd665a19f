// The Lustre client sources (lctl.imports, lctl.import_states, lfs.getname,
// lustre.health_check, lnetctl.net_show_health) run through the real catalog
// against the fake tools: exact argv, output as printed, a node with nothing
// mounted, a missing tool, a hanging tool, the output cap, the prefix, and a
// scenario rewritten between rounds (an eviction, then a recovery).

import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { LUSTRE_IMPORTS_MAX_BYTES } from "../src/engine/sources/catalog.js";
import { SourceCatalog, type SourceCatalogOptions } from "../src/engine/sources/index.js";
import { fakeLustre, type FakeLustre, type FakeLustreSpec, type FakeLustreState } from "./helpers/fake-lustre.js";

const silent = pino({ level: "silent" });
const nodes: FakeLustre[] = [];
afterEach(() => {
  for (const n of nodes.splice(0)) n.cleanup();
});

function node(spec: FakeLustreSpec = {}): FakeLustre {
  const n = fakeLustre(spec);
  nodes.push(n);
  return n;
}

function catalogFor(n: FakeLustre, extra: Partial<SourceCatalogOptions> = {}): Promise<SourceCatalog> {
  return SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silent, ...extra });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const ONE_FS: FakeLustreState = {
  version: "2.16",
  mgsNid: "10.0.0.2@tcp",
  since: 1764000000,
  filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: "/mnt/lustre", mdts: 1, osts: 2 }],
};

describe("Lustre client sources", () => {
  it("describes each as an allowlisted argv run like lnetctl", async () => {
    const catalog = await catalogFor(node({ lustre: ONE_FS }));
    const byName = Object.fromEntries(catalog.describe().map((d) => [d.name, d]));
    expect(byName["lctl.imports"]).toMatchObject({ kind: "command", argv: ["lctl", "get_param", "osc.*.import", "mdc.*.import", "mgc.*.import"], timeoutMs: 3000, ttlMs: 2000, params: [] });
    expect(byName["lctl.import_states"]).toMatchObject({ argv: ["lctl", "get_param", "osc.*.state", "mdc.*.state", "mgc.*.state"] });
    expect(byName["lfs.getname"]).toMatchObject({ argv: ["lfs", "getname"] });
    expect(byName["lustre.health_check"]).toMatchObject({ argv: ["lctl", "get_param", "-n", "health_check"] });
    expect(byName["lnetctl.net_show_health"]).toMatchObject({ argv: ["lnetctl", "net", "show", "-v", "3"] });
  });

  it("passes what the tools print, byte for byte, in the version's format", async () => {
    const n = node({ lustre: ONE_FS });
    const catalog = await catalogFor(n);
    const imports = await catalog.read("lctl.imports", {});
    expect(imports).toMatchObject({ ok: true, exitCode: 0 });
    expect(imports.stdout).toMatch(/^osc\.lustrefs-OST0000-osc-ffff8f0a3b5c9000\.import=\nimport:\n    name: lustrefs-OST0000-osc-ffff8f0a3b5c9000\n/);
    // 2.16: quoted NIDs and nids_stats.
    expect(imports.stdout).toContain('       current_connection: "10.0.0.2@tcp"\n');
    expect(imports.stdout).toContain("       nids_stats:\n");
    expect(imports.stdout).toContain("mgc.MGC10.0.0.2@tcp.import=\nimport:\n    name: MGC10.0.0.2@tcp\n    target: MGS\n");
    const states = await catalog.read("lctl.import_states", {});
    expect(states.stdout).toContain("mdc.lustrefs-MDT0000-mdc-ffff8f0a3b5c9000.state=\ncurrent_state: FULL\nstate_history:\n - [ 1764000000, CONNECTING ]\n - [ 1764000000, FULL ]\n");
    // The MGC's state file is in debugfs like its import, and last in the listing.
    expect(states.stdout).toMatch(/\nmgc\.MGC10\.0\.0\.2@tcp\.state=\ncurrent_state: FULL\nstate_history:\n - \[ 1764000000, CONNECTING \]\n - \[ 1764000000, FULL \]\n$/);
    expect((await catalog.read("lfs.getname", {})).stdout).toBe("lustrefs-ffff8f0a3b5c9000 /mnt/lustre\n");
    expect((await catalog.read("lustre.health_check", {})).stdout).toBe("healthy\n");
    expect(n.calls()).toEqual(
      expect.arrayContaining([
        "imports lctl get_param osc.*.import mdc.*.import mgc.*.import",
        "import_states lctl get_param osc.*.state mdc.*.state mgc.*.state",
        "getname lfs getname",
        "health_check lctl get_param -n health_check",
      ]),
    );
  });

  it("a node with nothing mounted: get_param names the missing parameters on stderr", async () => {
    const catalog = await catalogFor(node({}));
    const r = await catalog.read("lctl.imports", {});
    expect(r).toMatchObject({ ok: false, exitCode: 1, stdout: "" });
    expect(r.stderr).toBe(
      "error: get_param: param_path 'osc/*/import': No such file or directory\n" +
        "error: get_param: param_path 'mdc/*/import': No such file or directory\n" +
        "error: get_param: param_path 'mgc/*/import': No such file or directory\n",
    );
    const states = await catalog.read("lctl.import_states", {});
    expect(states).toMatchObject({ ok: false, exitCode: 1, stdout: "" });
    expect(states.stderr).toBe(
      "error: get_param: param_path 'osc/*/state': No such file or directory\n" +
        "error: get_param: param_path 'mdc/*/state': No such file or directory\n" +
        "error: get_param: param_path 'mgc/*/state': No such file or directory\n",
    );
  });

  it("a missing tool is ENOENT … not found, like lnetctl; the others still run", async () => {
    const n = node({ lustre: ONE_FS });
    n.missing("lfs");
    const catalog = await catalogFor(n);
    expect(await catalog.read("lfs.getname", {})).toMatchObject({ ok: false, exitCode: null, error: "ENOENT: lfs not found on PATH" });
    expect((await catalog.read("lctl.imports", {})).ok).toBe(true);
  });

  it("a hanging lctl is killed at the deadline and does not hold the other sources", async () => {
    const n = node({ lustre: ONE_FS });
    n.hang("imports");
    // Long enough for the fake lctl (a node process) to answer on a loaded machine.
    const catalog = await catalogFor(n, { defaults: { commandTimeoutMs: 2000 } });
    const [imports, states] = await Promise.all([catalog.read("lctl.imports", {}), catalog.read("lctl.import_states", {})]);
    expect(imports).toMatchObject({ ok: false, exitCode: null, error: "ETIMEDOUT: lctl get_param *.import timed out after 2000 ms" });
    expect(states.ok).toBe(true);
    expect(n.calls("imports")).toHaveLength(1);
  });

  it("health_check and net show -v 3 answer from their own files", async () => {
    const n = node({ base: "healthy", healthCheck: "LBUG\n" });
    const catalog = await catalogFor(n);
    expect((await catalog.read("lustre.health_check", {})).stdout).toBe("LBUG\n");
    const net = await catalog.read("lnetctl.net_show_health", {});
    expect(net.stdout).toContain("              health value: 1000\n");
    expect(n.calls("net_show_health")).toEqual(["net_show_health lnetctl net show -v 3"]);
  });

  it("without net_show_health files, net show -v 3 answers from net_show's", async () => {
    const n = node({ netShow: { out: "net:\n    - net type: lo\n" } });
    const catalog = await catalogFor(n);
    expect((await catalog.read("lnetctl.net_show_health", {})).stdout).toBe("net:\n    - net type: lo\n");
  });

  it("sees an eviction and the recovery written between rounds", async () => {
    const n = node({ lustre: ONE_FS });
    const catalog = await catalogFor(n, { defaults: { commandTtlMs: 200 } });
    expect((await catalog.read("lctl.imports", {})).stdout).not.toContain("EVICTED");
    const fs = ONE_FS.filesystems[0]!;
    const t = 1764100000;
    n.setLustre({ ...ONE_FS, filesystems: [{ ...fs, states: { OST0001: "EVICTED" }, history: { OST0001: [[t, "DISCONN"], [t, "CONNECTING"], [t, "EVICTED"]] } }] });
    await sleep(300);
    expect((await catalog.read("lctl.imports", {})).stdout).toContain("    name: lustrefs-OST0001-osc-ffff8f0a3b5c9000\n    target: lustrefs-OST0001_UUID\n    state: EVICTED\n");
    n.setLustre({ ...ONE_FS, filesystems: [{ ...fs, history: { OST0001: [[t, "DISCONN"], [t, "CONNECTING"], [t, "EVICTED"], [t + 1, "RECOVER"], [t + 1, "FULL"]] } }] });
    await sleep(300);
    const states = await catalog.read("lctl.import_states", {});
    expect(states.stdout).toContain(`osc.lustrefs-OST0001-osc-ffff8f0a3b5c9000.state=\ncurrent_state: FULL\nstate_history:\n - [ ${t}, DISCONN ]\n - [ ${t}, CONNECTING ]\n - [ ${t}, EVICTED ]\n - [ ${t + 1}, RECOVER ]\n - [ ${t + 1}, FULL ]\n`);
  });

  it("1,000 OSTs fit under the imports cap; more than the cap is cut and fails", async () => {
    const big = { ...ONE_FS, filesystems: [{ ...ONE_FS.filesystems[0]!, osts: 1000 }] };
    const n = node({ lustre: big });
    const catalog = await catalogFor(n);
    const r = await catalog.read("lctl.imports", {});
    expect(r.ok).toBe(true);
    expect(r.stdout.match(/^osc\..*\.import=$/gm)).toHaveLength(1000);
    const small = await catalogFor(n, { defaults: { maxOutputBytes: 1024 } });
    // The cap of lctl.imports is at least LUSTRE_IMPORTS_MAX_BYTES whatever the default.
    expect((await small.read("lctl.imports", {})).ok).toBe(true);
    n.setRaw("imports", { out: "x".repeat(LUSTRE_IMPORTS_MAX_BYTES + 10) });
    const over = await (await catalogFor(n)).read("lctl.imports", {});
    expect(over).toMatchObject({ ok: false, truncated: true });
    expect(over.error).toMatch(/EFBIG|exceeded/);
  });

  it("the healthy demo node has one mounted Lustre file system, all imports FULL", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n);
    const mounts = (await catalog.read("proc.mounts", {})).stdout;
    const getname = (await catalog.read("lfs.getname", {})).stdout;
    expect(getname).toMatch(/^lustrefs-[0-9a-f]{16} (\S+)\n$/);
    expect(mounts).toContain(`10.0.0.2@tcp:/lustrefs ${getname.split(" ")[1]!.trim()} lustre `);
    const states = (await catalog.read("lctl.imports", {})).stdout.match(/^    state: \S+$/gm);
    expect(states).toEqual(["    state: FULL", "    state: FULL", "    state: FULL", "    state: FULL"]);
    // The state listing the bundled checks read: the same four imports, MGC last.
    const listing = (await catalog.read("lctl.import_states", {})).stdout;
    expect(listing.match(/^(osc|mdc|mgc)\..*\.state=$/gm)).toEqual([
      "osc.lustrefs-OST0000-osc-ffff8f0a3b5c9000.state=",
      "osc.lustrefs-OST0001-osc-ffff8f0a3b5c9000.state=",
      "mdc.lustrefs-MDT0000-mdc-ffff8f0a3b5c9000.state=",
      "mgc.MGC10.0.0.2@tcp.state=",
    ]);
    expect(listing.match(/^current_state: \S+$/gm)).toEqual(["current_state: FULL", "current_state: FULL", "current_state: FULL", "current_state: FULL"]);
    expect((await catalog.read("lustre.health_check", {})).stdout).toBe("healthy\n");
  });

  it("the ni-down demo node: lustrefs still mounted, every import lost", async () => {
    const catalog = await catalogFor(node({ base: "ni-down" }));
    expect((await catalog.read("proc.mounts", {})).stdout).toContain(":/lustrefs ");
    const states = (await catalog.read("lctl.imports", {})).stdout.match(/^    state: \S+$/gm);
    expect(states).toEqual(["    state: DISCONN", "    state: CONNECTING", "    state: DISCONN", "    state: DISCONN"]);
    const current = (await catalog.read("lctl.import_states", {})).stdout.match(/^current_state: \S+$/gm);
    expect(current).toEqual(["current_state: DISCONN", "current_state: CONNECTING", "current_state: DISCONN", "current_state: DISCONN"]);
    expect((await catalog.read("lnetctl.net_show_health", {})).stdout).toMatch(/nid: 10\.0\.0\.10@tcp\n\s+status: down/);
  });

  it("goes through --command-prefix like lnetctl", async () => {
    const n = node({ lustre: ONE_FS });
    const catalog = await catalogFor(n, { commandPrefix: ["env", "PROBEGATE_PREFIXED=1"] });
    expect(catalog.describe().find((d) => d.name === "lfs.getname")?.argv).toEqual(["env", "PROBEGATE_PREFIXED=1", "lfs", "getname"]);
    expect((await catalog.read("lfs.getname", {})).stdout).toBe("lustrefs-ffff8f0a3b5c9000 /mnt/lustre\n");
  });
});
