// Two builds of probegate measured alike in one run, so that a change's cost
// is a ratio against its own base and not against a figure from another day
// on a shared machine. Each repetition starts the base build's gateways, then
// the subject's (ABAB…), on the same fake node, the same stand-in driver and
// the same flags (ones both builds accept), and reads from /proc:
//   probe    Probe CPU per call (the gateway's threads, schedstat) over N
//            Probes on the unix socket, and RSS after start (no volumes);
//   forward  gateway mode: CPU per forwarded NodeGetVolumeStats and
//            NodePublishVolume to a stand-in driver (the tests' FakeCsiDriver,
//            in this process, answering at once);
//   round    one check round's CPU (storage and volume checks, 64 volumes
//            each its own Lustre mount on 64 OSTs) and RSS with those volumes.
// Medians over the repetitions, and subject/base ratios, go to stdout and to
// bench/results/compare-builds-latest.md.
//   node dist/bench/compare-builds.js --base /work/wt/base --subject . [--quick] [--reps N] [--out FILE]
import { create, toBinary } from "@bufbuild/protobuf";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  GetPluginInfoResponseSchema,
  NodeGetVolumeStatsRequestSchema,
  NodeGetVolumeStatsResponseSchema,
  NodePublishVolumeRequestSchema,
  ProbeResponseSchema,
  VolumeCapability_AccessMode_Mode,
  VolumeUsage_Unit,
} from "../gateway/gen/csi/v1/csi_pb.js";
import { FakeCsiDriver } from "../gateway/test/helpers/fake-csi-driver.js";
import { call, connect, fakeNode, load, PROBE_REQUEST, roundCost, startGateway, type FakeNode, type Launch } from "./health.js";
import { grpcFrame, PROBE_PATH } from "./lib/grpc.js";
import { PROBEGATE_NODE_ENV } from "./lib/launch.js";
import { isMain } from "./lib/main.js";
import { repoRoot } from "./lib/paths.js";
import { rssBytes, spawnerRssBytes } from "./lib/proc.js";
import { median } from "./lib/median.js";

// ---- command line ----

export interface CompareArgs {
  base: string;
  subject: string;
  quick: boolean;
  /** Repetitions of the whole ABAB cycle; the medians are over these. */
  reps: number;
  out: string;
}

export const USAGE = "usage: node dist/bench/compare-builds.js --base DIR --subject DIR [--quick] [--reps N] [--out FILE]";

/**
 * The command line, checked before anything starts: both directories must be
 * built checkouts (bin/probegate.js and dist/), or the run would measure a
 * stale or missing build for minutes before failing.
 */
export function parseCompareArgs(argv: readonly string[], cwd: string, exists: (p: string) => boolean = fs.existsSync): CompareArgs {
  const values = new Map<string, string>();
  let quick = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--quick") {
      quick = true;
      continue;
    }
    const eq = a.indexOf("=");
    const name = eq > 0 ? a.slice(0, eq) : a;
    if (!["--base", "--subject", "--reps", "--out"].includes(name)) throw new Error(`unknown argument ${JSON.stringify(a)}; ${USAGE}`);
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined || value === "" || (eq < 0 && value.startsWith("--"))) throw new Error(`${name} needs a value; ${USAGE}`);
    values.set(name, value);
  }
  const dir = (name: string): string => {
    const v = values.get(name);
    if (v === undefined) throw new Error(`${name} is required; ${USAGE}`);
    const abs = path.resolve(cwd, v);
    for (const f of ["bin/probegate.js", "dist"]) if (!exists(path.join(abs, f))) throw new Error(`${name} ${abs}: no ${f} (build it: npm ci)`);
    return abs;
  };
  const base = dir("--base");
  const subject = dir("--subject");
  const repsText = values.get("--reps");
  const reps = repsText === undefined ? 2 : Number(repsText);
  if (!Number.isInteger(reps) || reps < 1 || reps > 20) throw new Error(`--reps must be an integer from 1 to 20, not ${JSON.stringify(repsText)}`);
  const out = path.resolve(cwd, values.get("--out") ?? path.join(repoRoot(), "bench/results/compare-builds-latest.md"));
  return { base, subject, quick, reps, out };
}

// ---- what is measured, and the report ----

export const METRICS = [
  { key: "probeCpuUs", label: "Probe CPU per call (unix socket, 8 concurrent, one connection)", unit: "µs" },
  { key: "statsCpuUs", label: "forwarded NodeGetVolumeStats CPU per call (gateway mode)", unit: "µs" },
  { key: "publishCpuUs", label: "forwarded NodePublishVolume CPU per call (gateway mode)", unit: "µs" },
  { key: "roundMs", label: "check round CPU (storage + volume checks, 64 volumes × 64 OSTs)", unit: "ms" },
  { key: "rssStartMiB", label: "RSS after start (gateway + spawner, no volumes)", unit: "MiB" },
  { key: "rss64MiB", label: "RSS with 64 volumes mounted (storage health)", unit: "MiB" },
] as const;
export type MetricKey = (typeof METRICS)[number]["key"];

/** One repetition of one build: whatever was measured (a failed part leaves its keys out). */
export interface Sample {
  build: "base" | "subject";
  rep: number;
  values: Partial<Record<MetricKey, number>>;
  notes: string[];
}

export { median };

export interface Row {
  key: MetricKey;
  label: string;
  unit: string;
  base: number[];
  subject: number[];
  baseMedian: number;
  subjectMedian: number;
  /** subject/base of the medians; NaN when either is missing or the base is 0. */
  ratio: number;
}

export function summarize(samples: readonly Sample[]): Row[] {
  return METRICS.map(({ key, label, unit }) => {
    const of = (b: Sample["build"]) => samples.filter((s) => s.build === b && Number.isFinite(s.values[key])).map((s) => s.values[key]!);
    const base = of("base");
    const subject = of("subject");
    const baseMedian = median(base);
    const subjectMedian = median(subject);
    const ratio = baseMedian > 0 && Number.isFinite(subjectMedian) ? subjectMedian / baseMedian : Number.NaN;
    return { key, label, unit, base, subject, baseMedian, subjectMedian, ratio };
  });
}

export interface RunInfo {
  base: string;
  subject: string;
  baseCommit: string;
  subjectCommit: string;
  quick: boolean;
  reps: number;
  /** 1-minute load average at the start and the end: above ~0.5 the machine was busy and CPU figures are noisy. */
  loadStart: number;
  loadEnd: number;
  startedAt: string;
  seconds: number;
  node: string;
  cpus: number;
}

const fmt = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");

export function renderMarkdown(info: RunInfo, rows: readonly Row[], notes: readonly string[]): string {
  const lines = [
    `# Two builds compared (${info.startedAt})`,
    "",
    `- base: \`${info.base}\` (${info.baseCommit})`,
    `- subject: \`${info.subject}\` (${info.subjectCommit})`,
    `- ${info.quick ? "quick run" : "full run"}, ${info.reps} repetition(s), base and subject alternated (ABAB…) on the same fake node and stand-in driver; ${info.seconds.toFixed(0)} s`,
    `- Node ${info.node}, ${info.cpus} CPUs, load average ${info.loadStart.toFixed(2)} at the start and ${info.loadEnd.toFixed(2)} at the end (shared machine: compare the ratios, not the absolute figures)`,
    "",
    "| measure | unit | base median | subject median | subject/base | base runs | subject runs |",
    "|---|---|---|---|---|---|---|",
    ...rows.map((r) => {
      const digits = r.unit === "µs" ? 1 : 2;
      const runs = (xs: number[]) => xs.map((x) => fmt(x, digits)).join(", ") || "n/a";
      return `| ${r.label} | ${r.unit} | ${fmt(r.baseMedian, digits)} | ${fmt(r.subjectMedian, digits)} | ${fmt(r.ratio, 3)} | ${runs(r.base)} | ${runs(r.subject)} |`;
    }),
  ];
  if (notes.length) lines.push("", "Notes:", "", ...notes.map((n) => `- ${n}`));
  return lines.join("\n") + "\n";
}

// ---- the measurements ----

interface Sizes {
  /** Probes per window (three windows, the median kept). */
  probes: number;
  /** Forwarded calls per window, per method. */
  forwarded: number;
  /** Seconds of the round window (after roundCost's own 12 s of first rounds). */
  roundSeconds: number;
  /** Seconds a fresh gateway is left before its RSS is read. */
  settleMs: number;
}

const FULL: Sizes = { probes: 8_000, forwarded: 1_500, roundSeconds: 20, settleMs: 3_000 };
const QUICK: Sizes = { probes: 3_000, forwarded: 500, roundSeconds: 10, settleMs: 2_000 };

const DRIVER_NAME = "bench.csi.probegate.io";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function gatewayRss(pid: number): number {
  return (rssBytes(pid) + spawnerRssBytes(pid)) / 2 ** 20;
}

/** Probe CPU per call and RSS after start, on a node without volumes; rounds hourly so the windows hold no round. */
async function probeAndStart(node: FakeNode, launch: Launch, z: Sizes): Promise<Partial<Record<MetricKey, number>>> {
  const gw = await startGateway(node, ["--check-interval=1h"], undefined, launch);
  const session = connect(gw.socket);
  try {
    await sleep(z.settleMs);
    const rssStartMiB = gatewayRss(gw.pid);
    for (let i = 0; i < 2_000; i++) await call(session, PROBE_PATH, PROBE_REQUEST);
    const windows: number[] = [];
    for (let w = 0; w < 3; w++) {
      const row = await load(session, gw.pid, "Probe", PROBE_PATH, PROBE_REQUEST, z.probes, 8);
      if (row.notOk) throw new Error(`${row.notOk} Probes not OK`);
      windows.push(row.cpuUsPerCall);
    }
    return { rssStartMiB, probeCpuUs: median(windows) };
  } finally {
    session.close();
    await gw.stop();
  }
}

/** The stand-in driver: answers at once, as a driver would whose work is done (what is measured is the relay). */
async function standInDriver(socket: string): Promise<FakeCsiDriver> {
  const driver = new FakeCsiDriver(socket, ["Identity", "Node"]);
  driver.script("/csi.v1.Identity/GetPluginInfo", { message: toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: DRIVER_NAME, vendorVersion: "1.0.0" })) });
  driver.script("/csi.v1.Identity/Probe", { message: toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: true })) });
  driver.script("/csi.v1.Node/NodePublishVolume", {});
  driver.script("/csi.v1.Node/NodeGetVolumeStats", {
    message: toBinary(
      NodeGetVolumeStatsResponseSchema,
      create(NodeGetVolumeStatsResponseSchema, { usage: [{ unit: VolumeUsage_Unit.BYTES, total: 1n << 40n, used: 1n << 30n, available: (1n << 40n) - (1n << 30n) }] }),
    ),
  });
  return driver.start();
}

/** Gateway mode: CPU per forwarded call, NodeGetVolumeStats (its reply rewritten with the volume's condition) and NodePublishVolume (gated, its volume remembered). */
async function forwarded(node: FakeNode, launch: Launch, z: Sizes): Promise<Partial<Record<MetricKey, number>>> {
  const driverSocket = path.join(node.dir, "driver.sock");
  const driver = await standInDriver(driverSocket);
  // Recorded calls would grow for the whole run.
  const trim = setInterval(() => driver.calls.splice(0), 1_000);
  const vol = node.volumes[0]!;
  const stats = grpcFrame(toBinary(NodeGetVolumeStatsRequestSchema, create(NodeGetVolumeStatsRequestSchema, { volumeId: vol.id, volumePath: vol.target })));
  const publish = grpcFrame(
    toBinary(
      NodePublishVolumeRequestSchema,
      create(NodePublishVolumeRequestSchema, {
        volumeId: vol.id,
        targetPath: vol.target,
        volumeCapability: { accessType: { case: "mount", value: {} }, accessMode: { mode: VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER } },
      }),
    ),
  );
  let gw: Awaited<ReturnType<typeof startGateway>> | undefined;
  try {
    gw = await startGateway(node, ["--check-interval=1h", `--upstream=unix://${driverSocket}`, `--driver-name=${DRIVER_NAME}`], undefined, launch);
    const session = connect(gw.socket);
    try {
      const out: Partial<Record<MetricKey, number>> = {};
      for (const [key, p, body] of [
        ["statsCpuUs", "/csi.v1.Node/NodeGetVolumeStats", stats],
        ["publishCpuUs", "/csi.v1.Node/NodePublishVolume", publish],
      ] as const) {
        for (let i = 0; i < 500; i++) await call(session, p, body);
        const windows: number[] = [];
        for (let w = 0; w < 3; w++) {
          const row = await load(session, gw.pid, key, p, body, z.forwarded, 8);
          if (row.notOk) throw new Error(`${p}: ${row.notOk} of ${row.calls} calls not OK`);
          windows.push(row.cpuUsPerCall);
        }
        out[key] = median(windows);
      }
      return out;
    } finally {
      session.close();
    }
  } finally {
    clearInterval(trim);
    await gw?.stop();
    await driver.stop();
  }
}

const ROUND_INTERVAL_S = 5;

/**
 * The flags (besides --check-interval, which roundCost sets) that make a
 * round the same work in both builds. A build with
 * --health-interval (#43) runs the storage and volume checks only every 30 s
 * by default, where earlier builds run them every round: it is given the
 * round's interval, so each round it is measured on evaluates every volume,
 * as the older build's rounds do.
 */
export function roundFlags(help: string): string[] {
  return /^\s*--health-interval\b/m.test(help) ? [`--health-interval=${ROUND_INTERVAL_S}s`] : [];
}

function helpText(root: string): string {
  try {
    return execFileSync(process.execPath, [path.join(root, "bin/probegate.js"), "--help"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    // --help exits 0; anything else still printed what it knows on stdout.
    return String((err as { stdout?: string }).stdout ?? "");
  }
}

/** One repetition of one build; a part that fails is noted and the rest still measured. */
async function measureBuild(build: Sample["build"], root: string, rep: number, z: Sizes, roundArgs: string[]): Promise<Sample> {
  // Both builds get the environment and node flags this harness ships with (bench/lib/launch.ts).
  const launch: Launch = { root, env: PROBEGATE_NODE_ENV };
  const sample: Sample = { build, rep, values: {}, notes: [] };
  const part = async (name: string, run: () => Promise<Partial<Record<MetricKey, number>>>) => {
    const t0 = performance.now();
    try {
      Object.assign(sample.values, await run());
    } catch (err) {
      sample.notes.push(`${build} rep ${rep}, ${name}: ${(err as Error).message.split("\n")[0]!.slice(0, 300)}`);
    }
    // Progress, and what each part costs in wall time (sizes are chosen for ~6 minutes in all).
    console.error(`${build} rep ${rep} ${name}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  };
  for (const [name, volumes, run] of [
    ["probe", 0, probeAndStart],
    ["forward", 1, forwarded],
  ] as const) {
    const node = await fakeNode(volumes, 64, { mountPerVolume: true });
    try {
      await part(name, () => run(node, launch, z));
    } finally {
      fs.rmSync(node.dir, { recursive: true, force: true });
    }
  }
  await part("round", async () => {
    const r = await roundCost(64, 64, { mountPerVolume: true, launch, seconds: z.roundSeconds, intervalS: ROUND_INTERVAL_S, args: roundArgs });
    if (r.rounds < 1) throw new Error("no round completed in the window");
    return { roundMs: r.gatewayMsPerRound, rss64MiB: r.rssMiB };
  });
  return sample;
}

function commitOf(dir: string): string {
  try {
    return execFileSync("git", ["-C", dir, "log", "-1", "--format=%h %s"], { encoding: "utf8" }).trim().slice(0, 100);
  } catch {
    return "not a git checkout";
  }
}

async function main(): Promise<void> {
  const args = parseCompareArgs(process.argv.slice(2), process.cwd());
  const z = args.quick ? QUICK : FULL;
  const t0 = performance.now();
  const info: RunInfo = {
    base: args.base,
    subject: args.subject,
    baseCommit: commitOf(args.base),
    subjectCommit: commitOf(args.subject),
    quick: args.quick,
    reps: args.reps,
    loadStart: os.loadavg()[0]!,
    loadEnd: Number.NaN,
    startedAt: new Date().toISOString(),
    seconds: 0,
    node: process.version,
    cpus: os.cpus().length,
  };
  const roundArgs = { base: roundFlags(helpText(args.base)), subject: roundFlags(helpText(args.subject)) };
  const runNotes: string[] = [];
  for (const b of ["base", "subject"] as const) runNotes.push(`${b}'s round flags: --check-interval=${ROUND_INTERVAL_S}s ${roundArgs[b].join(" ")}`.trimEnd());
  const samples: Sample[] = [];
  for (let rep = 1; rep <= args.reps; rep++) {
    for (const [build, root] of [["base", args.base], ["subject", args.subject]] as const) {
      const s = await measureBuild(build, root, rep, z, roundArgs[build]);
      console.error(JSON.stringify(s));
      samples.push(s);
    }
  }
  info.loadEnd = os.loadavg()[0]!;
  info.seconds = (performance.now() - t0) / 1000;
  const md = renderMarkdown(info, summarize(samples), [...runNotes, ...samples.flatMap((s) => s.notes)]);
  fs.mkdirSync(path.dirname(args.out), { recursive: true });
  fs.writeFileSync(args.out, md);
  process.stdout.write(md);
}

if (isMain(import.meta.url)) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e instanceof Error ? e.message : e);
      process.exit(1);
    },
  );
}
