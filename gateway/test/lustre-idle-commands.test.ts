// Issue 43, item 2: no command whose answer cannot matter. Through a running
// gateway with every bundled check (readiness and storage health) on fake
// nodes whose lnetctl/lctl/lfs log each call: where the mount table has no
// Lustre file system, no `lctl get_param …state|…import` and no `lfs getname`
// runs, `health_check` is read once and kept (not at all without the lustre
// module); one `lnetctl net show -v 3` a round serves the plain `net show`
// too; and every check still says what it says when the commands run.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { plainNetShow } from "../src/engine/sources/net-show-plain.js";
import { fakeLustre, type FakeLustre, type FakeLustreState } from "./helpers/fake-lustre.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { gatewayTestScope } from "./helpers/test-scope.js";
import { silentLogger } from "./hostile/harness.js";
import { Metrics } from "../src/observability/metrics.js";

const BUNDLED = path.join(ROOT, "dist", "plugins");
const HEALTHY = path.join(ROOT, "gateway", "demo", "scenarios", "healthy");
const MOUNTPOINT = "/mnt/lustrefs";
const NO_LUSTRE_MOUNTS = "sysfs /sys sysfs rw 0 0\nproc /proc proc rw 0 0\n/dev/vda1 / ext4 rw,relatime 0 0\n";
const now = Math.floor(Date.now() / 1000);

const scope = gatewayTestScope();
const { running } = scope;

function lustre(over: Partial<FakeLustreState["filesystems"][number]> = {}): FakeLustreState {
  return { version: "2.15", mgsNid: "10.0.0.2@tcp", since: now - 3600, filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: MOUNTPOINT, mdts: 1, osts: 4, ...over }] };
}

/** The node's mount table: a Lustre line for `state`'s file system, or none. */
function mountTable(node: FakeLustre, mounted: boolean): void {
  const line = `10.0.0.2@tcp:/lustrefs ${MOUNTPOINT} lustre rw,flock,lazystatfs 0 0\n`;
  fs.writeFileSync(path.join(node.procfs, "1", "mounts"), NO_LUSTRE_MOUNTS + (mounted ? line : ""));
}

/** The healthy demo node with nothing mounted (lnet and lustre loaded, LNet up). */
function lnetOnlyNode(modules?: string): FakeLustre {
  const node = fakeLustre({ base: "healthy" });
  scope.nodes.push(node);
  node.unmountAll();
  mountTable(node, false);
  if (modules !== undefined) node.update({ modules });
  return node;
}

/** A catalog on `node` (stopped after `use`). */
async function withCatalog(node: FakeLustre, use: (c: SourceCatalog) => Promise<void>, metrics?: Metrics): Promise<void> {
  const catalog = await SourceCatalog.create({ procfs: node.procfs, sysfs: node.sysfs, env: node.env, logger: silentLogger, ...(metrics ? { metrics } : {}) });
  try {
    await use(catalog);
  } finally {
    await catalog.stop();
  }
}

async function gatewayOn(node: FakeLustre): Promise<GatewayProcess> {
  const gw = await startGatewayProcess([`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", "--health-interval=1s", `--plugins-dir=${BUNDLED}`], { env: node.env });
  running.push(gw);
  return gw;
}

interface Readyz {
  conditions: Array<{ name: string; status: string; reason: string; message: string }>;
  storageHealth?: { storage: Array<{ status: string; reason: string; check: string }> };
}

async function readyz(gw: GatewayProcess): Promise<Readyz> {
  const res = await fetch(`http://${gw.http}/readyz?verbose`, { headers: { accept: "application/json" } });
  return (await res.json()) as Readyz;
}

async function until(gw: GatewayProcess, pred: (r: Readyz) => boolean, what: string, timeoutMs = 30_000): Promise<Readyz> {
  const start = Date.now();
  let last = await readyz(gw);
  while (!pred(last)) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 200));
    last = await readyz(gw);
  }
  return last;
}

const reasonOf = (r: Readyz, check: string) => r.conditions.find((c) => c.name === check)?.reason;
const storage = (r: Readyz) => (r.storageHealth?.storage ?? []).map((e) => `${e.status} ${e.reason} (${e.check})`);
/** Rounds pass: the verbose net show runs once a round (1 s), so its call count is a round counter. */
async function rounds(node: FakeLustre, n: number): Promise<void> {
  const target = node.calls("net_show_health").length + n;
  const start = Date.now();
  while (node.calls("net_show_health").length < target) {
    if (Date.now() - start > 30_000) throw new Error(`fewer than ${n} rounds in 30 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("the plain net show inside the verbose one", () => {
  it("is exactly what `lnetctl net show` prints (the demo node's pair), and refuses what it cannot vouch for", () => {
    const plain = fs.readFileSync(path.join(HEALTHY, "net_show.out"), "utf8");
    const verbose = fs.readFileSync(path.join(HEALTHY, "net_show_health.out"), "utf8");
    expect(plainNetShow(verbose)).toBe(plain);
    expect(plainNetShow(plain)).toBe(plain);
    // Every verbose-only block goes, whatever its nesting or an empty value (`lnd tunables:` on lo).
    const full = fs.readFileSync(path.join(ROOT, "plugins", "fixtures", "net_show", "verbose.yaml"), "utf8");
    const p = plainNetShow(full)!;
    for (const k of ["statistics:", "sent_stats:", "health stats:", "tunables:", "dev cpt:", "CPT:", "tcp bonding:", "send_count", "peer_credits"]) expect(p).not.toContain(k);
    expect(p).toContain("- nid: 10.1.0.4@tcp\n          status: up\n          interfaces:\n              0: eth0\n");
    expect(plainNetShow("net:\n\t- net type: lo\n")).toBeUndefined();
    expect(plainNetShow("net: {a: 1}\n")).toBeUndefined();
  });

  it("one `net show -v 3` run serves both sources; a failed verbose run falls back to the plain command", async () => {
    const node = lnetOnlyNode();
    await withCatalog(node, async (catalog) => {
      const [plain, verbose] = await Promise.all([catalog.read("lnetctl.net_show", {}), catalog.read("lnetctl.net_show_health", {})]);
      expect(plain.stdout).toBe(fs.readFileSync(path.join(HEALTHY, "net_show.out"), "utf8"));
      expect(verbose.stdout).toContain("health value: 1000");
      expect(node.calls().filter((l) => l.includes("lnetctl"))).toEqual(["net_show_health lnetctl net show -v 3"]);
    });
    // `-v 3` refused (an lnetctl without it): the plain command answers, exactly as before.
    node.setRaw("net_show_health", { out: "", err: "lnetctl: invalid option -- 'v'\n", exit: 1 });
    await withCatalog(node, async (c2) => {
      const plain = await c2.read("lnetctl.net_show", {});
      expect(plain.ok).toBe(true);
      expect(plain.stdout).toBe(fs.readFileSync(path.join(HEALTHY, "net_show.out"), "utf8"));
      expect(node.calls("net_show")).toHaveLength(1);
    });
  });
});

describe("the catalog's answer for a Lustre command it did not run", () => {
  it("is lctl's own answer on such a node, marked not run and counted as skipped; a mount table it cannot read runs the command", async () => {
    const node = lnetOnlyNode();
    const metrics = new Metrics({ processMetrics: false });
    await withCatalog(node, async (catalog) => {
      const states = await catalog.read("lctl.import_states", {});
      expect(states).toMatchObject({ ok: false, exitCode: null, stdout: "", truncated: false });
      expect(states.error).toBe(`not run: no Lustre file system is mounted (no lustre line in ${path.join(node.procfs, "1", "mounts")})`);
      expect(states.stderr).toBe(["osc/*/state", "mdc/*/state", "mgc/*/state"].map((p) => `error: get_param: param_path '${p}': No such file or directory\n`).join(""));
      expect((await catalog.read("lfs.getname", {})).error).toMatch(/^not run: no Lustre file system is mounted/);
      expect(node.calls().filter((l) => !l.startsWith("net_show"))).toEqual([]);
      const executions = (await metrics.sourceExecutions.get()).values.filter((v) => v.labels.source === "lctl.import_states");
      expect(executions.map((v) => [v.labels.result, v.value])).toEqual([["skipped", 1]]);
      const errors = (await metrics.sourceErrors.get()).values.filter((v) => v.labels.source === "lctl.import_states");
      expect(errors.map((v) => v.value)).toEqual([0]);
    }, metrics);
    // Cannot tell (no mount table to read): the command runs, and lctl answers for itself.
    fs.rmSync(path.join(node.procfs, "1", "mounts"));
    await withCatalog(node, async (c2) => {
      expect((await c2.read("lctl.import_states", {})).error).toBe("exit status 1");
      expect(node.calls("import_states")).toHaveLength(1);
    });
  });
});

describe("no Lustre command while nothing Lustre is mounted (a running gateway, every bundled check)", () => {
  it("LNet-only node: no state, import or getname read, health_check read once; a mount brings them back, an unmount stops them", async () => {
    const node = lnetOnlyNode();
    const gw = await gatewayOn(node);
    const idle = await until(gw, (r) => reasonOf(r, "lustre-imports") !== undefined && reasonOf(r, "lnet-nets") !== undefined, "every check evaluated");
    await rounds(node, 4);
    expect(node.calls("import_states")).toEqual([]);
    expect(node.calls("imports")).toEqual([]);
    expect(node.calls("getname")).toEqual([]);
    // No server to ping and no peer to judge (#42): neither runs.
    expect(node.calls("ping").filter((l) => !l.endsWith(" 10.0.0.10@tcp"))).toEqual([]);
    expect(node.calls("peer_show")).toEqual([]);
    expect(node.calls("health_check")).toHaveLength(1);
    // One `net show` a round: the verbose one; never the plain one.
    expect(node.calls("net_show")).toEqual([]);
    // What each check says with nothing mounted: the same as when lctl answers "no such parameter".
    const r = await readyz(gw);
    expect(reasonOf(r, "lustre-imports")).toBe("NoLustreMounts");
    expect(reasonOf(r, "lustre-health-check")).toBe("ClientHealthy");
    expect(reasonOf(r, "lnet-health")).toBe("LnetHealthy");
    expect(reasonOf(r, "lnet-nets")).toBe(reasonOf(idle, "lnet-nets"));
    expect(storage(r)).toEqual([]);
    expect(r.conditions.filter((c) => c.status !== "pass")).toEqual([]);

    // A file system is mounted, with an MDT down past the grace: the state listing is read and judged.
    node.setLustre(lustre({ states: { MDT0000: "DISCONN" }, history: { MDT0000: [[now - 600, "DISCONN"]] } }));
    mountTable(node, true);
    const down = await until(gw, (x) => storage(x).includes("STORAGE_UNREACHABLE MdtUnreachable (lustre-imports)"), "the MDT outage reported");
    expect(reasonOf(down, "lustre-imports")).toBe("MdtUnreachable");
    expect(node.calls("import_states").length).toBeGreaterThan(0);
    expect(node.calls("getname").length).toBeGreaterThan(0);
    await rounds(node, 2);
    expect(node.calls("health_check").length).toBeGreaterThan(1);

    // Unmounted: the outage is gone with the mount, and so are the commands.
    node.unmountAll();
    mountTable(node, false);
    await until(gw, (x) => reasonOf(x, "lustre-imports") === "NoLustreMounts" && storage(x).length === 0, "nothing mounted again");
    await rounds(node, 1);
    const states = node.calls("import_states").length;
    const checks = node.calls("health_check").length;
    await rounds(node, 4);
    expect(node.calls("import_states")).toHaveLength(states);
    expect(node.calls("health_check").length).toBeLessThanOrEqual(checks + 1);
  }, 150_000); // two storage-health turns (30 s apart) each way, and the server pings of a mounted file system, on a shared machine

  it("an LBUG with nothing mounted is still reported (health_check is read once and kept, never assumed)", async () => {
    const node = lnetOnlyNode();
    node.setHealthCheck("LBUG\n");
    const gw = await gatewayOn(node);
    const r = await until(gw, (x) => storage(x).includes("STORAGE_UNREACHABLE ClientLbug (lustre-health-check)"), "the LBUG reported");
    expect(reasonOf(r, "lustre-health-check")).toBe("ClientLbug");
    await rounds(node, 3);
    expect(storage(await readyz(gw))).toContain("STORAGE_UNREACHABLE ClientLbug (lustre-health-check)");
    expect(node.calls("health_check")).toHaveLength(1);
    expect(node.calls("import_states")).toEqual([]);
  });

  it("the lustre module not loaded: not even health_check runs, and the checks say the module is not loaded", async () => {
    const modules = fs.readFileSync(path.join(HEALTHY, "proc", "modules"), "utf8").split("\n").filter((l) => !l.startsWith("lustre ")).join("\n");
    const node = lnetOnlyNode(modules);
    // Had lctl run, these would be wrong answers to see.
    node.setHealthCheck("LBUG\n");
    const gw = await gatewayOn(node);
    const r = await until(gw, (x) => reasonOf(x, "lustre-health-check") !== undefined && reasonOf(x, "lustre-imports") !== undefined, "the storage checks evaluated");
    await rounds(node, 3);
    expect(reasonOf(r, "lustre-health-check")).toBe("LustreNotLoaded");
    expect(reasonOf(r, "lustre-imports")).toBe("NoLustreMounts");
    expect(node.calls().filter((l) => l.includes(" lctl get_param") || l.includes(" lfs "))).toEqual([]);
    expect(storage(await readyz(gw))).toEqual([]);
  });
});
