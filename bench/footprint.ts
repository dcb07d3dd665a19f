// Section "footprint": where probegate's RSS goes, on each Node runtime.
// - the process's own view (process.memoryUsage, V8 heap spaces, code statistics),
//   read through a preload (lib/mem-report.ts) on SIGUSR2, after start and after load;
// - RSS by mapping kind (lib/smaps.ts): node binary paged in, malloc, anonymous;
// - the sandbox worker and plugins: probegate with an empty --plugins-dir, by difference;
// - bare node, and each library probegate loads at start imported alone (load/lib-cost.ts);
// - GC activity under load (--trace-gc lines counted by kind).
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import type { LibCostResult } from "./load/lib-cost.js";
import { runH2load, type H2loadParams } from "./load/h2load.js";
import { PROBEGATE_NODE_ENV } from "./lib/launch.js";
import { sleep } from "./lib/net.js";
import { rssBytes } from "./lib/proc.js";
import { type RunningServer, startServer } from "./lib/server.js";
import { smapsOf, type SmapsBreakdown } from "./lib/smaps.js";
import type { MemReport } from "./lib/mem-report.js";
import type { ServerCtx, ServerTarget } from "./targets.js";

/** What probegate imports at start, outermost first; measured one by one in a fresh process. */
export const START_LIBRARIES = [
  "node:http2",
  "node:worker_threads",
  "@bufbuild/protobuf",
  "@connectrpc/connect",
  "@connectrpc/connect-node",
  "hono",
  "@hono/node-server",
  "pino",
  "prom-client",
  "zod",
  "yaml",
  "@assemblyscript/loader",
  // The whole CLI as it runs (the bundle bin/probegate.js loads), without starting it.
  "dist/gateway/bundle/main.js",
];

export interface FootprintPoint {
  rssMiB: number;
  smaps: SmapsBreakdown;
  report?: MemReport;
}

export interface FootprintRun {
  node: string;
  version: string;
  bare: FootprintPoint;
  noPlugins: FootprintPoint;
  started: FootprintPoint;
  afterLoad?: FootprintPoint & { probes: number };
  gc?: { scavenges: number; markCompacts: number; probes: number };
  libraries: (LibCostResult & { deltaRssMiB: number; deltaHeapMiB: number })[];
  errors: string[];
}

const MiB = 1024 * 1024;

async function point(pid: number, reportFile?: string): Promise<FootprintPoint> {
  let report: MemReport | undefined;
  if (reportFile) {
    fs.rmSync(reportFile, { force: true });
    process.kill(pid, "SIGUSR2");
    for (let i = 0; i < 50 && !fs.existsSync(reportFile); i++) await sleep(50);
    if (fs.existsSync(reportFile)) report = JSON.parse(fs.readFileSync(reportFile, "utf8")) as MemReport;
  }
  return { rssMiB: rssBytes(pid) / MiB, smaps: smapsOf(pid), report };
}

function childJson<T>(node: string, args: string[], cwd: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const p = spawn(node, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("error", reject);
    p.on("close", (code) => {
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0 || !last.startsWith("{")) reject(new Error(`exit ${code}: ${err.slice(-500)}`));
      else resolve(JSON.parse(last) as T);
    });
  });
}

export interface FootprintOptions {
  root: string;
  tmp: string;
  target: ServerTarget;
  node: { bin: string; version: string };
  ctx: (name: string) => Promise<ServerCtx>;
  /** Probes of load between the start and after-load points (h2load c8 m4, TCP h2c). */
  probes: number;
  grpcLoad: (port: number, requests: number) => H2loadParams;
  /** Node flags probegate runs with (from the launcher); used for bare node and the library imports too. */
  nodeFlags: string[];
  log: (s: string) => void;
}

export async function measureFootprint(o: FootprintOptions): Promise<FootprintRun> {
  const run: FootprintRun = {
    node: o.node.bin,
    version: o.node.version,
    bare: { rssMiB: NaN, smaps: smapsOf(process.pid) },
    noPlugins: { rssMiB: NaN, smaps: smapsOf(process.pid) },
    started: { rssMiB: NaN, smaps: smapsOf(process.pid) },
    libraries: [],
    errors: [],
  };
  // Bare node, idle.
  const bare = spawn(o.node.bin, [...o.nodeFlags, "-e", "setInterval(() => {}, 1 << 30)"], { stdio: "ignore", env: { ...process.env, ...PROBEGATE_NODE_ENV } });
  await sleep(1000);
  run.bare = await point(bare.pid!);
  bare.kill("SIGKILL");

  const settle = async () => sleep(3000); // first check round done, plugins loaded
  // probegate without plugins: no sandbox worker is started.
  const emptyDir = path.join(o.tmp, "no-plugins");
  fs.mkdirSync(emptyDir, { recursive: true });
  let s: RunningServer | undefined;
  try {
    s = await startServer(o.target, { ...(await o.ctx("fp-noplugins")), pluginsDir: emptyDir, node: o.node.bin });
    await settle();
    run.noPlugins = await point(s.pid);
  } catch (e) {
    run.errors.push(`without plugins: ${(e as Error).message}`);
  } finally {
    await s?.stop();
  }

  // probegate as measured, with the reporter preloaded and --trace-gc.
  const reportFile = path.join(o.tmp, "memreport.json");
  const preload = path.join(o.root, "dist/bench/lib/mem-report.js");
  const ctx = { ...(await o.ctx("fp")), node: o.node.bin };
  try {
    s = await startServer(o.target, ctx, ["--import", preload, "--trace-gc"], 30_000, { PROBEGATE_BENCH_MEMREPORT: reportFile });
    let scavenges = 0;
    let markCompacts = 0;
    let counting = false;
    let buf = "";
    s.proc.stdout!.on("data", (d) => {
      buf += d;
      const lines = buf.split("\n");
      buf = lines.pop()!;
      if (!counting) return;
      for (const l of lines) {
        if (/\bScavenge\b/.test(l)) scavenges++;
        else if (/Mark-(Compact|Sweep)/i.test(l)) markCompacts++;
      }
    });
    await settle();
    run.started = await point(s.pid, reportFile);
    if (o.probes > 0) {
      counting = true;
      await runH2load(o.grpcLoad(ctx.port, o.probes));
      counting = false;
      await sleep(500);
      run.afterLoad = { ...(await point(s.pid, reportFile)), probes: o.probes };
      run.gc = { scavenges, markCompacts, probes: o.probes };
    }
  } catch (e) {
    run.errors.push(`with plugins: ${(e as Error).message}`);
  } finally {
    await s?.stop();
  }

  // Each library alone.
  const script = path.join(o.root, "dist/bench/load/lib-cost.js");
  let base: LibCostResult | undefined;
  for (const m of ["none", ...START_LIBRARIES]) {
    const module = m.startsWith("dist/") ? path.join(o.root, m) : m;
    try {
      const r = await childJson<LibCostResult>(o.node.bin, [...o.nodeFlags, "--expose-gc", script, JSON.stringify({ module })], o.root);
      if (m === "none") base = r;
      else run.libraries.push({ ...r, module: m, deltaRssMiB: r.rssMiB - (base?.rssMiB ?? NaN), deltaHeapMiB: r.heapUsedMiB - (base?.heapUsedMiB ?? NaN) });
    } catch (e) {
      run.errors.push(`import ${m}: ${(e as Error).message}`);
    }
  }
  o.log(`footprint on node ${o.node.version}: start ${run.started.rssMiB.toFixed(1)} MiB, bare ${run.bare.rssMiB.toFixed(1)} MiB`);
  return run;
}
