// Quick bench (not part of `npm run bench`): the gateway CPU one background
// volume-health round costs, with N volumes each evaluated by a volume check
// that reads volume.statfs (the real coreutils `stat -f` in a child process,
// on local directories). Run: npm run ts:build && node dist/bench/storage-round.js [N...]
// The storage checks' parsing cost (lctl output, OST counts) belongs to the
// engine round and is measured with the Lustre plugins (bench rows of the report).
// Rounds are 1.1 s apart: within the statfs interval (30 s) a healthy path's
// answer is reused, so the default run gives the steady cost; with
// STATFS_INTERVAL_MS=0 every round probes every path (what a probe costs).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { CheckEngine } from "../gateway/src/engine/engine.js";
import { createStorageHealth } from "../gateway/src/engine/health/index.js";
import { SourceCatalog } from "../gateway/src/engine/sources/index.js";
import { Metrics } from "../gateway/src/observability/metrics.js";
import { PluginRuntime } from "../gateway/src/runtime/runtime.js";

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
    const catalog = await SourceCatalog.create({ procfs, sysfs: root, logger, ...(interval ? { statfsIntervalMs: Number(interval) } : {}) });
    const metrics = new Metrics({ processMetrics: false });
    const runtime = new PluginRuntime({ dir: plugins, isKnownSource: (s) => catalog.has(s), logger });
    const engine = new CheckEngine({ mode: "node", catalog, runtime, checkIntervalMs: 3_600_000, logger, metrics });
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
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await health.refreshVolumes();
      wallMs += performance.now() - t0;
      const c = process.cpuUsage(c0);
      cpuUs += c.user + c.system;
    }
    const bad = health.view.volumes().filter((v) => (v.entries?.length ?? 1) > 0).length;
    console.log(JSON.stringify({ volumes: n, cpuMsPerRound: +(cpuUs / rounds / 1000).toFixed(2), wallMsPerRound: +(wallMs / rounds).toFixed(1), volumesWithEntries: bad }));
    await health.stop();
    await engine.stop();
    await catalog.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

void main();
