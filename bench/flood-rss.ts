// `node dist/bench/flood-rss.js [--cycles 6] [--flood 8s] [--pause 7s] [--variants 'as-is;MALLOC_ARENA_MAX=2'] [--modes idle,ping,trickle,malformed,fuzz,burst]`: what
// the soak's connection floods do to a node-mode gateway's memory, and whether
// a malloc setting bounds it. One gateway per variant (the environment as it is,
// or with the variant's NAME=VALUE settings), started like the image (the
// Dockerfile's node flags), get the same floods at the same time (each its own, the
// soak's four kinds in turn). After every flood and its pause, each one's RSS
// is split into V8's share (heap total, external, from its /metrics) and the
// rest, and smaps into the main malloc arena ([heap]) and other anonymous
// memory (thread arenas, V8 pages, wasm). `--modes fuzz` runs rounds of the
// soak's edge fuzz instead of a flood, `burst` its Probe burst for --flood. Prints a Markdown table and one JSON
// line; measures, asserts nothing.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseDuration } from "../gateway/src/engine/sources/index.js";
import { repoRoot } from "./lib/paths.js";
import { flagValue } from "./lib/args.js";
import { isMain } from "./lib/main.js";
import { FLOOD_MODES, startFlood, type FloodMode } from "./soak/conn-flood.js";
import { EdgeFuzzer, type FuzzKind } from "./soak/fuzz-edge.js";
import { GatewayProc } from "./soak/gateway-proc.js";
import { LnetFaults } from "./soak/lnet-faults.js";
import { probeBurst } from "./soak/probe-burst.js";
import { fetchMetrics, parseV8Metrics } from "./soak/v8-metrics.js";
import { smapsOf } from "./lib/smaps.js";
import { Rng } from "./soak/rng.js";

interface MemPoint {
  after: string;
  rssMiB: number;
  heapTotalMiB: number;
  heapUsedMiB: number;
  externalMiB: number;
  brkHeapMiB: number;
  otherAnonMiB: number;
}

const MiB = 1048576;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function point(g: GatewayProc, after: string): Promise<MemPoint> {
  const m = parseV8Metrics(await fetchMetrics(g.port, 10_000));
  const s = smapsOf(g.pid);
  const status = fs.readFileSync(`/proc/${g.pid}/status`, "utf8");
  const rss = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN) * 1024;
  const r = (x: number | undefined) => Math.round(((x ?? NaN) / MiB) * 10) / 10;
  return {
    after,
    rssMiB: r(rss),
    heapTotalMiB: r(m.heapTotal),
    heapUsedMiB: r(m.heapUsed),
    externalMiB: r(m.external),
    brkHeapMiB: r(s.malloc * MiB),
    otherAnonMiB: r(s.anon * MiB),
  };
}

/** "as-is", or space-separated NAME=VALUE settings added to the environment. */
function variantEnv(base: NodeJS.ProcessEnv, v: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, MALLOC_ARENA_MAX: undefined, MALLOC_TRIM_THRESHOLD_: undefined, GLIBC_TUNABLES: undefined };
  if (v === "as-is") return env;
  for (const kv of v.split(" ").filter(Boolean)) {
    const i = kv.indexOf("=");
    if (i <= 0) throw new Error(`--variants: ${JSON.stringify(kv)} is not NAME=VALUE`);
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return env;
}

/** One load step against every gateway at once: a flood of one kind, (`fuzz`) a round of the soak's edge fuzz, or (`burst`) the soak's Probe burst. */
type Step = FloodMode | "fuzz" | "burst";

async function loadStep(step: Step, gws: GatewayProc[], o: { floodMs: number }, seed: number): Promise<void> {
  if (step === "burst") {
    await Promise.all(gws.map((g) => probeBurst(g, o.floodMs)));
    return;
  }
  if (step === "fuzz") {
    const kinds: FuzzKind[][] = [["h1-random", "h2-request"], ["h2-frames"], ["h1-split", "h2-split"]];
    await Promise.all(gws.map((g) => new EdgeFuzzer({ host: "127.0.0.1", port: g.port, socket: g.spec.socket }, { seed, cases: 40, kinds: kinds[seed % kinds.length], splitPositions: 24, deadlineMs: 5_000 }).run()));
    return;
  }
  const count = step === "malformed" ? 300 : 1000;
  const running = gws.flatMap((g) => [startFlood(step, `127.0.0.1:${g.port}`, count), ...(step === "trickle" ? [] : [startFlood(step, g.spec.socket, count)])]);
  await sleep(o.floodMs);
  for (const f of running) f.stop();
}

export async function floodRss(o: { cycles: number; floodMs: number; pauseMs: number; variants: string[]; modes: readonly Step[] }): Promise<Record<string, MemPoint[]>> {
  const root = repoRoot();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-flood-rss-"));
  const lnet = new LnetFaults(work, new Rng(1));
  const variants = o.variants.map((v) => [v, variantEnv(lnet.env(), v)] as const);
  const t0 = Date.now();
  const gws = variants.map(([name, env], i) => {
    const sock = path.join(work, `g${i}.sock`);
    const args = [`--csi-endpoint=unix://${sock}`, `--plugins-dir=${path.join(root, "dist/plugins")}`, "--http-endpoint=127.0.0.1:0", `--path.procfs=${lnet.node.procfs}`, `--path.sysfs=${lnet.node.sysfs}`, "--check-interval=2000ms", `--kubelet-dir=${path.join(work, `kubelet${i}`)}`, "--log-level=info"];
    return new GatewayProc({ name, root, socket: sock, env, heapMiB: 48, args }, t0);
  });
  const out: Record<string, MemPoint[]> = {};
  // Interrupted: take the gateways down with this process rather than leave them running.
  const onSignal = () => {
    for (const g of gws) g.child?.kill("SIGKILL");
    lnet.cleanup();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  try {
    for (const g of gws) await g.start();
    await sleep(20_000);
    for (const g of gws) out[g.spec.name] = [await point(g, "start")];
    for (let c = 0; c < o.cycles; c++) {
      for (const [i, mode] of o.modes.entries()) {
        await loadStep(mode, gws, o, c * o.modes.length + i);
        await sleep(o.pauseMs);
        for (const g of gws) out[g.spec.name].push(await point(g, `${c + 1}:${mode}`));
        process.stderr.write(`flood-rss: cycle ${c + 1} ${mode}: ${gws.map((g) => `${g.spec.name} ${out[g.spec.name].at(-1)!.rssMiB} MiB`).join(", ")}\n`);
      }
    }
  } finally {
    for (const g of gws) await g.stop();
    lnet.cleanup();
    fs.rmSync(work, { recursive: true, force: true });
  }
  return out;
}

function markdown(r: Record<string, MemPoint[]>): string {
  const rows = ["| gateway | after | RSS | V8 heap total (used) | external | [heap] (main arena) | other anonymous |", "|---|---|---|---|---|---|---|"];
  for (const [name, pts] of Object.entries(r)) {
    for (const p of pts) rows.push(`| ${name} | ${p.after} | ${p.rssMiB} | ${p.heapTotalMiB} (${p.heapUsedMiB}) | ${p.externalMiB} | ${p.brkHeapMiB} | ${p.otherAnonMiB} |`);
  }
  return rows.join("\n");
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const get = (flag: string, dflt: string) => flagValue(args, flag, dflt);
  const cycles = Number(get("--cycles", "6"));
  const floodMs = parseDuration(get("--flood", "8s"));
  const pauseMs = parseDuration(get("--pause", "7s"));
  if (!Number.isInteger(cycles) || cycles < 1 || floodMs === null || pauseMs === null) {
    process.stderr.write("usage: node dist/bench/flood-rss.js [--cycles 6] [--flood 8s] [--pause 7s] [--variants 'as-is;MALLOC_ARENA_MAX=2'] [--modes idle,ping,trickle,malformed,fuzz,burst]\n");
    process.exit(2);
  }
  const variants = get("--variants", "as-is;MALLOC_ARENA_MAX=2").split(";").map((v) => v.trim()).filter(Boolean);
  const modes = get("--modes", FLOOD_MODES.join(",")).split(",") as Step[];
  if (!modes.every((m) => m === "fuzz" || m === "burst" || FLOOD_MODES.includes(m))) {
    process.stderr.write(`--modes: a comma-separated list of ${FLOOD_MODES.join(", ")}, fuzz, burst\n`);
    process.exit(2);
  }
  const r = await floodRss({ cycles, floodMs, pauseMs, variants, modes });
  process.stdout.write(`${markdown(r)}\n\n${JSON.stringify(r)}\n`);
}
