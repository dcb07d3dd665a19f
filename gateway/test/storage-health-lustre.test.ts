// End to end on a fake Lustre client: the bundled storage and volume plugins
// (lustre-imports, volume-lustre-health) run by the engine and the storage
// health evaluator, over the real catalog (fake lctl/lfs, a fake stat, a fake
// mount table), through an OST outage, an eviction and a hanging mount.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { defaultSpawnerPath } from "../src/exec/spawner.js";
import { fakeLustre, type FakeLustreState } from "./helpers/fake-lustre.js";
import { ROOT } from "./helpers/gateway-process.js";
import { startChecks } from "./helpers/checks-harness.js";
import { compileAs } from "./hostile/build.js";
import { silentLogger, waitFor } from "./hostile/harness.js";
import { fakeStatScript } from "./helpers/fake-stat.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const FAKE_STAT = fakeStatScript({ hang: "*" });

const SPAWNER = defaultSpawnerPath();
const KUBELET = "/var/lib/kubelet";
const TARGET = `${KUBELET}/pods/p1/volumes/kubernetes.io~csi/pv1/mount`;
const now = Math.floor(Date.now() / 1000);

function state(over: Partial<FakeLustreState["filesystems"][number]> = {}): FakeLustreState {
  return {
    version: "2.15",
    mgsNid: "10.0.0.2@tcp",
    since: now - 3600,
    filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: TARGET, mdts: 1, osts: 64, ...over }],
  };
}

async function setup(lustre: FakeLustreState = state(), extraPlugins: Record<string, Uint8Array> = {}, commandSpawner: string | false = false) {
  const n = fakeLustre({ base: "healthy", lustre });
  cleanups.push(() => n.cleanup());
  const mounts = lustre.filesystems.map((f) => `10.0.0.2@tcp:/${f.name} ${f.mountpoint} lustre rw,flock,lazystatfs 0 0\n`).join("");
  writeFileSync(join(n.procfs, "1", "mounts"), `/dev/sda1 / ext4 rw 0 0\n${mounts}`);
  writeFileSync(join(n.bin, "stat"), FAKE_STAT);
  chmodSync(join(n.bin, "stat"), 0o755);
  const plugins = join(n.dir, "health-plugins");
  mkdirSync(plugins);
  for (const p of ["lustre-imports", "volume-lustre-health"]) copyFileSync(join(ROOT, "dist/plugins", `${p}.wasm`), join(plugins, `${p}.wasm`));
  for (const [name, bytes] of Object.entries(extraPlugins)) writeFileSync(join(plugins, `${name}.wasm`), bytes);
  const log = join(n.dir, "stat.log");
  const hang = join(n.dir, "stat.hang");
  const env = { ...n.env, FAKE_STAT_LOG: log, FAKE_STAT_HANG: hang };
  const catalog = await SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env, logger: silentLogger, statfsBoundMs: 2000, statfsIntervalMs: 0, commandSpawner });
  if (commandSpawner) expect(catalog.spawner?.fallbackReason).toBeUndefined();
  const { metrics, runtime, engine, health } = await startChecks(catalog, plugins, cleanups);
  health.registry.remember({ volumeId: "pv1", targetPath: TARGET, readOnly: false, origin: "publish" });
  await waitFor(() => health.view.volume("pv1"), "pv1 evaluated");
  // Past the catalog's command cache (2 s), so each round reads the fake tools anew.
  const round = async () => {
    await new Promise((r) => setTimeout(r, 2100));
    await engine.refresh();
    await health.refreshVolumes();
  };
  return { n, engine, health, metrics, round, hang, statCalls: () => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((l) => l.endsWith(TARGET)).length : 0) };
}

describe("storage and volume health on a fake Lustre client (bundled plugins)", () => {
  // The tools and the statfs probes started directly, and through the command spawner (when built).
  // Skipped on the spawner path when dist/native/probegate-spawner is not built (no C compiler).
  for (const { path, spawner } of [
    { path: "direct spawn", spawner: false as const },
    { path: "command spawner", spawner: SPAWNER ?? "" },
  ]) it.skipIf(spawner === "")(`healthy, an OST down past the grace, an eviction of the MDT, and a hanging mount (${path})`, async () => {
    const s = await setup(state(), {}, spawner);
    expect(s.health.view.hasStorageChecks()).toBe(true);
    expect(s.health.view.storage()).toEqual([]);
    expect(s.health.view.volume("pv1")).toEqual([]);

    s.n.setLustre(state({ states: { OST0003: "DISCONN" }, history: { OST0003: [[now - 300, "DISCONN"]] } }));
    await s.round();
    expect(s.health.view.storage()).toMatchObject([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable", fs: "lustrefs", check: "lustre-imports" }]);
    expect(s.health.view.storage()[0]!.message).toContain("OST0003");
    expect(s.health.view.volume("pv1")).toMatchObject([{ status: "DEGRADED", reason: "OstUnreachable", check: "volume-lustre-health" }]);
    // Storage health never costs readiness.
    expect(s.engine.snapshot().conditions.find((c) => c.name === "lustre-imports")).toMatchObject({ probe: "storage" });

    s.n.setLustre(state({ states: { MDT0000: "EVICTED" }, history: { MDT0000: [[now - 5, "EVICTED"]] } }));
    await s.round();
    expect(s.health.view.storage().map((e) => e.status)).toContain("STORAGE_UNREACHABLE");
    expect(s.health.view.volume("pv1")!.map((e) => e.status)).toContain("INACCESSIBLE");
    expect(s.health.view.volumeCondition("pv1")).toMatchObject({ abnormal: true });

    s.n.setLustre(state());
    writeFileSync(s.hang, "");
    cleanups.push(() => rmSync(s.hang, { force: true }));
    await s.round();
    await s.round();
    expect(s.health.view.storage()).toEqual([]);
    expect(s.health.view.volume("pv1")).toMatchObject([{ status: "INACCESSIBLE", reason: "MountHung" }]);
    const calls = s.statCalls();
    await s.round();
    expect(s.statCalls()).toBe(calls); // the hung probe is not started again
    rmSync(s.hang);
    await waitFor(async () => {
      await s.round();
      return s.health.view.volume("pv1")!.length === 0;
    }, "mount answers again", 20_000);
  });

  it("two volumes on two mounts of the same file system each see only their own imports", async () => {
    // kubelet mounts every PV on its own: one superblock, one set of imports each.
    const TARGET2 = `${KUBELET}/pods/p2/volumes/kubernetes.io~csi/pv2/mount`;
    const [A, B] = ["ffff8f0a3b5c9000", "ffff8f0a3b5ca800"];
    const two = (down: boolean): FakeLustreState => ({
      ...state(),
      filesystems: [
        { name: "lustrefs", instance: A, mountpoint: TARGET, mdts: 1, osts: 8 },
        { name: "lustrefs", instance: B, mountpoint: TARGET2, mdts: 1, osts: 8, ...(down ? { states: { OST0005: "DISCONN" }, history: { OST0005: [[now - 300, "DISCONN"]] } } : {}) },
      ],
    });
    // A second volume check that tells how many import and state blocks of each mount it was handed.
    const count = (needle: string) => `count(input, ${JSON.stringify(needle)}).toString()`;
    const spy = await compileAs(`
function count(s: string, needle: string): i32 {
  let n = 0;
  for (let i = s.indexOf(needle); i >= 0; i = s.indexOf(needle, i + needle.length)) n++;
  return n;
}
export function manifest(): string {
  return '{"abi":1,"name":"import-spy","version":"1.0.0","description":"test","sources":["lctl.imports","lctl.import_states","lfs.getname"],"modes":["node"],"probe":"volume","severity":"required"}';
}
export function check(input: string): string {
  const saw = "A " + ${count(`-${A}.import=`)} + "/" + ${count(`-${A}.state=`)} + " B " + ${count(`-${B}.import=`)} + "/" + ${count(`-${B}.state=`)} + " mgc " + ${count("mgc.MGC10.0.0.2@tcp.import=")} + "/" + ${count("mgc.MGC10.0.0.2@tcp.state=")};
  return '{"status":"warn","reason":"Saw","message":"' + saw + '","facts":{},"health":[{"status":"DEGRADED","reason":"Saw","message":"' + saw + '"}]}';
}
`);
    const s = await setup(two(false), { "import-spy": spy });
    s.health.registry.remember({ volumeId: "pv2", targetPath: TARGET2, readOnly: false, origin: "publish" });
    await waitFor(() => s.health.view.volume("pv2"), "pv2 evaluated");
    await s.round();
    const saw = (id: string) => s.health.view.volume(id)!.find((e) => e.check === "import-spy")?.message;
    const lustre = (id: string) => s.health.view.volume(id)!.filter((e) => e.check === "volume-lustre-health");
    // 9 imports (1 MDT, 8 OSTs) with their state blocks, and the shared MGC's import and state; nothing of the other mount.
    expect(saw("pv1")).toBe("A 9/9 B 0/0 mgc 1/1");
    expect(saw("pv2")).toBe("A 0/0 B 9/9 mgc 1/1");
    expect(lustre("pv1")).toEqual([]);
    expect(lustre("pv2")).toEqual([]);

    s.n.setLustre(two(true));
    await s.round();
    expect(s.health.view.storage()).toMatchObject([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable" }]);
    expect(lustre("pv2")).toMatchObject([{ status: "DEGRADED", reason: "OstUnreachable", fs: "lustrefs" }]);
    expect(lustre("pv2")[0]!.message).toContain("OST0005 (DISCONN");
    expect(lustre("pv2")[0]!.message).toContain("1 of 8 OSTs");
    expect(lustre("pv1")).toEqual([]);
    // The legacy condition (a degraded volume is a warning there, not abnormal) names the OST for pv2 only.
    expect(s.health.view.volumeCondition("pv2")!.message).toContain("OST0005");
    expect(s.health.view.volumeCondition("pv1")!.message).not.toContain("OST0005");

    // Without lfs the mounts cannot be told apart: both volumes get the whole
    // listing, and the check falls back to every mount of the file system (fail closed).
    s.n.missing("lfs");
    await s.round();
    expect(saw("pv1")).toBe("A 9/9 B 9/9 mgc 1/1");
    expect(lustre("pv1").map((e) => e.reason)).toContain("OstUnreachable");
  });
});
