// Quick bench (not part of `npm run bench`): the price of each kind of
// crossing a check round makes, so a round's CPU can be written as
// (commands × cost) + (file reads × cost) + (plugin calls × cost) + rest, and
// the floor under issue #43's "one readiness round ≤ 4 ms of gateway+spawner
// CPU" can be read off instead of guessed. A whole-round figure (node-cost,
// storage-round) says how much; it cannot say which crossing to make cheaper
// or fewer of, nor whether a target is under what the crossings alone cost.
// Each crossing goes through the product's own code, one at a time (as a
// round awaits them), and is priced three ways: the whole process (main
// thread, libuv pool, sandbox worker), the main thread alone (what competes
// with Probe answers), and for commands the spawner process too.
// Back-to-back calls run on warm caches and tiered-up code, which a round
// every 10 s never has: `--spaced` then prices a round's crossings together,
// one round every --gap-ms (10 s, the readiness cadence), against the same
// process doing nothing over the same gaps: the floor under a round, before
// any of the engine's own work.
//   npm run build && node dist/bench/crossing-cost.js [--spaced [--gap-ms N] [--rounds N]]
import { constants, copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { access } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { buildCheckInput } from "../gateway/src/checks/check-input.js";
import type { SourceResult } from "../gateway/src/engine/sources/index.js";
import { readCapped, readKernelFile } from "../gateway/src/engine/sources/read-file.js";
import { resolveProgram } from "../gateway/src/exec/path-lookup.js";
import { runCommand, type CommandSpec } from "../gateway/src/exec/run-command.js";
import { CommandSpawner } from "../gateway/src/exec/spawner.js";
import { PluginRuntime } from "../gateway/src/runtime/runtime.js";
import { repoRoot } from "./lib/paths.js";
import { median } from "./lib/median.js";

const REPS = 5;

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`${name} takes a positive whole number, not ${JSON.stringify(process.argv[i + 1])}`);
  return v;
}
const SPACED = process.argv.includes("--spaced");
const GAP_MS = option("--gap-ms", 10_000);
const SPACED_ROUNDS = option("--rounds", 8);

/** On-CPU ns of one task from its schedstat (first field). */
function schedNs(path: string): number {
  return Number(readFileSync(path, "utf8").split(" ")[0]);
}

const MAIN_THREAD = `/proc/self/task/${process.pid}/schedstat`;

interface Row {
  crossing: string;
  ops: number;
  processUs: number;
  mainUs: number;
  spawnerUs?: number;
  wallUs: number;
  /** Bytes handed across (input or file size), where it says something. */
  bytes?: number;
}

const us = (n: number): number => +n.toFixed(1);

/** Warm-up (one run's worth), then REPS runs of `ops` awaited one after another; the median run, per operation. */
async function measure(crossing: string, ops: number, op: () => Promise<unknown>, spawnerPid?: number): Promise<Row> {
  for (let i = 0; i < ops; i++) await op();
  const proc: number[] = [];
  const main: number[] = [];
  const spawner: number[] = [];
  const wall: number[] = [];
  const spawnerStat = spawnerPid === undefined ? undefined : `/proc/${spawnerPid}/schedstat`;
  for (let r = 0; r < REPS; r++) {
    const s0 = spawnerStat ? schedNs(spawnerStat) : 0;
    const m0 = schedNs(MAIN_THREAD);
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < ops; i++) await op();
    const t = performance.now() - t0;
    const c = process.cpuUsage(c0);
    const m = schedNs(MAIN_THREAD) - m0;
    if (spawnerStat) spawner.push((schedNs(spawnerStat) - s0) / 1000 / ops);
    proc.push((c.user + c.system) / ops);
    main.push(m / 1000 / ops);
    wall.push((t * 1000) / ops);
  }
  const row: Row = { crossing, ops, processUs: us(median(proc)), mainUs: us(median(main)), wallUs: us(median(wall)) };
  if (spawnerStat) row.spawnerUs = us(median(spawner));
  console.log(JSON.stringify(row));
  return row;
}

const load = loadavg();
console.log(JSON.stringify({ node: process.version, loadavg: load.map((l) => +l.toFixed(2)) }));
const rows: Row[] = [];

// 1. Commands. A frozen env object reused, as a catalog's is: the spawner keeps its encoding per object.
const env = Object.freeze({ PATH: process.env.PATH });
const spec: CommandSpec = { argv: ["true"], label: "true", timeoutMs: 10_000, maxOutputBytes: 65_536, env };
const checked = async (s: CommandSpec) => {
  const r = await runCommand(s);
  if (!r.ok) throw new Error(`true failed: ${r.error}`);
};
const spawner = new CommandSpawner();
spawner.warm();
if (spawner.fallbackReason === undefined && spawner.pid !== undefined) {
  rows.push(await measure("command via spawner (true)", 200, () => checked({ ...spec, spawner }), spawner.pid));
} else {
  console.log(JSON.stringify({ crossing: "command via spawner (true)", skipped: spawner.fallbackReason ?? "no spawner process" }));
}
spawner.stop();
rows.push(await measure("command, direct spawn (true)", 60, () => checked(spec)));

// 2. procfs reads, capped as a file source is.
const MiB = 1 << 20;
for (const path of ["/proc/sys/kernel/osrelease", "/proc/self/mountinfo", "/proc/modules"]) {
  const first = await readCapped(path, MiB);
  if (!first.ok) {
    console.log(JSON.stringify({ crossing: `readCapped ${path}`, skipped: first.error }));
    continue;
  }
  const row = await measure(`readCapped ${path}`, 2000, async () => {
    const r = await readCapped(path, MiB);
    if (!r.ok) throw new Error(r.error);
  });
  row.bytes = Buffer.byteLength(first.text);
  rows.push(row);
  // The same file on the event loop, as the kernel's own small files are read now.
  const sync = await measure(`readKernelFile ${path}`, 2000, async () => {
    const r = readKernelFile(path, MiB);
    if (!r.ok) throw new Error(r.error);
  });
  sync.bytes = row.bytes;
  rows.push(sync);
}

// 3. Plugin calls in the sandbox worker: the bundled net-interfaces, alone in its directory.
const pluginDir = mkdtempSync(join(tmpdir(), "probegate-bench-crossing-"));
copyFileSync(join(repoRoot(), "dist", "plugins", "net-interfaces.wasm"), join(pluginDir, "net-interfaces.wasm"));
const runtime = new PluginRuntime({ dir: pluginDir, isKnownSource: () => true, logger: pino({ level: "silent" }) });
await runtime.start();
const plugin = runtime.current().plugins.find((p) => p.manifest.name === "net-interfaces");
if (!plugin) throw new Error(`net-interfaces did not load: ${JSON.stringify(runtime.current().refusals)}`);
const operstate = (stdout: string, stderr = ""): SourceResult =>
  Object.freeze({ ok: true, exitCode: 0, stdout, stderr, error: null, truncated: false, fetchedAtMs: Date.now() });
const facts = { "lnet.interfaces": "eth0,ib0" };
// ~12 KiB two ways: lines the plugin evaluates, and text it is handed but never reads (stderr).
const manyLines = Array.from({ length: 1200 }, (_, i) => `eth${i} up\n`).join("").slice(0, 12 * 1024);
const inputs: Array<[string, SourceResult]> = [
  ["plugin call net-interfaces, 2 interfaces", operstate("eth0 up\nib0 up\n")],
  ["plugin call net-interfaces, 12 KiB stdout", operstate(manyLines.slice(0, manyLines.lastIndexOf("\n") + 1))],
  ["plugin call net-interfaces, 12 KiB unread stderr", operstate("eth0 up\nib0 up\n", "x".repeat(12 * 1024))],
];
// Built per call, as run-plugin.ts does (the source's encoding is kept while it lives).
const inputOf = (source: SourceResult) => () =>
  buildCheckInput("node", [["sys.net.operstate", source]], facts, Date.now(), undefined, { epoch: 1_700_000_000, previousEpoch: 0 });
const call = async (name: string, source: SourceResult) => {
  const r = await runtime.runCheck(plugin, inputOf(source));
  if (r.kind !== "verdict") throw new Error(`${name}: ${r.reason}: ${r.message}`);
};
// Every input first: the larger ones tier up wasm and JS code the small one
// then runs faster on, so whichever row came first would pay for the others.
for (let i = 0; i < 500; i++) for (const [name, source] of inputs) await call(name, source);
for (const [name, source] of inputs) {
  const row = await measure(name, 500, () => call(name, source));
  row.bytes = Buffer.byteLength(inputOf(source)());
  rows.push(row);
}
await runtime.stop();
rmSync(pluginDir, { recursive: true, force: true });

// 4. What checking a program already found on PATH cost per command before runCommand trusted the last find (path-lookup.ts).
const found = await resolveProgram("true", process.env.PATH);
const truePath = found.ok ? found.path : undefined;
if (truePath) rows.push(await measure(`access(${truePath}, X_OK)`, 5000, () => access(truePath, constants.X_OK)));

// 5. A round's crossings, spaced as rounds are (--spaced): an LNet readiness
// round's three commands (started together, as a round starts its sources),
// its six kernel files, and with or without the one plugin call a round makes
// when a verdict changed, each followed by GAP_MS of sleep; the idle gap is
// the same sleep without the crossings, so what is left is what they cost cold.
interface Spaced {
  series: string;
  processUs: number;
  mainUs: number;
  spawnerUs: number;
}
const spaced: Spaced[] = [];
if (SPACED) {
  const roundSpawner = new CommandSpawner();
  roundSpawner.warm();
  const spawnerPid = roundSpawner.fallbackReason === undefined ? roundSpawner.pid : undefined;
  // Six reads, as an LNet round makes; of these kernel files, those this machine has (a container may lack /proc/modules).
  const present = ["/proc/sys/kernel/osrelease", "/proc/modules", "/proc/self/mountinfo", "/proc/self/mounts", "/sys/class/net/lo/operstate", "/sys/class/net/lo/mtu"].filter((f) => readKernelFile(f, MiB).ok);
  if (present.length === 0) throw new Error("none of the kernel files a round reads is readable here");
  const files = Array.from({ length: 6 }, (_, i) => present[i % present.length]!);
  const roundDir = mkdtempSync(join(tmpdir(), "probegate-bench-crossing-"));
  copyFileSync(join(repoRoot(), "dist", "plugins", "net-interfaces.wasm"), join(roundDir, "net-interfaces.wasm"));
  const roundRuntime = new PluginRuntime({ dir: roundDir, isKnownSource: () => true, logger: pino({ level: "silent" }) });
  await roundRuntime.start();
  const ni = roundRuntime.current().plugins[0]!;
  const upInput = () => buildCheckInput("node", [["sys.net.operstate", operstate("eth0 up\nib0 up\n")]], facts, Date.now(), undefined, { epoch: 1_700_000_000, previousEpoch: 0 });
  const round = async (plugins: number, io: boolean) => {
    if (io) {
      await Promise.all([0, 1, 2].map(() => checked({ ...spec, ...(spawnerPid !== undefined ? { spawner: roundSpawner } : {}) })));
      for (const f of files) readKernelFile(f, MiB);
    }
    for (let i = 0; i < plugins; i++) {
      const r = await roundRuntime.runCheck(ni, upInput);
      if (r.kind !== "verdict") throw new Error(`net-interfaces: ${r.reason}: ${r.message}`);
    }
  };
  // The three kinds of gap take turns in a shuffled order each cycle, and each
  // kind's median gap is taken: whatever else the process does meanwhile (the
  // hot loops' garbage, a periodic timer) lands on any kind and is outvoted.
  const kinds: Array<{ series: string; plugins: number; io: boolean }> = [
    { series: "idle", plugins: 0, io: false },
    { series: "3 commands + 6 files", plugins: 0, io: true },
    { series: "3 commands + 6 files + 1 plugin call", plugins: 1, io: true },
  ];
  const samples = kinds.map(() => ({ process: [] as number[], main: [] as number[], spawner: [] as number[] }));
  const spawnerNs = () => (spawnerPid === undefined ? 0 : schedNs(`/proc/${spawnerPid}/schedstat`));
  let seed = 43;
  const shuffled = () => {
    const order = kinds.map((_, k) => k);
    for (let i = order.length - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      const j = (seed >>> 8) % (i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    return order;
  };
  for (let cycle = -2; cycle < SPACED_ROUNDS; cycle++) {
    for (const k of shuffled()) {
      const kind = kinds[k]!;
      const c0 = process.cpuUsage();
      const m0 = schedNs(MAIN_THREAD);
      const s0 = spawnerNs();
      await round(kind.plugins, kind.io);
      await new Promise((r) => setTimeout(r, GAP_MS));
      if (cycle < 0) continue;
      const c = process.cpuUsage(c0);
      samples[k]!.process.push(c.user + c.system);
      samples[k]!.main.push((schedNs(MAIN_THREAD) - m0) / 1000);
      samples[k]!.spawner.push((spawnerNs() - s0) / 1000);
    }
  }
  for (const [k, kind] of kinds.entries()) {
    const x = samples[k]!;
    const row = { series: kind.series, processUs: us(median(x.process)), mainUs: us(median(x.main)), spawnerUs: us(median(x.spawner)) };
    console.log(JSON.stringify({ ...row, processEach: x.process.map(Math.round) }));
    spaced.push(row);
  }
  await roundRuntime.stop();
  roundSpawner.stop();
  rmSync(roundDir, { recursive: true, force: true });
  if (spawnerPid === undefined) console.log(JSON.stringify({ spaced: "commands started directly", reason: roundSpawner.fallbackReason ?? "no spawner process" }));
}

console.log(`\nNode ${process.version}, load average at start ${load.map((l) => l.toFixed(2)).join(" ")}; medians of ${REPS} runs\n`);
console.log("| crossing | process CPU µs/op | main thread µs/op | spawner µs/op |");
console.log("|---|---:|---:|---:|");
for (const r of rows) {
  const name = r.bytes === undefined ? r.crossing : `${r.crossing} (${r.bytes} B)`;
  console.log(`| ${name} | ${r.processUs} | ${r.mainUs} | ${r.spawnerUs ?? "–"} |`);
}
if (spaced.length > 0) {
  const base = spaced.find((r) => r.series === "idle")!;
  console.log(`\nA round's crossings, one every ${GAP_MS} ms, medians of ${SPACED_ROUNDS} of each kind in shuffled turns, less an idle gap's (${base.processUs} µs process, ${base.mainUs} µs main thread)\n`);
  console.log("| a round of | process CPU µs | main thread µs | spawner µs | gateway + spawner µs |");
  console.log("|---|---:|---:|---:|---:|");
  for (const r of spaced.filter((x) => x.series !== "idle")) {
    const p = us(r.processUs - base.processUs);
    console.log(`| ${r.series} | ${p} | ${us(r.mainUs - base.mainUs)} | ${r.spawnerUs} | ${us(p + r.spawnerUs)} |`);
  }
}
