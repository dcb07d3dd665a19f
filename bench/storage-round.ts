// Quick bench (not part of `npm run bench`): the gateway CPU one background
// volume-health round costs, with N volumes each evaluated by a volume check
// that reads volume.statfs (the real coreutils `stat -f` in a child process,
// on local directories). Run: npm run ts:build && node dist/bench/storage-round.js [N...]
// The storage checks' parsing cost (lctl output, OST counts) belongs to the
// engine round and is measured with the Lustre plugins (bench rows of the report).
// Rounds are 1.1 s apart: within the statfs interval (30 s) a healthy path's
// answer is reused, so the default run gives the steady cost; with
// STATFS_INTERVAL_MS=0 every round probes every path (what a probe costs).
// SPAWNER=off starts the commands and probes with a fork of this process each,
// as --command-spawner=off does; by default they go through the command spawner.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { ReadinessEngine } from "../gateway/src/engine/readiness-engine.js";
import { createStorageHealth } from "../gateway/src/storage-health/index.js";
import { SourceCatalog } from "../gateway/src/engine/sources/index.js";

const SPAWNER = process.env.SPAWNER !== "off";
import { Metrics } from "../gateway/src/observability/metrics.js";
import { PluginRuntime } from "../gateway/src/runtime/runtime.js";
import { median } from "./lib/median.js";

const PLUGIN = `
export function manifest(): string {
  return '{"abi":1,"name":"vol-statfs","version":"1.0.0","description":"bench","sources":["volume.statfs","proc.mounts"],"modes":["node"],"probe":"volume","severity":"required"}';
}
export function check(input: string): string {
  if (input.includes(" hung ")) return '{"status":"fail","reason":"MountHung","message":"hung","facts":{},"health":[{"status":"INACCESSIBLE","reason":"MountHung","message":"hung"}]}';
  if (!input.includes(" ok ")) return '{"status":"fail","reason":"StatfsFailed","message":"statfs","facts":{},"health":[{"status":"INACCESSIBLE","reason":"StatfsFailed","message":"statfs"}]}';
  return '{"status":"pass","reason":"Ok","message":"ok","facts":{}}';
}
`;

/**
 * The compiler is not loaded in the measuring process: its heap would make
 * every fork (the statfs children) look far dearer than in a gateway.
 */
async function main(): Promise<void> {
  if (!process.env.BENCH_WASM) {
    const asc = (await import("assemblyscript/asc")).default;
    const source = process.env.NO_STATFS ? PLUGIN.replace('"volume.statfs",', "") : PLUGIN;
    const compiled = await asc.compileString({ "plugin.ts": source }, { exportRuntime: true, optimizeLevel: 3, runtime: "incremental" } as Parameters<typeof asc.compileString>[1]);
    if (!compiled.binary) throw new Error(String(compiled.stderr));
    const file = join(mkdtempSync(join(tmpdir(), "probegate-bench-wasm-")), "vol-statfs.wasm");
    writeFileSync(file, compiled.binary);
    const { spawnSync } = await import("node:child_process");
    spawnSync(process.execPath, process.argv.slice(1), { stdio: "inherit", env: { ...process.env, BENCH_WASM: file } });
    rmSync(join(file, ".."), { recursive: true, force: true });
    return;
  }
  const binary = readFileSync(process.env.BENCH_WASM);
  if (process.argv.includes("--lustre")) {
    const args = process.argv.slice(2);
    const at = args.indexOf("--osts");
    const osts = at >= 0 ? Number(args.splice(at, 2)[1]) : 64;
    const h = args.indexOf("--history");
    const history = h >= 0 ? Number(args.splice(h, 2)[1]) : 2;
    return lustreRounds(args.map(Number).filter((n) => n > 0), osts > 0 ? osts : 64, history >= 1 && history <= 16 ? Math.floor(history) : 2);
  }
  const counts = process.argv.slice(2).map(Number).filter((n) => n > 0);
  const logger = pino({ level: "silent" });
  for (const n of counts.length ? counts : [1, 8, 64]) {
    const root = mkdtempSync(join(tmpdir(), "probegate-bench-storage-"));
    const procfs = join(root, "proc");
    mkdirSync(join(procfs, "1"), { recursive: true });
    const plugins = join(root, "plugins");
    mkdirSync(plugins);
    writeFileSync(join(plugins, "vol-statfs.wasm"), binary);
    let mounts = "";
    for (let i = 0; i < n; i++) {
      const p = join(root, "vols", `v${i}`);
      mkdirSync(p, { recursive: true });
      mounts += `10.0.0.1@tcp:/fs1 ${p} lustre rw,flock 0 0\n`;
    }
    writeFileSync(join(procfs, "1", "mounts"), mounts);
    // STATFS_INTERVAL_MS=0 probes every path every round (the cost of one probe per volume).
    const interval = process.env.STATFS_INTERVAL_MS;
    const catalog = await SourceCatalog.create({ procfs, sysfs: root, logger, commandSpawner: SPAWNER, ...(interval ? { statfsIntervalMs: Number(interval) } : {}) });
    const metrics = new Metrics({ processMetrics: false });
    const runtime = new PluginRuntime({ dir: plugins, isKnownSource: (s) => catalog.has(s), logger });
    const engine = new ReadinessEngine({ mode: "node", catalog, runtime, checkIntervalMs: 3_600_000, logger, metrics });
    const health = createStorageHealth({ mode: "node", engine, runtime, catalog, logger, metrics, maxVolumes: 1024 });
    await engine.start();
    for (let i = 0; i < n; i++) health.registry.remember({ volumeId: `v${i}`, targetPath: join(root, "vols", `v${i}`), origin: "publish" });
    // Warm up (JIT, the sandbox), then measure rounds past the statfs cache's second.
    for (let i = 0; i < 3; i++) await health.refreshVolumes();
    const rounds = 10;
    let cpuUs = 0;
    let wallMs = 0;
    for (let i = 0; i < rounds; i++) {
      await new Promise((r) => setTimeout(r, 1100));
      const s0 = spawnerSchedMs(catalog.spawner?.pid);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await health.refreshVolumes();
      wallMs += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpuUs += c.user + c.system + (spawnerSchedMs(catalog.spawner?.pid) - s0) * 1000;
    }
    const bad = health.view.volumes().filter((v) => (v.entries?.length ?? 1) > 0).length;
    console.log(JSON.stringify({ volumes: n, cpuMsPerRound: +(cpuUs / rounds / 1000).toFixed(2), wallMsPerRound: +(wallMs / rounds).toFixed(1), volumesWithEntries: bad }));
    await health.stop();
    await engine.stop();
    await catalog.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

/**
 * --lustre: whole rounds (engine round with the bundled lustre-imports storage
 * check, then the volume round with volume-lustre-health) on a fake client
 * whose N mounts of one file system each hold 1 MDT and --osts OSTs (default
 * 64; N×(OSTs+1) imports), the demo's fake lctl/lfs and a fake stat; rounds
 * 2.1 s apart so the lctl outputs are read anew each round (the command cache
 * lives 2 s), as at the default 5 s interval. statfs answers are reused (30 s)
 * as on a node. Every PV is its own mount instance, as kubelet mounts them.
 * The bundled checks read the state listing (`lctl.import_states`, MGC
 * included) and not the import listing, so the listing size reported is the
 * state listing's; --history N (1–16, default 2: a first connect) sets the
 * entries per state history (16: the kernel's full ring on a long-mounted
 * client whose OSCs go idle and reconnect). A listing over the lctl sources'
 * 4 MiB cap is read with the cap raised, so the row measures the cost rather
 * than the cut (the row says `capRaisedMiB`). Medians of 8 rounds; `rssMiB`
 * is this process's RSS after the rounds (one count per run to compare).
 *   node dist/bench/storage-round.js --lustre [--osts 1000] [--history 16] 1 8 64
 * ROUND_GAP_MS=300: rounds within the command cache (no fork), to tell the fork from the rest.
 */
async function lustreRounds(counts: number[], osts: number, historyLength: number): Promise<void> {
  const { demoBinDir } = await import("../gateway/src/engine/sources/demo.js");
  const fake = (await import(join(demoBinDir(), "..", "lib", "fake-lustre.js"))) as {
    renderImports(d: object): string;
    renderStates(d: object): string;
    renderGetname(d: object): string;
  };
  const logger = pino({ level: "silent" });
  const table: Array<Record<string, number | string>> = [];
  for (const n of counts.length ? counts : [1, 8]) {
    const root = mkdtempSync(join(tmpdir(), "probegate-bench-lustre-"));
    const procfs = join(root, "proc");
    mkdirSync(join(procfs, "1"), { recursive: true });
    const bin = join(root, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "stat"), "#!/bin/sh\necho bd00bd0\n", { mode: 0o755 });
    const plugins = join(root, "plugins");
    mkdirSync(plugins);
    for (const p of ["lustre-imports", "volume-lustre-health"]) writeFileSync(join(plugins, `${p}.wasm`), readFileSync(join(process.cwd(), "dist/plugins", `${p}.wasm`)));
    const since = Math.floor(Date.now() / 1000) - 3600;
    const filesystems = Array.from({ length: n }, (_, i) => ({
      name: "lustrefs",
      instance: (0xffff8f0a3b5c0000n + BigInt(i) * 0x1000n).toString(16),
      mountpoint: `/var/lib/kubelet/pods/p${i}/volumes/kubernetes.io~csi/pv${i}/mount`,
      mdts: 1,
      osts,
    }));
    const desc = { version: "2.15", mgsNid: "10.0.0.2@tcp", since, historyLength, filesystems };
    writeFileSync(join(root, "imports.out"), fake.renderImports(desc));
    writeFileSync(join(root, "import_states.out"), fake.renderStates(desc));
    writeFileSync(join(root, "getname.out"), fake.renderGetname(desc));
    writeFileSync(join(root, "health_check.out"), "healthy\n");
    writeFileSync(join(procfs, "1", "mounts"), filesystems.map((f) => `10.0.0.2@tcp:/lustrefs ${f.mountpoint} lustre rw,flock,lazystatfs 0 0\n`).join(""));
    // The same table as mountinfo (its mount IDs are what lfs.getname is kept by).
    writeFileSync(
      join(procfs, "1", "mountinfo"),
      "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n" +
        filesystems.map((f, i) => `${100 + i} 22 0:${60 + i} / ${f.mountpoint} rw,relatime shared:${200 + i} - lustre 10.0.0.2@tcp:/lustrefs rw,flock,lazystatfs\n`).join(""),
    );
    const env = { ...process.env, PATH: `${bin}:${demoBinDir()}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: root };
    const listingBytes = Buffer.byteLength(fake.renderStates(desc));
    const cap = 4 * 1024 * 1024;
    const capRaisedMiB = listingBytes > cap ? Math.ceil((listingBytes * 1.25) / 1024 / 1024) : 0;
    const defaults = capRaisedMiB ? { defaults: { maxOutputBytes: capRaisedMiB * 1024 * 1024 } } : {};
    const interval = process.env.STATFS_INTERVAL_MS;
    const catalog = await SourceCatalog.create({ procfs, sysfs: root, env, logger, commandSpawner: SPAWNER, ...defaults, ...(interval ? { statfsIntervalMs: Number(interval) } : {}) });
    const metrics = new Metrics({ processMetrics: false });
    const runtime = new PluginRuntime({ dir: plugins, isKnownSource: (s) => catalog.has(s), logger });
    const engine = new ReadinessEngine({ mode: "node", catalog, runtime, checkIntervalMs: 3_600_000, logger, metrics });
    const health = createStorageHealth({ mode: "node", engine, runtime, catalog, logger, metrics });
    await engine.start();
    filesystems.forEach((f, i) => health.registry.remember({ volumeId: `pv${i}`, targetPath: f.mountpoint, readOnly: false, origin: "publish" }));
    const round = async () => {
      await engine.refresh();
      await health.refreshVolumes();
    };
    for (let i = 0; i < 3; i++) await round();
    const rounds = 8;
    const whole: number[] = [];
    const spawnerRound: number[] = [];
    const vol: number[] = [];
    // The fake tools log each run: lfs getname's runs per round show whether it was kept.
    const getnameRuns = () => {
      try {
        return readFileSync(join(root, "calls.log"), "utf8").split("\n").filter((l) => l.startsWith("getname ")).length;
      } catch {
        return 0;
      }
    };
    const getnameBefore = getnameRuns();
    // ROUND_GAP_MS (default 2100: past the 2 s command cache, lctl runs every round); under 2000 the
    // rounds read cached outputs (no fork), which shows what the rest of a round costs.
    const gapMs = Number(process.env.ROUND_GAP_MS ?? 2100);
    const spawnerMs = (): number => spawnerSchedMs(catalog.spawner?.pid);
    for (let i = 0; i < rounds; i++) {
      await new Promise((r) => setTimeout(r, gapMs));
      const s0 = spawnerMs();
      const c0 = process.cpuUsage();
      await engine.refresh();
      const c1 = process.cpuUsage();
      const s1 = spawnerMs();
      await health.refreshVolumes();
      const c = process.cpuUsage(c0);
      const v = process.cpuUsage(c1);
      const s2 = spawnerMs();
      whole.push((c.user + c.system) / 1000 + (s2 - s0));
      vol.push((v.user + v.system) / 1000 + (s2 - s1));
      spawnerRound.push(s2 - s0);
    }
    const adverse = health.view.volumes().filter((v) => (v.entries?.length ?? 1) > 0).length + health.view.storage().length;
    const row = {
      mode: "lustre",
      spawner: catalog.spawner !== undefined && catalog.spawner.fallbackReason === undefined ? "on" : "off",
      volumes: n,
      osts,
      imports: n * (osts + 1),
      history: historyLength,
      listingKiB: Math.round(listingBytes / 1024),
      cpuMsPerRound: +median(whole).toFixed(2),
      spawnerMsPerRound: +median(spawnerRound).toFixed(3),
      volumeRoundCpuMs: +median(vol).toFixed(2),
      volumeCpuMsPerVolume: +(median(vol) / n).toFixed(3),
      getnameRunsPerRound: +((getnameRuns() - getnameBefore) / rounds).toFixed(2),
      adverseEntries: adverse,
      volumeChecksReused: ((await metrics.registry.getSingleMetric("probegate_volume_checks_total")?.get())?.values ?? []).find((v) => v.labels.result === "reused")?.value ?? 0,
      // Absent before the engine kept stable verdicts (older builds print 0).
      engineChecksReused: ((await metrics.registry.getSingleMetric("probegate_check_evaluations_total")?.get())?.values ?? []).filter((v) => v.labels.result === "reused").reduce((t, v) => t + v.value, 0),
      rssMiB: Math.round(process.memoryUsage().rss / 1024 / 1024),
      ...(capRaisedMiB ? { capRaisedMiB } : {}),
    };
    console.log(JSON.stringify(row));
    table.push(row);
    await health.stop();
    await engine.stop();
    await catalog.stop();
    rmSync(root, { recursive: true, force: true });
  }
  console.log("\n| volumes | OSTs | imports | history | state listing KiB | round CPU ms | volume part ms | per volume ms | getname runs/round | adverse | RSS MiB |");
  console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of table) {
    console.log(`| ${r.volumes} | ${r.osts} | ${r.imports} | ${r.history} | ${r.listingKiB}${r.capRaisedMiB ? ` (cap ${r.capRaisedMiB} MiB)` : ""} | ${r.cpuMsPerRound} | ${r.volumeRoundCpuMs} | ${r.volumeCpuMsPerVolume} | ${r.getnameRunsPerRound} | ${r.adverseEntries} | ${r.rssMiB} |`);
  }
}

/**
 * The command spawner's own on-CPU time so far, ms (0 without one). It is part
 * of the gateway, so its CPU counts in a round; read outside the measured
 * window, as its schedstat is cheap but not free.
 */
function spawnerSchedMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;
  } catch {
    return 0;
  }
}

void main();
