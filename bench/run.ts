// probegate benchmark orchestrator: `npm run bench [-- --quick] [-- --only SECTION[,SECTION]]`.
// Sections: memory, newconn, throughput, http, exec, plugins (default: all of them), profile (only on request).
// Every server is its own process; every load generator is its own process; the
// server's CPU is read from /proc/<pid>/stat around the measured window.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ExecParams, ExecResult } from "./load/exec-runner.js";
import { type H2loadParams, h2loadAvailable, h2loadVersion, runH2load } from "./load/h2load.js";
import type { NewConnParams, NewConnResult } from "./load/newconn-client.js";
import type { PluginCostParams, PluginCostResult } from "./load/plugin-cost.js";
import { probeNewConnection } from "./load/probe-client.js";
import { PROBE_PATH, PROBE_REQUEST_FRAME } from "./lib/grpc.js";
import { freePort, sleep } from "./lib/net.js";
import { repoRoot } from "./lib/paths.js";
import { clockTicks, cpuDelta, cpuSample, rssBytes } from "./lib/proc.js";
import { type RunningServer, killAll, startServer } from "./lib/server.js";
import { summarizeProfile } from "./report/profile.js";
import { renderSvg } from "./report/svg.js";
import { renderReport } from "./report/table.js";
import { evaluateTargets } from "./report/targets.js";
import type { BenchResult, ExecRow, H2Row, NewConnRow, ProfileResult, ServerResult } from "./report/types.js";
import { PROBEGATE_NODE_FLAGS } from "./lib/launch.js";
import { TARGETS, useFakeNode, withKubernetesReporting, KUBERNETES_BENCH_CONDITION, type ServerTarget } from "./targets.js";
import { measureFootprint } from "./footprint.js";
import { COST_NODES, type CostNodeId, measureNodeCost } from "./node-cost.js";
import { costNode } from "./lib/cost-nodes.js";
import { resolveNode24 } from "./lib/node24.js";
import { currentPinning, enablePinning, pinned } from "./lib/pin.js";

const ALL_SECTIONS = ["memory", "newconn", "throughput", "http", "exec", "plugins", "footprint", "nodecost"] as const;
const EXTRA_SECTIONS = ["profile"] as const;
type Section = (typeof ALL_SECTIONS)[number] | (typeof EXTRA_SECTIONS)[number];

interface Options {
  quick: boolean;
  sections: Set<Section>;
  targets: string[] | null;
  /** --pin: server on one core, load on another (the reference method) */
  pin: boolean;
  /** --node24 PATH|auto|off: the second runtime probegate's memory is measured on */
  node24: string;
  /** --nodecost-nodes: the fake nodes of the nodecost section (default every one; the LNet node always) */
  nodecostNodes?: CostNodeId[];
}

function parseArgs(argv: string[]): Options {
  const o: Options = { quick: false, sections: new Set(ALL_SECTIONS), targets: null, pin: false, node24: "auto" };
  let only: Section[] | null = null;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      const v = a.includes("=") ? a.slice(a.indexOf("=") + 1) : argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--quick") o.quick = true;
    else if (a === "--pin") o.pin = true;
    else if (a === "--node24" || a.startsWith("--node24=")) o.node24 = val();
    else if (a === "--nodecost-nodes" || a.startsWith("--nodecost-nodes=")) {
      const ids = val().split(",");
      for (const id of ids) if (!COST_NODES.some((n) => n.id === id)) throw new Error(`unknown nodecost node ${id} (${COST_NODES.map((n) => n.id).join(", ")})`);
      o.nodecostNodes = ids as CostNodeId[];
    }
    else if (a === "--only" || a.startsWith("--only=")) {
      only ??= [];
      for (const s of val().split(",")) {
        if (![...ALL_SECTIONS, ...EXTRA_SECTIONS].includes(s as Section)) throw new Error(`unknown section ${s}`);
        only.push(s as Section);
      }
    } else if (a === "--targets" || a.startsWith("--targets=")) o.targets = val().split(",");
    else if (a === "--help" || a === "-h") {
      process.stdout.write(
        `usage: node dist/bench/run.js [--quick] [--pin] [--node24 PATH|auto|off] [--nodecost-nodes lnet,lustre-1,lustre-8] [--only ${[...ALL_SECTIONS, ...EXTRA_SECTIONS].join("|")}[,...]] [--targets ${TARGETS.map((t) => t.id).join(",")}]\n`,
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (only) o.sections = new Set(only);
  return o;
}

/** How much of everything, by mode. */
function plan(quick: boolean) {
  return quick
    ? {
        rates: [1, 100, 1000],
        duration: { 1: 5, 100: 3, 1000: 4 } as Record<number, number>,
        warmup: { 1: 0, 100: 1, 1000: 1 } as Record<number, number>,
        peerRates: [1000],
        throughputN: 20_000,
        singleN: 5_000,
        httpN: 10_000,
        execRuns: { compiled: 20, node: 5 },
        pluginBudgetMs: 60,
        memoryPerPhase: 20_000, // quick: 20k + 20k (full runs do 100k + 100k)
        memoryPeers: false,
        profileN: 20_000,
        footprintProbes: 20_000,
      }
    : {
        rates: [1, 100, 1000],
        duration: { 1: 30, 100: 10, 1000: 15 } as Record<number, number>,
        warmup: { 1: 0, 100: 2, 1000: 2 } as Record<number, number>,
        peerRates: [1, 100, 1000],
        throughputN: 200_000,
        singleN: 30_000,
        httpN: 50_000,
        execRuns: { compiled: 100, node: 20 },
        pluginBudgetMs: 300,
        memoryPerPhase: 100_000,
        memoryPeers: true,
        profileN: 60_000,
        footprintProbes: 200_000,
      };
}
type Plan = ReturnType<typeof plan>;

const root = repoRoot();
const dist = (...p: string[]) => path.join(root, "dist", "bench", ...p);
const MiB = 1024 * 1024;
const log = (s: string) => process.stderr.write(`[bench] ${s}\n`);

/** Runs a child node script; resolves with its last stdout line parsed as JSON. Calls onLine for other lines. */
function runChild<T>(script: string, arg: unknown, onLine: (l: string) => void = () => {}): Promise<T> {
  return new Promise((resolve, reject) => {
    const run = pinned("load", process.execPath, [script, JSON.stringify(arg)]);
    const p = spawn(run.cmd, run.args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let buf = "";
    let last = "";
    let err = "";
    p.stdout.on("data", (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith("{")) last = line;
        else onLine(line);
      }
    });
    p.stderr.on("data", (d) => (err = (err + d).slice(-3000)));
    p.on("error", reject);
    p.on("close", (code) => {
      if (code !== 0 || !last) reject(new Error(`${path.basename(script)} exited ${code}: ${err}`));
      else resolve(JSON.parse(last) as T);
    });
  });
}

async function measureNewConn(s: RunningServer, rate: number, pl: Plan): Promise<NewConnRow> {
  const pollers = Math.max(1, rate * 10); // kubelet periodSeconds default: 10 s per poller
  const params: NewConnParams = {
    dial: { socketPath: s.ctx.socket },
    rate,
    durationSec: pl.duration[rate] ?? 5,
    warmupSec: pl.warmup[rate] ?? 1,
    pollers,
    timeoutMs: 3000,
  };
  // A server that dies under the load must fail its row with its own last words, not the bench.
  const mustBeUp = () => {
    const why = s.gone();
    if (why) throw new Error(`server ${why}`);
  };
  const sample = () => {
    mustBeUp();
    return cpuSample(s.pid);
  };
  let a = sample();
  let b = a;
  let lost: Error | undefined;
  const result = await runChild<NewConnResult>(dist("load/newconn-client.js"), params, (l) => {
    try {
      if (l === "MEASURE") a = sample();
      else if (l === "END") b = sample();
    } catch (e) {
      lost ??= e as Error;
    }
  });
  if (lost) throw lost;
  mustBeUp();
  const d = cpuDelta(a, b);
  return { rate, pollers, result, serverCpuSec: d.cpuSec, serverSchedSec: d.schedSec, serverCpuPerProbeUs: (d.cpuSec / Math.max(1, result.sent)) * 1e6 };
}

async function measureH2(s: RunningServer, name: string, p: H2loadParams, warm = Math.min(2000, p.requests)): Promise<H2Row> {
  if (warm > 0) await runH2load({ ...p, requests: warm });
  const a = cpuSample(s.pid);
  const h2 = await runH2load(p);
  const b = cpuSample(s.pid);
  const d = cpuDelta(a, b);
  return { name, h2, serverCpuSec: d.cpuSec, cpuPerReqUs: (d.cpuSec / Math.max(1, h2.total)) * 1e6, serverCores: d.cpuSec / d.wallSec };
}

let tmp = "";
function tmpDir(): string {
  if (!tmp) tmp = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-bench-"));
  return tmp;
}

function grpcBodyFile(): string {
  const f = path.join(tmpDir(), "probe.bin");
  if (!fs.existsSync(f)) fs.writeFileSync(f, PROBE_REQUEST_FRAME);
  return f;
}
function jsonBodyFile(): string {
  const f = path.join(tmpDir(), "probe.json");
  if (!fs.existsSync(f)) fs.writeFileSync(f, "{}");
  return f;
}
const GRPC_HEADERS = ["content-type: application/grpc", "te: trailers"];

async function checkHttp1(port: number, pathName: string, json: boolean): Promise<string | null> {
  try {
    const r = await fetch(`http://127.0.0.1:${port}${pathName}`, json ? { method: "POST", headers: { "content-type": "application/json" }, body: "{}" } : {});
    const body = await r.text();
    if (r.status !== 200) return `${pathName}: HTTP ${r.status} ${body.slice(0, 200)}`;
    if (json && !/"ready"\s*:\s*true/.test(body) && body.trim() !== "{}") return `${pathName}: unexpected body ${body.slice(0, 200)}`;
    return null;
  } catch (e) {
    return `${pathName}: ${(e as Error).message}`;
  }
}

/** A second runtime for a server: only its memory is measured on it. */
interface Runtime {
  bin: string;
  version: string;
}

async function benchServer(t: ServerTarget, o: Options, pl: Plan, haveH2load: boolean, runtime?: Runtime): Promise<ServerResult> {
  const id = runtime ? `${t.id}@node${runtime.version.replace(/^v/, "").split(".")[0]}` : t.id;
  const label = runtime ? `${t.label} (Node ${runtime.version.replace(/^v/, "")})` : t.label;
  const res: ServerResult = { id, label, role: t.role, available: false, notes: [], newconn: [], http: [], node: runtime?.version ?? process.version };
  const port = await freePort();
  const ctx = { root, socket: path.join(tmpDir(), `${id}.sock`), port, httpPort: t.sharedHttpPort ? port : await freePort(), node: runtime?.bin };
  if (runtime) o = { ...o, sections: new Set([...o.sections].filter((x) => x === "memory")) };
  let s: RunningServer;
  log(`${t.label}: starting`);
  try {
    s = await startServer(t, ctx);
  } catch (e) {
    res.error = (e as Error).message;
    log(`${t.label}: not available: ${res.error}`);
    return res;
  }
  res.available = true;
  res.notes.push(...s.notes);
  try {
    await sleep(500);
    res.rssStartMiB = rssBytes(s.pid) / MiB;
    const tcpCheck = await probeNewConnection({ host: "127.0.0.1", port: ctx.port });
    if (!tcpCheck.ok) res.notes.push(`gRPC Probe over TCP failed: ${tcpCheck.error}`);
    const grpcUrl = `http://127.0.0.1:${ctx.port}${PROBE_PATH}`;
    const grpcLoad = (clients: number, streams: number, requests: number): H2loadParams => ({
      url: grpcUrl, clients, streams, requests, headers: GRPC_HEADERS, dataFile: grpcBodyFile(),
    });
    if (o.sections.has("memory") && haveH2load && (t.role === "subject" || pl.memoryPeers)) {
      log(`${t.label}: memory (${pl.memoryPerPhase} probes × 2)`);
      const start = res.rssStartMiB;
      await runH2load(grpcLoad(8, 4, pl.memoryPerPhase));
      await sleep(300);
      const r1 = rssBytes(s.pid) / MiB;
      await runH2load(grpcLoad(8, 4, pl.memoryPerPhase));
      await sleep(300);
      const r2 = rssBytes(s.pid) / MiB;
      res.memory = { rssStartMiB: start, rss100kMiB: r1, rss200kMiB: r2, growthPct: ((r2 - r1) / r1) * 100, probesPerPhase: pl.memoryPerPhase };
    }
    if (o.sections.has("newconn")) {
      for (const rate of t.role === "subject" ? pl.rates : pl.peerRates) {
        log(`${t.label}: new connection per probe at ${rate}/s`);
        res.newconn.push(await measureNewConn(s, rate, pl));
      }
    }
    if (o.sections.has("throughput") && haveH2load && tcpCheck.ok) {
      log(`${t.label}: throughput`);
      res.throughput = await measureH2(s, "gRPC Probe c8 m4", grpcLoad(8, 4, pl.throughputN));
      res.singleClient = await measureH2(s, "gRPC Probe c1 m1", grpcLoad(1, 1, pl.singleN), 500);
    }
    if (o.sections.has("http") && haveH2load) {
      const base = `http://127.0.0.1:${ctx.httpPort}`;
      if (t.http.healthz) {
        const bad = await checkHttp1(ctx.httpPort, "/healthz", false);
        if (bad) res.notes.push(bad);
        else {
          log(`${t.label}: HTTP/1.1 /healthz`);
          res.http.push(await measureH2(s, "GET /healthz", { url: `${base}/healthz`, clients: 8, streams: 1, requests: pl.httpN, h1: true }));
        }
      }
      if (t.http.connectJson) {
        const bad = await checkHttp1(ctx.httpPort, PROBE_PATH, true);
        if (bad) res.notes.push(bad);
        else {
          log(`${t.label}: HTTP/1.1 Connect JSON Probe`);
          res.http.push(
            await measureH2(s, "POST Probe (Connect JSON)", {
              url: `${base}${PROBE_PATH}`, clients: 8, streams: 1, requests: pl.httpN, h1: true,
              headers: ["content-type: application/json"], dataFile: jsonBodyFile(),
            }),
          );
        }
      }
    }
  } catch (e) {
    res.notes.push(`aborted: ${(e as Error).message}`);
    log(`${t.label}: aborted: ${(e as Error).message}`);
  } finally {
    await s.stop();
  }
  return res;
}

/**
 * probegate's memory with Kubernetes node reporting on, on each runtime,
 * against the tests' fake API server (same semantics as kube-apiserver; it
 * runs in this process, so on the load's core when pinned). The client library
 * is loaded only when reporting is on, so this is the price of turning it on.
 */
async function benchWithKubernetes(pg: ServerTarget, o: Options, pl: Plan, haveH2load: boolean, runtimes: Runtime[]): Promise<ServerResult[]> {
  const { FakeKubeApi } = await import("../gateway/test/helpers/fake-kube-api.js");
  // One Node per runtime: each reporter starts from a Node without its
  // condition, so "it wrote the condition" tells that reporting worked.
  const nodes = runtimes.map((_, i) => `node-${i}`);
  const api = await new FakeKubeApi({ tokens: Object.fromEntries(nodes.map((n) => [`bench-${n}`, n])) }).start();
  const memoryOnly = { ...o, sections: new Set<Section>(["memory"]) };
  const out: ServerResult[] = [];
  try {
    for (const [i, rt] of runtimes.entries()) {
      const nodeName = nodes[i]!;
      api.addNode(nodeName);
      const kubeconfig = path.join(tmpDir(), `kubeconfig-${nodeName}`);
      fs.writeFileSync(kubeconfig, api.kubeconfig(`bench-${nodeName}`));
      log(`probegate with Kubernetes reporting on Node ${rt.version}: memory`);
      const res = await benchServer(withKubernetesReporting(pg, kubeconfig, nodeName), memoryOnly, pl, haveH2load, i === 0 ? undefined : rt);
      // A figure from a reporter that never wrote is not the figure asked for.
      if (!api.condition(nodeName, KUBERNETES_BENCH_CONDITION)) res.notes.push("the reporter wrote no Node condition in this run: its figure is not the reporting one");
      out.push(res);
    }
  } finally {
    await api.close();
  }
  return out;
}

/** Builds the compiled fake lnetctl/lctl (bench/fixtures/fake-lnet.c) with cc. */
function buildCompiledFake(): string | { error: string } {
  const bin = path.join(tmpDir(), "cfake");
  fs.mkdirSync(bin, { recursive: true });
  const r = spawnSync("cc", ["-O2", "-o", path.join(bin, "lnetctl"), path.join(root, "bench/fixtures/fake-lnet.c")], { encoding: "utf8" });
  if (r.status !== 0) return { error: `cc failed: ${r.error?.message ?? r.stderr}` };
  // One binary, dispatched on its name (fake-lnet.c): the LNet and Lustre tools, and the statfs probe's `stat`.
  for (const tool of ["lctl", "lfs", "mount.lustre", "stat"]) {
    fs.copyFileSync(path.join(bin, "lnetctl"), path.join(bin, tool));
    fs.chmodSync(path.join(bin, tool), 0o755);
  }
  return bin;
}

async function benchExec(pl: Plan): Promise<ExecRow[]> {
  const demoBin = path.join(root, "gateway/demo/bin");
  const demoScenario = path.join(root, "gateway/demo/scenarios/healthy");
  const scenario = fs.existsSync(path.join(demoScenario, "net_show.out")) ? demoScenario : path.join(root, "bench/fixtures/healthy");
  const script = path.join(root, "bench/peers/exec-readiness.sh");
  const rows: ExecRow[] = [];
  const compiled = buildCompiledFake();
  const runs: { label: string; bin: string; n: number }[] = [];
  if (typeof compiled === "string") runs.push({ label: "compiled C fake (like a real lnetctl)", bin: compiled, n: pl.execRuns.compiled });
  else log(`exec: ${compiled.error}`);
  const nodeBin = fs.existsSync(path.join(demoBin, "lnetctl")) ? demoBin : path.join(root, "bench/fixtures/node-fake");
  runs.push({ label: `Node fake (${path.relative(root, nodeBin)})`, bin: nodeBin, n: pl.execRuns.node });
  for (const r of runs) {
    log(`exec: ${r.label}, ${r.n} runs`);
    const params: ExecParams = { script, fakeBin: r.bin, scenario, iterations: r.n };
    const result = await runChild<ExecResult>(dist("load/exec-runner.js"), params);
    rows.push({ label: r.label, result });
  }
  return rows;
}

async function benchProfile(pl: Plan): Promise<ProfileResult | undefined> {
  const t = TARGETS.find((x) => x.id === "probegate")!;
  const dir = path.join(tmpDir(), "prof");
  fs.mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const ctx = { root, socket: path.join(tmpDir(), "prof.sock"), port, httpPort: await freePort() };
  const s = await startServer(t, ctx, ["--cpu-prof", `--cpu-prof-dir=${dir}`]);
  let rps = NaN;
  try {
    const p: H2loadParams = { url: `http://127.0.0.1:${port}${PROBE_PATH}`, clients: 8, streams: 4, requests: pl.profileN, headers: GRPC_HEADERS, dataFile: grpcBodyFile() };
    rps = (await runH2load(p)).reqPerSec;
  } finally {
    await s.stop();
  }
  const file = fs.readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (!file) return undefined;
  const saved = path.join(root, `bench/results/${t.id}.cpuprofile.summary.json`);
  const sum = summarizeProfile(JSON.parse(fs.readFileSync(path.join(dir, file), "utf8")), 30);
  const out: ProfileResult = { target: t.label, reqPerSec: rps, ...sum, file: path.relative(root, saved) };
  fs.writeFileSync(saved, JSON.stringify(out, null, 2) + "\n");
  return out;
}

function cpuModel(): string {
  return os.cpus()[0]?.model?.trim() ?? "unknown";
}

async function main(): Promise<number> {
  const o = parseArgs(process.argv.slice(2));
  const pl = plan(o.quick);
  if (o.pin) log(`pinned: server on CPU ${enablePinning().server}, load on CPU ${currentPinning()!.load}`);
  const t0 = Date.now();
  const startedAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const haveH2load = h2loadAvailable();
  if (!haveH2load) log("h2load not found (apt-get install -y nghttp2-client): persistent-connection sections skipped");
  const result: BenchResult = {
    meta: {
      startedAt, finishedAt: "", quick: o.quick, sections: [...o.sections], node: process.version, cpus: os.cpus().length,
      cpuModel: cpuModel(), h2load: haveH2load ? h2loadVersion() : "", clockTicks: clockTicks(), pinned: currentPinning(),
      loadavg: os.loadavg(),
    },
    servers: [],
    exec: [],
    targets: [],
  };
  const serverSections = ["memory", "newconn", "throughput", "http"].some((x) => o.sections.has(x as Section));
  let fakeNode: { bin: string; scenario: string } | undefined;
  if (serverSections || o.sections.has("footprint") || o.sections.has("profile") || o.sections.has("nodecost")) {
    const compiled = buildCompiledFake();
    if (typeof compiled === "string") {
      const scenario = path.join(tmpDir(), "probegate-node");
      fs.cpSync(path.join(root, "gateway/demo/scenarios/healthy"), scenario, { recursive: true });
      fakeNode = { bin: compiled, scenario };
      useFakeNode(fakeNode);
    } else log(`probegate runs on the demo node's Node.js fakes: ${compiled.error}`);
  }
  if (serverSections) {
    for (const t of TARGETS.filter((x) => !o.targets || o.targets.includes(x.id))) result.servers.push(await benchServer(t, o, pl, haveH2load));
  }
  const wantNode24 = (o.sections.has("memory") || o.sections.has("footprint") || o.sections.has("nodecost")) && (!o.targets || o.targets.includes("probegate"));
  const node24 = wantNode24 ? resolveNode24(o.node24) : null;
  if (node24 && "error" in node24) log(`Node 24 not measured: ${node24.error}`);
  const runtimes: Runtime[] = [{ bin: process.execPath, version: process.version }];
  if (node24 && !("error" in node24) && node24.version !== process.version) runtimes.push(node24);
  const pg = TARGETS.find((x) => x.id === "probegate")!;
  if (o.sections.has("memory") && haveH2load && runtimes.length > 1 && (!o.targets || o.targets.includes("probegate"))) {
    log(`probegate on Node ${runtimes[1].version}: memory`);
    result.servers.push(await benchServer(pg, o, pl, haveH2load, runtimes[1]));
  }
  if (o.sections.has("memory") && haveH2load && (!o.targets || o.targets.includes("probegate"))) {
    result.servers.push(...(await benchWithKubernetes(pg, o, pl, haveH2load, runtimes)));
  }
  if (o.sections.has("footprint") && haveH2load) {
    result.footprint = [];
    for (const rt of runtimes) {
      log(`footprint on Node ${rt.version}`);
      result.footprint.push(
        await measureFootprint({
          root, tmp: tmpDir(), target: pg, node: rt, log, probes: pl.footprintProbes, nodeFlags: PROBEGATE_NODE_FLAGS,
          ctx: async (name) => {
            const port = await freePort();
            return { root, socket: path.join(tmpDir(), `${name}.sock`), port, httpPort: port };
          },
          grpcLoad: (port, requests) => ({ url: `http://127.0.0.1:${port}${PROBE_PATH}`, clients: 8, streams: 4, requests, headers: GRPC_HEADERS, dataFile: grpcBodyFile() }),
        }),
      );
    }
  }
  if (o.sections.has("nodecost")) {
    if (!fakeNode) log("nodecost: skipped (no cc for the compiled fake tools: the script and probegate would not run the same tools)");
    else {
      const fake = fakeNode;
      result.nodeCost = await measureNodeCost({
        quick: o.quick, target: pg, runtimes, log,
        ctx: async (name, node) => {
          const port = await freePort();
          return { root, socket: path.join(tmpDir(), `${name}.sock`), port, httpPort: port, node };
        },
        nodes: (id) => costNode(id, fake.bin),
        ...(o.nodecostNodes ? { only: o.nodecostNodes } : {}),
        runExec: (iterations) =>
          runChild<ExecResult>(dist("load/exec-runner.js"), { script: path.join(root, "bench/peers/exec-readiness.sh"), fakeBin: fake.bin, scenario: fake.scenario, iterations } satisfies ExecParams),
      });
    }
  }
  if (o.sections.has("exec")) result.exec = await benchExec(pl);
  if (o.sections.has("plugins")) {
    log("plugins: per-call cost");
    const params: PluginCostParams = { pluginsDir: path.join(root, "dist/plugins"), sizes: [1, 16, 256, 1024], budgetMs: pl.pluginBudgetMs, engineCounts: [1, 8, 32] };
    try {
      result.plugins = await runChild<PluginCostResult>(dist("load/plugin-cost.js"), params);
    } catch (e) {
      log(`plugins: ${(e as Error).message}`);
    }
  }
  if (o.sections.has("profile") && haveH2load) {
    log("profile: probegate under h2load with --cpu-prof");
    result.profile = await benchProfile(pl);
  }
  result.targets = o.sections.size >= ALL_SECTIONS.length ? evaluateTargets(result) : evaluateTargets(result).filter((x) => !x.measured.startsWith("n/a") && (x.pass !== null || x.limit === "none"));
  result.meta.finishedAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");

  const outDir = path.join(root, "bench/results");
  fs.mkdirSync(outDir, { recursive: true });
  const complete = ALL_SECTIONS.every((x) => o.sections.has(x)) && !o.targets;
  // A partial run (--only/--targets) never replaces latest.*: it writes latest-<sections>.*.
  const tag = complete ? "" : `-${[...o.sections].join("+")}`;
  const stamp = `${startedAt.replace(/:/g, "-")}${o.quick ? "-quick" : ""}${tag}`;
  const json = JSON.stringify(result, (_k, v) => (typeof v === "number" && !Number.isFinite(v) ? null : v), 2) + "\n";
  const report = renderReport(result);
  fs.writeFileSync(path.join(outDir, `${stamp}.json`), json);
  fs.writeFileSync(path.join(outDir, `latest${tag}.json`), json);
  fs.writeFileSync(path.join(outDir, `latest${tag}.md`), report);
  if (result.servers.some((s) => s.newconn.length)) fs.writeFileSync(path.join(outDir, `latest${tag}.svg`), renderSvg(result));
  process.stdout.write(report);
  log(`done in ${((Date.now() - t0) / 1000).toFixed(1)} s; wrote bench/results/latest${tag}.{json,md${result.servers.some((s) => s.newconn.length) ? ",svg" : ""}} and ${stamp}.json`);
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  return 0;
}

process.on("SIGINT", () => {
  killAll();
  process.exit(130);
});
main().then(
  (c) => process.exit(c),
  (e) => {
    killAll();
    process.stderr.write(`bench failed: ${e?.stack ?? e}\n`);
    process.exit(1);
  },
);
