// `npm run soak`: two real probegate processes under traffic and faults for
// --duration, invariants counted all along, a report at the end. See
// bench/soak/README.md.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { SERVER_PING_DEFAULTS, SOURCE_DEFAULTS, STATFS_DEFAULTS } from "../../gateway/src/engine/sources/index.js";
import { FakeKubeApi } from "../../gateway/test/helpers/fake-kube-api.js";
import { benchDist, repoRoot } from "../lib/paths.js";
import { isMain } from "../lib/main.js";
import { EdgeFuzzer, type FuzzKind, type FuzzStats } from "./fuzz-edge.js";
import { GatewayProc } from "./gateway-proc.js";
import { LnetFaults } from "./lnet-faults.js";
import { LustreFaults } from "./lustre-faults.js";
import { FakeNode } from "../../gateway/test/helpers/fake-umount.js";
import { STUCK_AFTER_MS, StuckUnmounts, UNSTICK_AFTER_MS } from "./stuck-unmounts.js";
import { HealthOracle, ReadinessOracle, type Cause, type HealthBounds, type OracleBounds } from "./oracle.js";
import { parseOptions, USAGE, type SoakOptions } from "./options.js";
import { ConfigMapDir, PlainDir, PluginChurn, compileKinds } from "./plugin-churn.js";
import { Recorder } from "./recorder.js";
import { buildReport, writeReport, type SoakReport } from "./report.js";
import { Rng } from "./rng.js";
import { ConnectClients, Forwarder, HealthCalls, probeUnix, healthTcp, httpGet, type Target } from "./traffic.js";
import { connectSession, grpcUnary } from "./grpc-call.js";
import { FLOOD_MODES, startFlood } from "./conn-flood.js";
import { PROBE_PATH } from "../lib/grpc.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Loops {
  private timers = new Set<NodeJS.Timeout>();
  stopped = false;
  readonly inflight = new Set<Promise<unknown>>();

  /** Fires fn every periodMs (open loop), unless maxInflight of its own are still running. */
  every(periodMs: number, maxInflight: number, fn: () => Promise<void>, onSkip: () => void): void {
    let mine = 0;
    const tick = () => {
      if (this.stopped) return;
      if (mine >= maxInflight) onSkip();
      else {
        mine++;
        const p = fn()
          .catch(() => {})
          .finally(() => {
            mine--;
            this.inflight.delete(p);
          });
        this.inflight.add(p);
      }
      const t = setTimeout(tick, periodMs);
      this.timers.add(t);
      t.unref?.();
    };
    const t = setTimeout(tick, Math.random() * periodMs);
    this.timers.add(t);
  }

  /** Runs fn after a delay chosen by next() each time, until stopped. */
  schedule(next: () => number, fn: () => Promise<void> | void): void {
    const go = () => {
      if (this.stopped) return;
      const t = setTimeout(async () => {
        this.timers.delete(t);
        if (this.stopped) return;
        try {
          await fn();
        } catch (e) {
          process.stderr.write(`soak: scheduled step failed: ${(e as Error).stack}\n`);
        }
        go();
      }, next());
      this.timers.add(t);
    };
    go();
  }

  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
  }
}

const KUBE_NODE = "soak-node";
const KUBE_CONDITION = "probegate.example.com/Ready";
const KUBE_TAINT = "probegate.example.com/not-ready";

/** Polls until the Node's condition says what /readyz says, twice in a row. */
async function nodeConditionConverges(kube: FakeKubeApi, http: string, limitMs: number): Promise<{ converged: boolean; condition?: string; readyz?: number; ms: number }> {
  const start = Date.now();
  let agreed = 0;
  let last: { condition?: string; readyz?: number } = {};
  while (Date.now() - start < limitMs) {
    const readyz = await fetch(`http://${http}/readyz`).then((r) => r.status, () => 0);
    const condition = kube.condition(KUBE_NODE, KUBE_CONDITION)?.status as string | undefined;
    last = { condition, readyz };
    const want = readyz === 200 ? "True" : "False";
    agreed = condition === want ? agreed + 1 : 0;
    if (agreed >= 2) return { converged: true, ...last, ms: Date.now() - start };
    await sleep(500);
  }
  return { converged: false, ...last, ms: Date.now() - start };
}

export async function runSoak(o: SoakOptions): Promise<SoakReport> {
  const root = repoRoot();
  const t0 = Date.now();
  // Set once the gateways are up: compiling plugins and starting must not eat into the run.
  let end = Number.POSITIVE_INFINITY;
  const rng = new Rng(o.seed);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-soak-"));
  const driverUnhandled: string[] = [];
  const onUnhandled = (e: unknown) => driverUnhandled.push(String((e as Error)?.stack ?? e).slice(0, 400));
  process.on("unhandledRejection", onUnhandled);
  const lag = monitorEventLoopDelay({ resolution: 20 });
  lag.enable();
  const log = (s: string) => process.stderr.write(`soak +${((Date.now() - t0) / 1000).toFixed(0)}s: ${s}\n`);

  log(`work dir ${work}; compiling the churn plugins (cached after the first run)`);
  const kinds = await compileKinds(root);
  const lnet = new LnetFaults(work, rng);
  // Lustre client faults behind the storage/volume health RPCs (needs the demo's fake Lustre client).
  const lustre = await LustreFaults.create(root, lnet.node.dir, lnet.node.procfs, lnet.binDir, work, rng);
  if (!lustre) log("no fake Lustre client in this tree (gateway/demo/lib/fake-lustre.js): the health RPCs are called, Lustre faults are not driven");
  // The stuck-unmount fault's node: the same procfs (its mount table) and tool directory, a fake umount that blocks while a mount hangs.
  const unmountNode = new FakeNode(lnet.node.dir);
  fs.rmSync(path.join(lnet.binDir, "umount"), { force: true });
  fs.symlinkSync(path.join(unmountNode.bin, "umount"), path.join(lnet.binDir, "umount"));
  const bundledDir = path.join(root, "dist/plugins");
  const bundled = new Map(fs.readdirSync(bundledDir).filter((f) => f.endsWith(".wasm")).map((f) => [f, fs.readFileSync(path.join(bundledDir, f))] as [string, Uint8Array]));
  const dirA = new PlainDir(path.join(work, "plugins-a"));
  const dirB = new ConfigMapDir(path.join(work, "plugins-b"));
  const churnA = new PluginChurn(dirA, bundled, kinds, rng);
  const churnB = new PluginChurn(dirB, bundled, kinds, rng);
  for (const [name, c] of [["node", churnA], ["gateway", churnB]] as const) {
    c.onKept = (what, file, ms) => log(what === "kept" ? `${name}: ${file} overwritten with refused content; its faulting module stays in force` : `${name}: ${file}: the kept faulting module left after ${(ms / 1000).toFixed(1)} s`);
  }

  // The fake upstream driver (gateway mode), restarted after every kill.
  const driverSocket = path.join(work, "driver.sock");
  let driver: ChildProcess | undefined;
  let driverDownSince: number | undefined = t0;
  let driverKills = 0;
  let driverStarts = 0;
  const startDriver = async () => {
    fs.rmSync(driverSocket, { force: true });
    const d = spawn(process.execPath, [benchDist("soak/upstream-driver.js"), JSON.stringify({ socket: driverSocket, seed: o.seed + driverStarts, fakeNode: lnet.node.dir })], { stdio: ["ignore", "pipe", "inherit"] });
    driver = d;
    driverStarts++;
    await new Promise<void>((resolve, reject) => {
      d.stdout!.on("data", (c) => String(c).includes("READY") && resolve());
      d.once("exit", (code) => reject(new Error(`fake driver exited ${code}`)));
    });
    driverDownSince = undefined;
  };
  await startDriver();

  // The node-mode gateway reports to a fake Kubernetes API server (gateway/test/helpers), which fails,
  // throttles and goes away now and then.
  const kube = await new FakeKubeApi({ tokens: { "soak-token": KUBE_NODE } }).start();
  kube.addNode(KUBE_NODE);
  kube.setCSINode(KUBE_NODE, ["probegate.csi.io"]);
  kube.startKubelet(KUBE_NODE, 10_000);
  const kubeconfig = path.join(work, "kubeconfig");
  fs.writeFileSync(kubeconfig, kube.kubeconfig("soak-token"));
  const kubeArgs = !o.kube ? [] : [`--kubeconfig=${kubeconfig}`, `--node-name=${KUBE_NODE}`, `--node-condition=${KUBE_CONDITION}`, `--node-taint=${KUBE_TAINT}:NoSchedule`, "--node-taint-mode=continuous"];

  const common = ["--http-endpoint=127.0.0.1:0", `--path.procfs=${lnet.node.procfs}`, `--path.sysfs=${lnet.node.sysfs}`, `--check-interval=${o.checkIntervalMs}ms`, `--health-interval=${o.checkIntervalMs}ms`, `--server-ping-interval=${Math.max(1000, o.checkIntervalMs)}ms`, `--kubelet-dir=${path.join(work, "kubelet")}`, "--log-level=info"];
  const a = new GatewayProc({ name: "node", root, socket: path.join(work, "a.sock"), env: lnet.env(), heapMiB: 48, args: [`--csi-endpoint=unix://${path.join(work, "a.sock")}`, `--plugins-dir=${dirA.dir}`, ...kubeArgs, ...common] }, t0);
  const stuckArgs = [`--operation-stuck-after=${STUCK_AFTER_MS}ms`, `--unstick-after=${UNSTICK_AFTER_MS}ms`, ...(o.unstick ? ["--unstick=unmount"] : [])];
  const b = new GatewayProc({ name: "gateway", root, socket: path.join(work, "b.sock"), env: { ...lnet.env(), FAKE_NODE_DIR: lnet.node.dir }, heapMiB: 48, args: [`--csi-endpoint=unix://${path.join(work, "b.sock")}`, `--plugins-dir=${dirB.dir}`, `--upstream=unix://${driverSocket}`, ...stuckArgs, ...common] }, t0);
  // Interrupted (^C, SIGTERM): take the gateways and the driver down too, and
  // the commands they left hanging with them, rather than leave them running.
  const onSignal = (sig: NodeJS.Signals) => {
    log(`${sig}: stopping the gateways and the driver; no report`);
    for (const c of [a.child, b.child, driver]) c?.kill("SIGKILL");
    lnet.cleanup();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  await a.start();
  await b.start();
  // Restarts keep the port, so clients and the report follow one address.
  for (const g of [a, b]) g.spec.args = g.spec.args.map((x) => (x === "--http-endpoint=127.0.0.1:0" ? `--http-endpoint=${g.http}` : x));
  log(`node-mode gateway pid ${a.pid} on ${a.http}, gateway-mode pid ${b.pid} on ${b.http}`);

  // Readiness bounds: see the README's Reliability section for the reasoning.
  const sourceWorst = SOURCE_DEFAULTS.commandTtlMs + SOURCE_DEFAULTS.commandTimeoutMs + SOURCE_DEFAULTS.pingTimeoutMs;
  const bounds: OracleBounds = {
    checkMs: o.checkIntervalMs + sourceWorst + o.graceMs,
    upstreamMs: 1_000 + 3_000 + o.graceMs,
    recoverMs: o.checkIntervalMs + SOURCE_DEFAULTS.pingTtlMs + SOURCE_DEFAULTS.pingTimeoutMs + SOURCE_DEFAULTS.commandTimeoutMs + SOURCE_DEFAULTS.commandTtlMs + o.graceMs,
  };
  let lnetSince = t0;
  const lnetCauses = (): Cause[] => (lnet.state === "healthy" ? [] : [{ what: `lnet:${lnet.state}`, since: lnetSince }]);
  const targetA: Target = { proc: a, oracle: new ReadinessOracle("node", bounds, t0), causes: () => [...lnetCauses(), ...churnA.causes()] };
  const upstreamCauses = (): Cause[] => (driverDownSince !== undefined ? [{ what: "upstream:down", since: driverDownSince }] : []);
  // Gateway mode runs with the default --probe-ready=upstream: Probe (on the
  // socket, and over Connect/gRPC-Web on the port) follows the driver and the
  // liveness checks, so a readiness loss never restarts the driver; readiness
  // shows in /readyz and gRPC health. Each observer is held to what it promises.
  const probeObservers = new Set(["probe-unix", "connect-json", "grpc-web"]);
  const targetB: Target = {
    proc: b,
    oracle: new ReadinessOracle("gateway", bounds, t0),
    causes: (obs) => (probeObservers.has(obs) ? upstreamCauses() : [...lnetCauses(), ...churnB.causes()]),
  };
  // A stuck episode: log what the gateway itself says is failing, so the episode can be explained.
  for (const t of [targetA, targetB]) {
    t.oracle.onStuck = (observer) => {
      const req = http.get({ host: "127.0.0.1", port: t.proc.port, path: "/readyz?verbose", agent: false, timeout: 5_000 }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => log(`${t.proc.spec.name} stuck not ready (${observer}); /readyz?verbose says:\n${body.split("\n").filter((l) => !l.includes("[+]")).join("\n").slice(0, 4000)}`));
      });
      req.on("error", (e) => log(`${t.proc.spec.name} stuck not ready (${observer}); /readyz?verbose failed: ${e.message}`));
    };
  }
  const noteAll = () => {
    const now = Date.now();
    targetA.oracle.note(targetA.causes("probe-unix"), now);
    targetB.oracle.note([...targetB.causes("probe-unix"), ...targetB.causes("readyz")], now);
  };

  // Wait for the node-mode gateway to say ready before the faults begin.
  for (let i = 0; i < 120; i++) {
    const r = await grpcUnary({ socketPath: a.spec.socket }, PROBE_PATH, new Uint8Array(), { timeoutMs: 3000, capMs: 5000 });
    if (r.kind === "ok" && r.message.length >= 4 && r.message[3] === 1) break;
    await sleep(500);
  }
  const startedAt = Date.now();
  end = startedAt + o.durationMs;
  noteAll();

  // Storage/volume health bounds: a round, the command cache and timeout, the grace; for a hang, also the
  // statfs prober's schedule: a path that answered is probed again only after its interval (30 s), and a
  // probe is called hung after its bound (5 s), so a new hang shows within interval + bound.
  const healthBounds: HealthBounds = {
    detectMs: o.checkIntervalMs + SOURCE_DEFAULTS.commandTtlMs + SOURCE_DEFAULTS.commandTimeoutMs + o.graceMs,
    hungMs: STATFS_DEFAULTS.intervalMs + STATFS_DEFAULTS.boundMs + o.checkIntervalMs + SOURCE_DEFAULTS.commandTtlMs + o.graceMs,
    recoverMs: 2 * o.checkIntervalMs + SOURCE_DEFAULTS.commandTtlMs + SOURCE_DEFAULTS.commandTimeoutMs + o.graceMs,
    // The gateway pings each server once per check interval (--server-ping-interval below); a ping is
    // waited for 3 s at most and may take its 5 s timeout: one more interval, the wait and the timeout.
    pingMs: Math.max(1000, o.checkIntervalMs) + SERVER_PING_DEFAULTS.waitMs + SERVER_PING_DEFAULTS.timeoutSeconds * 1000,
  };
  const healthOracle = new HealthOracle(healthBounds, t0);
  let lustreQuietSince: number | undefined = t0;
  /** Since when lctl has been on PATH (the LNet fault "missing" takes it off); undefined while it is not. */
  let lctlSince: number | undefined = t0;
  const rec = new Recorder(t0, o.windowMs, o.slackMs);
  const loops = new Loops();
  const connect = new ConnectClients();
  const fwd = new Forwarder(targetB);
  const hz = (perSec: number) => 1000 / (perSec * o.rate);
  const events = { node: 0, gateway: 0 };
  for (const t of [targetA, targetB]) {
    const n = t.proc.spec.name;
    const skip = (k: string) => () => rec.skipped(k);
    loops.every(hz(10), 50, () => probeUnix(t, rec), skip("probe-unix-newconn"));
    loops.every(hz(3), 20, () => healthTcp(t, rec), skip("health-tcp-newconn"));
    loops.every(hz(2), 20, () => httpGet(t, rec, "/readyz"), skip("readyz-http1"));
    loops.every(hz(2), 20, () => httpGet(t, rec, "/healthz"), skip("healthz-http1"));
    loops.every(hz(2), 20, () => connect.probe(t, rec, "connect-json"), skip("connect-json-probe"));
    loops.every(hz(1), 20, () => connect.probe(t, rec, "grpc-web"), skip("grpc-web-probe"));
    loops.every(hz(0.5), 10, () => connect.reflection(t, rec), skip("reflection-grpc"));
    void n;
  }
  for (const m of fwd.methods()) loops.every(hz(1), 30, () => fwd.call(rec, m), () => rec.skipped(`forward-${m}`));

  // kubelet 1.37's health calls (every minute in a real kubelet; here a few a second), on both gateways;
  // the invariants are checked on the node-mode gateway, whose faults the soak drives.
  const healthA = new HealthCalls(targetA);
  const healthB = new HealthCalls(targetB);
  const volumes = lustre?.volumes ?? [{ id: "lustrefs/vol-steady", target: path.join(work, "kubelet/pods/p/volumes/kubernetes.io~csi/pv-steady/mount"), hangs: false }];
  loops.every(hz(2), 20, () => healthA.storage(rec, (at, entries) => lustre && healthOracle.storage(at, entries, lustre, lctlSince, lustreQuietSince)), () => rec.skipped("node-storage-health"));
  loops.every(hz(1), 20, () => healthB.storage(rec), () => rec.skipped("gateway-storage-health"));
  for (const v of volumes) {
    loops.every(hz(2), 20, () => healthA.volume(rec, v.id, v.target, (at, entries) => {
      if (!lustre) return;
      const hungSince = v.hangs && lustre.state === "mount-hung" ? lustre.since : undefined;
      healthOracle.volume(at, v.id, entries, hungSince, lustreQuietSince, lctlSince);
    }), () => rec.skipped("node-volume-health"));
  }
  loops.every(hz(1), 20, () => healthB.volume(rec, "soak-vol", "/var/lib/kubelet/pods/p/volumes/v/mount"), () => rec.skipped("gateway-volume-health"));

  // Faults: LNet tools, plugin directories, the upstream driver.
  const faults: Record<string, number> = {};
  const bump = (k: string) => (faults[k] = (faults[k] ?? 0) + 1);
  loops.schedule(
    () => rng.between(...o.faultDwellMs),
    () => {
      const was = lnet.state;
      const s = lnet.step();
      lnetSince = Date.now();
      if (s === "missing") lctlSince = undefined;
      else if (was === "missing") lctlSince = Date.now();
      if (s !== "healthy") bump(`lnet-${s}`);
      events.node++;
      events.gateway++;
      noteAll();
    },
  );
  loops.schedule(
    () => rng.between(...o.churnEveryMs),
    () => {
      const x = churnA.step(Date.now());
      if (x !== "none") {
        bump(`plugins-plain-${x}`);
        events.node++;
      }
      noteAll();
    },
  );
  loops.schedule(
    () => rng.between(...o.churnEveryMs),
    () => {
      const x = churnB.step(Date.now());
      if (x !== "none") {
        bump(`plugins-configmap-${x}`);
        events.gateway++;
      }
      noteAll();
    },
  );
  loops.schedule(
    () => (driverDownSince === undefined ? rng.between(...o.upstreamUpMs) : rng.between(...o.upstreamDownMs)),
    async () => {
      if (driverDownSince === undefined) {
        driverDownSince = Date.now();
        driver?.kill("SIGKILL");
        driverKills++;
        bump("upstream-kill");
        events.gateway++;
      } else {
        await startDriver();
        bump("upstream-restart");
      }
      noteAll();
    },
  );

  if (lustre) loops.schedule(
    () => rng.between(...o.faultDwellMs),
    () => {
      const s = lustre.step();
      lustreQuietSince = s === "healthy" ? Date.now() : undefined;
      if (s !== "healthy") bump(`lustre-${s}`);
      events.node++;
      events.gateway++;
    },
  );

  // Stuck unmounts on the gateway-mode process (issue 41), one episode at a time.
  const stuck = new StuckUnmounts(unmountNode, path.join(work, "kubelet"), targetB, rec, { unstick: o.unstick, graceMs: o.graceMs });
  let stuckEpisodes = 0;
  let stuckRunning: Promise<void> | undefined;
  loops.schedule(
    () => (stuckEpisodes === 0 ? 5_000 : o.stuckEveryMs),
    async () => {
      stuckEpisodes++;
      bump("stuck-unmount");
      events.gateway++;
      stuckRunning = stuck.episode(() => loops.stopped || Date.now() >= end);
      await stuckRunning;
    },
  );

  let kubeDown = false;
  if (o.kube) loops.schedule(
    () => (kubeDown ? rng.between(5_000, 20_000) : rng.between(20_000, 60_000)),
    async () => {
      events.node++;
      if (kubeDown) {
        await kube.accept();
        kubeDown = false;
        return;
      }
      const r = rng.next();
      if (r < 0.35) {
        kube.failNext(rng.int(5, 30), { status: 500 });
        bump("kube-api-500");
      } else if (r < 0.7) {
        kube.failNext(rng.int(5, 30), { status: 429, retryAfter: "2" });
        bump("kube-api-429-throttle");
      } else {
        await kube.refuse();
        kubeDown = true;
        bump("kube-api-down");
      }
    },
  );
  // The fake keeps a record of every request; the soak needs none of it.
  loops.every(10_000, 1, async () => void kube.requests.splice(0), () => {});

  // Crashes: counted by GatewayProc; restart so the run goes on.
  for (const g of [a, b]) {
    g.onCrash = () => {
      log(`${g.spec.name} gateway crashed; restarting`);
      bump(`crash-restart-${g.spec.name}`);
      if (!loops.stopped) void g.start().catch((e) => log(`restart failed: ${(e as Error).message}`));
    };
  }

  // Saturating bursts: closed-loop Probes on kept TCP connections and new unix connections.
  let bursts = 0;
  loops.schedule(
    () => (bursts === 0 ? Math.min(o.burstEveryMs / 2, 60_000) : o.burstEveryMs),
    async () => {
      bursts++;
      events.node++;
      bump("burst");
      const until = Date.now() + o.burstMs;
      const sessions = Array.from({ length: 4 }, () => connectSession({ host: "127.0.0.1", port: a.port }));
      const worker = async (fn: () => Promise<void>) => {
        while (Date.now() < until && !loops.stopped) {
          // A closed loop against a gateway that is down would spin on refused connections.
          if (!a.alive() || Date.now() - a.lastCrashAt < 15_000) await sleep(200);
          else await fn();
        }
      };
      const tcpProbe = (i: number) => async () => {
        const s = sessions[i % 4];
        if (s.destroyed || s.closed) {
          // The gateway cut the connection (a crash, or an edge limit): a kept-alive client reconnects, after a pause.
          await sleep(200);
          if (sessions[i % 4] === s) sessions[i % 4] = connectSession({ host: "127.0.0.1", port: a.port });
          return;
        }
        const { r, outage } = await (async () => {
          const starts = a.starts;
          const r = await grpcUnary(s, PROBE_PATH, new Uint8Array(), { timeoutMs: 3000, capMs: 30_000 });
          return { r, outage: a.starts !== starts || !a.alive() || Date.now() - a.lastCrashAt < 15_000 };
        })();
        rec.record("burst-probe-tcp", { outcome: r.kind === "ok" ? "ok" : r.kind === "status" ? "clean-error" : r.kind === "hung" ? "lost" : "broken", detail: r.kind === "transport" ? r.error : undefined, ms: r.ms, deadlineMs: 3000, outage });
      };
      await Promise.all([
        ...Array.from({ length: 64 }, (_, i) => worker(tcpProbe(i))),
        ...Array.from({ length: 16 }, () => worker(() => probeUnix(targetA, rec, "burst-probe-unix-newconn"))),
      ]);
      for (const s of sessions) s.destroy();
    },
  );

  // Connection floods on the node-mode gateway's port (and socket, but for the
  // HTTP/1.1 trickle), one kind at a time in turn: the probe traffic above
  // runs on through them and is held to the same invariants.
  let floods = 0;
  loops.schedule(
    () => (floods === 0 ? o.floodEveryMs / 2 : o.floodEveryMs),
    async () => {
      const mode = FLOOD_MODES[floods++ % FLOOD_MODES.length]!;
      events.node++;
      bump(`flood-${mode}`);
      const count = mode === "malformed" ? 300 : 1000;
      const running = [startFlood(mode, `127.0.0.1:${a.port}`, count), ...(mode === "trickle" ? [] : [startFlood(mode, a.spec.socket, count)])];
      await sleep(o.floodMs);
      for (const f of running) f.stop();
    },
  );

  // The long fuzz: rounds of fresh seeds against the node-mode gateway's port and socket.
  const fuzzTotals: FuzzStats = { cases: {}, endings: {}, violations: [] };
  let fuzzRounds = 0;
  const fuzzLoop = (async () => {
    if (!o.fuzz) return;
    await sleep(5_000);
    const kinds: FuzzKind[][] = [["h1-random", "h2-request"], ["h2-frames"], ["h1-split", "h2-split"]];
    while (!loops.stopped && Date.now() < end) {
      const kindsNow = kinds[fuzzRounds % kinds.length];
      const f = new EdgeFuzzer({ host: "127.0.0.1", port: a.port, socket: a.spec.socket }, { seed: o.seed * 1000 + fuzzRounds, cases: 40, kinds: kindsNow, splitPositions: 24, until: end, deadlineMs: 5_000 });
      const starts = a.starts;
      const s = await f.run();
      fuzzRounds++;
      for (const [k, v] of Object.entries(s.cases)) fuzzTotals.cases[k] = (fuzzTotals.cases[k] ?? 0) + v;
      for (const [k, v] of Object.entries(s.endings)) fuzzTotals.endings[k] = (fuzzTotals.endings[k] ?? 0) + v;
      // A control Probe that failed because the gateway was restarting is the crash's, counted there.
      const outage = a.starts !== starts || !a.alive();
      for (const v of s.violations) if (!(outage && v.what === "unresponsive") && fuzzTotals.violations.length < 200) fuzzTotals.violations.push(v);
      await sleep(1_000);
    }
  })();

  // Sampling.
  loops.every(o.sampleEveryMs, 1, async () => {
    const now = Date.now();
    const samples = [a, b].map((g) => [g, g.takeSample(now)] as const);
    await Promise.all(samples.map(([g, s]) => s && g.addV8(s)));
  }, () => {});
  let lastProgress = Date.now();
  loops.every(1000, 1, async () => {
    if (Date.now() - lastProgress >= 60_000) {
      lastProgress = Date.now();
      const t = rec.totals();
      log(`${t.sent} requests, ${t.violations} request violations, readiness violations ${targetA.oracle.violationCount + targetB.oracle.violationCount}, lnet ${lnet.state}, RSS ${a.samples.at(-1)?.rssMiB.toFixed(1)}/${b.samples.at(-1)?.rssMiB.toFixed(1)} MiB`);
    }
  }, () => {});

  await sleep(Math.max(0, end - Date.now()));
  log("duration reached; draining in-flight requests");
  loops.stop();
  await Promise.race([Promise.allSettled([...loops.inflight]), sleep(35_000)]);
  await fuzzLoop;
  await stuckRunning;
  stuck.close();
  fwd.close();
  healthA.close();
  healthB.close();
  lustre?.release();
  // Once the API server is back for good, the Node condition must come to match the verdict.
  if (kubeDown) await kube.accept();
  kube.clearFaults();
  const kubeConverged = o.kube ? await nodeConditionConverges(kube, a.http, 60_000) : { converged: true, ms: 0 };
  const finishedAt = Date.now();
  // Shutdown is part of the check: SIGTERM must exit 0.
  const exitCodes: Record<string, number | null> = {};
  for (const g of [a, b]) {
    const child = g.child!;
    const code = new Promise<number | null>((r) => (child.exitCode !== null ? r(child.exitCode) : child.once("exit", (c) => r(c))));
    await g.stop();
    exitCodes[g.spec.name] = await code;
  }
  driver?.kill("SIGKILL");
  await kube.close();
  lag.disable();
  process.off("unhandledRejection", onUnhandled);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  lnet.cleanup();
  fs.rmSync(work, { recursive: true, force: true });

  return buildReport({
    o,
    t0,
    startedAt,
    finishedAt,
    rec,
    gateways: [
      { proc: a, oracle: targetA.oracle, events: events.node, exitCode: exitCodes.node },
      { proc: b, oracle: targetB.oracle, events: events.gateway, exitCode: exitCodes.gateway },
    ],
    bounds,
    faults,
    churn: { plain: churnA.actions, configmap: { ...churnB.actions, swaps: dirB.swaps } },
    lnetInjected: { ...lnet.injected, ...Object.fromEntries(Object.entries(lustre?.injected ?? {}).map(([k, v]) => [`lustre-${k}`, v])) },
    health: healthOracle,
    upstream: { kills: driverKills, starts: driverStarts },
    stuck: stuck.counts,
    bursts,
    kube: kubeConverged,
    fuzz: { rounds: fuzzRounds, ...fuzzTotals },
    driver: { unhandled: driverUnhandled, lagP99Ms: lag.percentile(99) / 1e6, lagMaxMs: lag.max / 1e6 },
  });
}

if (isMain(import.meta.url)) {
  const root = repoRoot();
  let opts: SoakOptions | "help";
  try {
    opts = parseOptions(process.argv.slice(2), root);
  } catch (e) {
    process.stderr.write(`soak: ${(e as Error).message}\n`);
    process.exit(2);
  }
  if (opts === "help") {
    process.stdout.write(USAGE + "\n");
    process.exit(0);
  }
  const o = opts;
  runSoak(o).then(
    (report) => {
      const files = writeReport(report, o.outDir, o.name);
      process.stdout.write(report.markdown + "\n");
      process.stderr.write(`soak: wrote ${files.join(", ")}\n`);
      process.exit(report.summary.violations === 0 ? 0 : 1);
    },
    (e) => {
      process.stderr.write(`soak: ${(e as Error).stack ?? e}\n`);
      process.exit(3);
    },
  );
}
