// Node 24 against Node 20: probegate's RSS after start and under load, for
// sets of node flags (issue #43's +17 % / +29 %). Each (runtime, flags) is a
// fresh gateway on the bench's fake node (the demo's healthy scenario, the
// compiled fake tools when `cc` is there), measured as the memory section
// does: VmRSS of the gateway (its command spawner beside it) 5 s after Probe
// first answers ready, then after N and 2N gRPC Probes (h2load c8 m4, TCP h2c).
// Rows alternate runtime and flag set, REPS times, and the medians are printed.
//
//   npm run ts:build && node dist/bench/rss-flags.js [--reps 3] [--probes 100000] [--node24 PATH]
//   RSS_FLAGS='image;image --optimize-for-size;…' to choose the sets ("image" = PROBEGATE_NODE_FLAGS)
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { PROBE_PATH, PROBE_REQUEST_FRAME } from "./lib/grpc.js";
import { PROBEGATE_NODE_FLAGS } from "./lib/launch.js";
import { isMain } from "./lib/main.js";
import { freePort, sleep } from "./lib/net.js";
import { resolveNode24 } from "./lib/node24.js";
import { repoRoot } from "./lib/paths.js";
import { cpuSample, rssBytes, spawnerRssBytes } from "./lib/proc.js";
import { startServer } from "./lib/server.js";
import { runH2load } from "./load/h2load.js";
import { TARGETS, type ServerTarget, useFakeNode } from "./targets.js";
import { median } from "./lib/median.js";

const MiB = 1048576;

export interface RssRow {
  runtime: string;
  flags: string;
  startMiB: number[];
  loadMiB: number[];
  load2MiB: number[];
  spawnerMiB: number[];
  /** Gateway CPU per Probe over both loads (schedstat of its threads), µs: what a flag costs in CPU. */
  cpuPerProbeUs: number[];
}

/** The probegate target with `flags` in place of the image's node flags. */
function withFlags(t: ServerTarget, flags: string[]): ServerTarget {
  return {
    ...t,
    command: (c) => {
      const base = t.command(c);
      const args = base.args.slice(base.args.indexOf("bin/probegate.js"));
      return { ...base, args: [...flags, ...args] };
    },
  };
}

function parseSets(spec: string): Array<{ name: string; flags: string[] }> {
  return spec.split(";").map((s) => s.trim()).filter(Boolean).map((s) => {
    const words = s.split(/\s+/);
    const flags = words.flatMap((w) => (w === "image" ? PROBEGATE_NODE_FLAGS : [w]));
    return { name: s, flags };
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opt = (name: string, dflt: string) => {
    const i = argv.indexOf(name);
    return i >= 0 && argv[i + 1] ? argv[i + 1]! : dflt;
  };
  const reps = Number(opt("--reps", "2"));
  const probes = Number(opt("--probes", "100000"));
  const n24 = resolveNode24(opt("--node24", "auto"));
  if (!n24 || "error" in n24) throw new Error(`Node 24: ${n24 && "error" in n24 ? n24.error : "off"}`);
  const root = repoRoot();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-rss-flags-"));
  // The same node the memory section checks: compiled fakes on the demo's healthy scenario.
  const bin = path.join(tmp, "bin");
  fs.mkdirSync(bin);
  const cc = spawnSync("cc", ["-O2", "-o", path.join(bin, "lnetctl"), path.join(root, "bench/fixtures/fake-lnet.c")]);
  if (cc.status === 0) {
    for (const t of ["lctl", "lfs", "mount.lustre", "stat"]) fs.copyFileSync(path.join(bin, "lnetctl"), path.join(bin, t));
    const scenario = path.join(tmp, "node");
    fs.cpSync(path.join(root, "gateway/demo/scenarios/healthy"), scenario, { recursive: true });
    useFakeNode({ bin, scenario });
  }
  const body = path.join(tmp, "probe.bin");
  fs.writeFileSync(body, PROBE_REQUEST_FRAME);
  const sets = parseSets(process.env.RSS_FLAGS ?? "image");
  const runtimes = [{ bin: process.execPath, version: process.version }, n24];
  const rows = new Map<string, RssRow>();
  const pg = TARGETS.find((t) => t.id === "probegate")!;
  for (let r = 0; r < reps; r++) {
    for (const set of sets) {
      for (const rt of runtimes) {
        const key = `${rt.version}\0${set.name}`;
        const row = rows.get(key) ?? { runtime: rt.version, flags: set.name, startMiB: [], loadMiB: [], load2MiB: [], spawnerMiB: [], cpuPerProbeUs: [] };
        rows.set(key, row);
        const port = await freePort();
        const ctx = { root, socket: path.join(tmp, `rss-${r}.sock`), port, httpPort: port, node: rt.bin };
        const s = await startServer(withFlags(pg, set.flags), ctx);
        try {
          await sleep(5000);
          row.startMiB.push(rssBytes(s.pid) / MiB);
          row.spawnerMiB.push(spawnerRssBytes(s.pid) / MiB);
          const load = { url: `http://127.0.0.1:${port}${PROBE_PATH}`, clients: 8, streams: 4, requests: probes, headers: ["content-type: application/grpc", "te: trailers"], dataFile: body };
          const c0 = cpuSample(s.pid);
          await runH2load(load);
          await sleep(300);
          row.loadMiB.push(rssBytes(s.pid) / MiB);
          await runH2load(load);
          const c1 = cpuSample(s.pid);
          await sleep(300);
          row.load2MiB.push(rssBytes(s.pid) / MiB);
          row.cpuPerProbeUs.push(((c1.sched - c0.sched) * 1e6) / (2 * probes));
        } finally {
          await s.stop();
        }
        process.stderr.write(`[rss-flags] rep ${r + 1}/${reps} Node ${rt.version} ${set.name}: ${row.startMiB.at(-1)!.toFixed(1)} / ${row.loadMiB.at(-1)!.toFixed(1)} / ${row.load2MiB.at(-1)!.toFixed(1)} MiB, ${row.cpuPerProbeUs.at(-1)!.toFixed(1)} µs/Probe\n`);
      }
    }
  }
  const f = (x: number) => x.toFixed(1);
  const out = [
    `RSS MiB, medians of ${reps} (gateway only; spawner beside it), after start / after ${probes / 1000}k / ${(2 * probes) / 1000}k Probes; ${new Date().toISOString()}, load average ${os.loadavg()[0]!.toFixed(1)}`,
    "",
    "| flags | Node 20 start / N / 2N | Node 24 start / N / 2N | Node 24 ÷ Node 20 start / under load (max of N, 2N) | CPU µs per Probe, Node 20 / Node 24 (c8 m4; noisy on a shared machine) |",
    "|---|---|---|---|---|",
  ];
  for (const set of sets) {
    const a = rows.get(`${runtimes[0]!.version}\0${set.name}`)!;
    const b = rows.get(`${runtimes[1]!.version}\0${set.name}`)!;
    const la = Math.max(median(a.loadMiB), median(a.load2MiB));
    const lb = Math.max(median(b.loadMiB), median(b.load2MiB));
    out.push(
      `| \`${set.name}\` | ${f(median(a.startMiB))} / ${f(median(a.loadMiB))} / ${f(median(a.load2MiB))} | ${f(median(b.startMiB))} / ${f(median(b.loadMiB))} / ${f(median(b.load2MiB))} | ${(median(b.startMiB) / median(a.startMiB)).toFixed(2)}× / ${(lb / la).toFixed(2)}× |`,
    );
  }
  process.stdout.write(out.join("\n") + "\n");
  fs.rmSync(tmp, { recursive: true, force: true });
}

if (isMain(import.meta.url)) {
  main().catch((e) => {
    process.stderr.write(`rss-flags failed: ${e?.stack ?? e}\n`);
    process.exit(1);
  });
}
