// `node dist/bench/growth.js [--duration 8m] [--warmup 2m] [--stressors 'control;fuzz;all@MALLOC_ARENA_MAX=2'] [--env 'NAME=V ...'] [--out FILE]`:
// which of the soak's stressors makes a node-mode gateway's memory grow. One
// gateway per stressor, all started like the soak starts them (the image's
// node flags, node mode, bundled plugins) and run side by side for the same
// minutes, so the machine's noise hits all alike. Every gateway gets the same
// light Probe and /readyz traffic; each gets one stressor on top (`control`
// none). Every 2 s: RSS, smaps_rollup Anonymous, the main malloc arena
// ([heap]), and V8's heap used/committed, external and per-space use from the
// gateway's own /metrics. At the end, Theil–Sen slopes (bench/soak/stats.ts,
// of 30 s window minima) after the warm-up, per series. `all` is every
// stressor at once (the soak's node-mode gateway, floods and bursts every
// minute). A rig's own environment (`all@MALLOC_ARENA_MAX=2`) compares malloc
// settings; with `NODE_OPTIONS=--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR`
// the rig writes a heap snapshot at the end of the warm-up and at the end.
// Measures; asserts nothing.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseDuration } from "../gateway/src/engine/sources/index.js";
import { FakeKubeApi } from "../gateway/test/helpers/fake-kube-api.js";
import { repoRoot } from "./lib/paths.js";
import { flagValue } from "./lib/args.js";
import { isMain } from "./lib/main.js";
import { smapsOf } from "./lib/smaps.js";
import { PROBE_PATH } from "./lib/grpc.js";
import { FLOOD_MODES, startFlood } from "./soak/conn-flood.js";
import { EdgeFuzzer, type FuzzKind } from "./soak/fuzz-edge.js";
import { GatewayProc } from "./soak/gateway-proc.js";
import { grpcUnary } from "./soak/grpc-call.js";
import { LnetFaults } from "./soak/lnet-faults.js";
import { LustreFaults } from "./soak/lustre-faults.js";
import { probeBurst } from "./soak/probe-burst.js";
import { PlainDir, PluginChurn, compileKinds } from "./soak/plugin-churn.js";
import { Recorder } from "./soak/recorder.js";
import { Rng } from "./soak/rng.js";
import { theilSen, windowMinima } from "./soak/stats.js";
import { HealthCalls, type Target } from "./soak/traffic.js";
import { fetchMetrics, parseV8Metrics } from "./soak/v8-metrics.js";

export const STRESSORS = ["control", "fuzz", "flood", "burst", "kube", "faults", "churn", "all"] as const;
export type Stressor = (typeof STRESSORS)[number];

export interface GrowthSample {
  t: number;
  rssMiB: number;
  anonMiB: number;
  brkMiB: number;
  heapUsedMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
  /** V8 heap space → used MiB (old, new, code, large_object, ...). */
  spaces: Record<string, number>;
}

const MiB = 1048576;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r2 = (x: number) => Math.round(x * 100) / 100;

function kb(text: string, re: RegExp): number {
  return Number(re.exec(text)?.[1] ?? NaN) * 1024;
}

async function sample(g: GatewayProc, t0: number): Promise<GrowthSample | undefined> {
  if (!g.alive()) return undefined;
  const body = await fetchMetrics(g.port);
  try {
    const v8 = parseV8Metrics(body);
    const rollup = fs.readFileSync(`/proc/${g.pid}/smaps_rollup`, "utf8");
    return {
      t: Date.now() - t0,
      rssMiB: r2(kb(rollup, /^Rss:\s+(\d+) kB/m) / MiB),
      anonMiB: r2(kb(rollup, /^Anonymous:\s+(\d+) kB/m) / MiB),
      brkMiB: r2(smapsOf(g.pid).malloc),
      heapUsedMiB: r2(v8.heapUsed / MiB),
      heapTotalMiB: r2(v8.heapTotal / MiB),
      externalMiB: r2(v8.external / MiB),
      spaces: Object.fromEntries(Object.entries(v8.spaces).map(([k, v]) => [k, r2(v / MiB)])),
    };
  } catch {
    return undefined;
  }
}

/** Slope per hour (Theil–Sen of 30 s window minima) of one series, from `fromMs` on. */
export function slopePerHour(samples: readonly GrowthSample[], pick: (s: GrowthSample) => number, fromMs: number, windowMs = 30_000): number {
  const pts = windowMinima(samples.filter((s) => s.t >= fromMs).map((s) => ({ t: s.t, v: pick(s) })), windowMs);
  return Math.round(theilSen(pts.map((p) => p.t / 3_600_000), pts.map((p) => p.v)) * 10) / 10;
}

const SERIES: Array<[string, (s: GrowthSample) => number]> = [
  ["rss", (s) => s.rssMiB],
  ["anon", (s) => s.anonMiB],
  ["brk", (s) => s.brkMiB],
  ["heapUsed", (s) => s.heapUsedMiB],
  ["heapTotal", (s) => s.heapTotalMiB],
  ["external", (s) => s.externalMiB],
  ["nonV8Anon", (s) => s.anonMiB - s.heapTotalMiB],
];

interface Options {
  durationMs: number;
  warmupMs: number;
  /** Each a stressor, optionally with its own environment: `all@MALLOC_ARENA_MAX=2,NODE_OPTIONS=...`. */
  stressors: string[];
  env: string;
  out?: string;
}

/** "fuzz" or "all@NAME=VALUE,NAME=VALUE": the stressor and the rig's own environment. */
export function parseRigSpec(spec: string): { stressor: Stressor; env: Record<string, string> } {
  const at = spec.indexOf("@");
  const stressor = (at < 0 ? spec : spec.slice(0, at)) as Stressor;
  if (!STRESSORS.includes(stressor)) throw new Error(`--stressors: ${JSON.stringify(spec)}: not one of ${STRESSORS.join(", ")}`);
  const env: Record<string, string> = {};
  for (const kv of at < 0 ? [] : spec.slice(at + 1).split(",")) {
    const i = kv.indexOf("=");
    if (i <= 0) throw new Error(`--stressors: ${JSON.stringify(kv)} is not NAME=VALUE`);
    env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return { stressor, env };
}

export async function growth(o: Options): Promise<{ meta: object; gateways: Array<{ stressor: string; counts: Record<string, number>; slopes: Record<string, number>; start: GrowthSample | undefined; end: GrowthSample | undefined; samples: GrowthSample[] }> }> {
  const root = repoRoot();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-growth-"));
  const rng = new Rng(32);
  const bundledDir = path.join(root, "dist/plugins");
  const bundled = new Map(fs.readdirSync(bundledDir).filter((f) => f.endsWith(".wasm")).map((f) => [f, fs.readFileSync(path.join(bundledDir, f))] as [string, Uint8Array]));
  const specs = o.stressors.map((x) => ({ label: x, ...parseRigSpec(x) }));
  const kinds = specs.some((x) => x.stressor === "churn" || x.stressor === "all") ? await compileKinds(root) : [];
  const extraEnv = Object.fromEntries(o.env.split(" ").filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]));
  const t0 = Date.now();
  const cleanups: Array<() => void> = [];
  const rigs = await Promise.all(
    specs.map(async ({ label, stressor, env: rigEnv }, i) => {
      const has = (s: Stressor) => stressor === s || (stressor === "all" && s !== "control");
      const dir = path.join(work, `rig${i}`);
      fs.mkdirSync(dir, { recursive: true });
      const lnet = new LnetFaults(dir, new Rng(100 + i));
      cleanups.push(() => lnet.cleanup());
      const lustre = has("faults") ? await LustreFaults.create(root, lnet.node.dir, lnet.node.procfs, lnet.binDir, dir, new Rng(200 + i)) : undefined;
      const plugins = new PlainDir(path.join(dir, "plugins"));
      const churn = has("churn") ? new PluginChurn(plugins, bundled, kinds, new Rng(300 + i)) : undefined;
      if (!churn) for (const [f, b] of bundled) plugins.put(f, b);
      let kubeArgs: string[] = [];
      let kube: FakeKubeApi | undefined;
      if (has("kube")) {
        kube = await new FakeKubeApi({ tokens: { "growth-token": "growth-node" } }).start();
        kube.addNode("growth-node");
        kube.setCSINode("growth-node", ["probegate.csi.io"]);
        kube.startKubelet("growth-node", 10_000);
        fs.writeFileSync(path.join(dir, "kubeconfig"), kube.kubeconfig("growth-token"));
        kubeArgs = [`--kubeconfig=${path.join(dir, "kubeconfig")}`, "--node-name=growth-node", "--node-condition=probegate.example.com/Ready", "--node-taint=probegate.example.com/not-ready:NoSchedule", "--node-taint-mode=continuous"];
      }
      const sock = path.join(dir, "g.sock");
      const args = [`--csi-endpoint=unix://${sock}`, `--plugins-dir=${plugins.dir}`, ...kubeArgs, "--http-endpoint=127.0.0.1:0", `--path.procfs=${lnet.node.procfs}`, `--path.sysfs=${lnet.node.sysfs}`, "--check-interval=2000ms", `--kubelet-dir=${path.join(dir, "kubelet")}`, "--log-level=info"];
      const g = new GatewayProc({ name: label, root, socket: sock, env: { ...lnet.env(), ...extraEnv, ...rigEnv }, heapMiB: 48, args }, t0);
      return { label, has, g, lnet, lustre, churn, kube, samples: [] as GrowthSample[], counts: {} as Record<string, number> };
    }),
  );
  const onSignal = () => {
    for (const r of rigs) r.g.child?.kill("SIGKILL");
    for (const c of cleanups) c();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  for (const r of rigs) await r.g.start();
  const start = Date.now();
  const end = start + o.durationMs;
  const running = () => Date.now() < end;
  const bump = (c: Record<string, number>, k: string) => (c[k] = (c[k] ?? 0) + 1);
  const loops: Promise<void>[] = [];
  const every = (ms: number, fn: () => Promise<unknown>) =>
    loops.push(
      (async () => {
        await sleep(Math.random() * ms);
        while (running()) {
          const next = Date.now() + ms;
          await fn().catch(() => {});
          await sleep(Math.max(0, next - Date.now()));
        }
      })(),
    );
  const rec = new Recorder(t0, 30_000, 1_000);
  for (const r of rigs) {
    const { g, counts } = r;
    // The same light traffic for all: kubelet's liveness (a new socket connection) and readiness.
    every(500, () => grpcUnary({ socketPath: g.spec.socket }, PROBE_PATH, new Uint8Array(), { timeoutMs: 3000, capMs: 30_000 }));
    every(1000, () => fetchMetrics(g.port).then(() => undefined));
    every(2000, async () => {
      const s = await sample(g, start);
      if (s) r.samples.push(s);
    });
    const target: Target = { proc: g, oracle: undefined as never, causes: () => [] };
    const kube = r.kube;
    {
      if (r.has("fuzz")) {
        // The soak's: 40 cases a kind, the kinds in turn, fresh seeds, a second between rounds.
        const fk: FuzzKind[][] = [["h1-random", "h2-request"], ["h2-frames"], ["h1-split", "h2-split"]];
        let round = 0;
        loops.push(
          (async () => {
            while (running()) {
              await new EdgeFuzzer({ host: "127.0.0.1", port: g.port, socket: g.spec.socket }, { seed: 32_000 + round, cases: 40, kinds: fk[round % fk.length], splitPositions: 24, until: end, deadlineMs: 5_000 }).run();
              round++;
              bump(counts, "fuzz-rounds");
              await sleep(1_000);
            }
          })(),
        );
      }
      if (r.has("flood")) {
        // The soak's floods, every minute instead of every four, each kind in turn.
        let n = 0;
        every(60_000, async () => {
          const mode = FLOOD_MODES[n++ % FLOOD_MODES.length]!;
          bump(counts, `flood-${mode}`);
          const count = mode === "malformed" ? 300 : 1000;
          const fl = [startFlood(mode, `127.0.0.1:${g.port}`, count), ...(mode === "trickle" ? [] : [startFlood(mode, g.spec.socket, count)])];
          await sleep(8_000);
          for (const f of fl) f.stop();
        });
      }
      if (r.has("burst")) {
        every(60_000, async () => {
          bump(counts, "burst");
          await probeBurst(g, 8_000);
        });
      }
      if (r.has("kube")) {
        // The soak's API faults: 500s, throttling, the server away, every 20–60 s.
        let down = false;
        loops.push(
          (async () => {
            while (running()) {
              await sleep(down ? rng.between(5_000, 20_000) : rng.between(20_000, 60_000));
              if (!running()) break;
              if (down) {
                await kube!.accept();
                down = false;
                continue;
              }
              const x = rng.next();
              if (x < 0.35) (kube!.failNext(rng.int(5, 30), { status: 500 }), bump(counts, "kube-500"));
              else if (x < 0.7) (kube!.failNext(rng.int(5, 30), { status: 429, retryAfter: "2" }), bump(counts, "kube-429"));
              else (await kube!.refuse(), (down = true), bump(counts, "kube-down"));
            }
            if (down) await kube!.accept();
          })(),
        );
        every(10_000, async () => void kube!.requests.splice(0));
      }
      if (r.has("faults")) {
        // LNet and Lustre faults (15–40 s each), with the node-mode health RPCs on the published volumes (one of them hangs).
        const health = new HealthCalls(target);
        const vols = r.lustre?.volumes ?? [];
        every(500, () => health.storage(rec));
        for (const v of vols) every(500, () => health.volume(rec, v.id, v.target));
        loops.push(
          (async () => {
            while (running()) {
              await sleep(rng.between(15_000, 40_000));
              bump(counts, `lnet-${r.lnet.step()}`);
              if (r.lustre) bump(counts, `lustre-${r.lustre.step()}`);
            }
            r.lustre?.release();
            health.close();
          })(),
        );
      }
      if (r.has("churn")) every(7_000, async () => bump(counts, `churn-${r.churn!.step(Date.now())}`));
    }
  }
  let minute = 0;
  loops.push(
    (async () => {
      while (running()) {
        await sleep(60_000);
        minute++;
        process.stderr.write(`growth: ${minute} min: ${rigs.map((r) => `${r.label} ${r.samples.at(-1)?.rssMiB.toFixed(1)}`).join(", ")}\n`);
      }
    })(),
  );
  // Heap snapshots: the gateway writes one on SIGUSR2 when started with --heapsnapshot-signal (in NODE_OPTIONS).
  const snap = () => {
    for (const r of rigs) if (r.label.includes("--heapsnapshot-signal") && r.g.alive()) r.g.child!.kill("SIGUSR2");
  };
  loops.push(sleep(o.warmupMs).then(snap));
  await Promise.all(loops);
  snap();
  if (rigs.some((r) => r.label.includes("--heapsnapshot-signal"))) await sleep(15_000);
  for (const r of rigs) await r.g.stop();
  for (const r of rigs) await r.kube?.close();
  for (const c of cleanups) c();
  fs.rmSync(work, { recursive: true, force: true });
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  return {
    meta: { startedAt: new Date(start).toISOString(), durationS: o.durationMs / 1000, warmupS: o.warmupMs / 1000, env: o.env || "as-is", node: process.version, cpus: os.cpus().length, loadavg: os.loadavg() },
    gateways: rigs.map((r) => ({
      stressor: r.label,
      counts: r.counts,
      crashes: r.g.crashes.length,
      slopes: Object.fromEntries(SERIES.map(([k, f]) => [k, slopePerHour(r.samples, f, o.warmupMs)])),
      start: r.samples.find((s) => s.t >= o.warmupMs),
      end: r.samples.at(-1),
      samples: r.samples,
    })),
  };
}

export function markdown(r: Awaited<ReturnType<typeof growth>>): string {
  const rows = [
    "| stressor | RSS after warm-up → end (MiB) | slope MiB/h: RSS | Anonymous | [heap] arena | V8 used | V8 committed | external | Anonymous − V8 committed |",
    "|---|---|---|---|---|---|---|---|---|",
  ];
  for (const g of r.gateways) {
    const s = g.slopes;
    rows.push(`| ${g.stressor} | ${g.start?.rssMiB ?? "?"} → ${g.end?.rssMiB ?? "?"} | ${s.rss} | ${s.anon} | ${s.brk} | ${s.heapUsed} | ${s.heapTotal} | ${s.external} | ${s.nonV8Anon} |`);
  }
  return rows.join("\n");
}

if (isMain(import.meta.url)) {
  const args = process.argv.slice(2);
  const get = (flag: string, dflt: string) => flagValue(args, flag, dflt);
  const durationMs = parseDuration(get("--duration", "8m"));
  const warmupMs = parseDuration(get("--warmup", "2m"));
  const stressors = get("--stressors", STRESSORS.join(";")).split(";").filter(Boolean);
  if (durationMs === null || warmupMs === null || warmupMs >= durationMs || !stressors.every((s) => { try { return !!parseRigSpec(s); } catch { return false; } })) {
    process.stderr.write(`usage: node dist/bench/growth.js [--duration 8m] [--warmup 2m] [--stressors '${STRESSORS.join(";")}'; each may be STRESSOR@NAME=VALUE,... for its own environment] [--env 'NAME=VALUE ...'] [--out FILE]\n`);
    process.exit(2);
  }
  const r = await growth({ durationMs, warmupMs, stressors, env: get("--env", "") });
  const out = get("--out", "");
  if (out) fs.writeFileSync(out, JSON.stringify(r) + "\n");
  process.stdout.write(`${markdown(r)}\n`);
}
