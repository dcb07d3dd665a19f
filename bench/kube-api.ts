// Node reporting's cost to the API server (issue #12): one node's API
// requests and bytes per hour in a steady state and in a storm of a check
// flipping every 2 s, extrapolated to 5,000 nodes; and probegate's RSS and heap
// with the feature on and off, side by side per runtime, after start and after
// 200k Probes (KUBE_BENCH_PROBES). Run: `npm run build && node dist/bench/kube-api.js`
// (about 6 minutes; KUBE_BENCH_ONLY=memory for the memory rows alone;
// KUBE_BENCH_NODE24=/path/to/node adds Node 24's rows, KUBE_BENCH_PEER=/path
// to a built checkout of the old client adds its rows). The API server is the tests' fake (same semantics, plain
// HTTP: bytes are HTTP bodies plus headers, without TLS framing).
//
// The steady state is time-scaled: every reporting timing (heartbeat 5m,
// watch renewal 5m, kubelet's own status report 5m) is divided by SCALE, the
// run lasts STEADY_S, and counts are scaled back to one real hour. The storm
// runs in real time with the default timings.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { FakeKubeApi, type RequestRecord } from "../gateway/test/helpers/fake-kube-api.js";
import { PROBEGATE_NODE_ENV } from "./lib/launch.js";
import { isMain } from "./lib/main.js";
import { resolveNode24 } from "./lib/node24.js";
import { repoRoot } from "./lib/paths.js";
import { rssBytes } from "./lib/proc.js";

const root = repoRoot();
const SCALE = 50;
const STEADY_S = Number(process.env.KUBE_BENCH_STEADY_S ?? 60);
const ONLY_MEMORY = process.env.KUBE_BENCH_ONLY === "memory";
const STORM_S = Number(process.env.KUBE_BENCH_STORM_S ?? 60);
const NODES = 5000;
const COND = "azurelustre.csi.azure.com/NodeReady";
const TAINT = "azurelustre.csi.azure.com/agent-not-ready:NoSchedule";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function fakeNodeDir(): { env: NodeJS.ProcessEnv; dir: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-kube-bench-"));
  fs.cpSync(path.join(root, "gateway/demo/scenarios/healthy"), dir, { recursive: true });
  // The compiled fake lnetctl/lctl: the Node.js demo fakes would cost more CPU than everything measured here.
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin);
  const cc = spawnSync("cc", ["-O2", "-o", path.join(bin, "lnetctl"), path.join(root, "bench/fixtures/fake-lnet.c")], { encoding: "utf8" });
  const pathPrefix = cc.status === 0 ? bin : path.join(root, "gateway/demo/bin");
  if (cc.status === 0) fs.copyFileSync(path.join(bin, "lnetctl"), path.join(bin, "lctl"));
  return { dir, env: { ...process.env, PATH: `${pathPrefix}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: dir } };
}

/** How probegate is started: the image's node flags (48 MiB old space), on this checkout and Node unless told otherwise. */
interface Launch {
  node: string;
  root: string;
  oldSpaceMiB: number;
}
const HERE: Launch = { node: process.execPath, root, oldSpaceMiB: 48 };

async function start(args: string[], env: NodeJS.ProcessEnv, dir: string, launch: Launch = HERE): Promise<{ child: ChildProcess; http: string }> {
  const child = spawn(
    launch.node,
    [
      "--no-node-snapshot",
      "--no-maglev",
      "--max-semi-space-size=1",
      `--max-old-space-size=${launch.oldSpaceMiB}`,
      path.join(launch.root, "bin/probegate.js"),
      `--csi-endpoint=unix://${path.join(dir, "csi.sock")}`,
      "--http-endpoint=127.0.0.1:0",
      `--plugins-dir=${path.join(launch.root, "dist/plugins")}`,
      `--path.procfs=${path.join(dir, "proc")}`,
      `--path.sysfs=${path.join(dir, "sys")}`,
      "--driver-name=azurelustre.csi.azure.com",
      "--log-level=info",
      ...args,
    ],
    { env: { ...env, ...PROBEGATE_NODE_ENV }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let err = "";
  const http = await new Promise<string>((resolve, reject) => {
    child.stderr!.on("data", (d) => {
      err += d;
      const m = /"httpEndpoint":"([^"]+)"/.exec(err);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (c) => reject(new Error(`probegate exited ${c}: ${err}`)));
  });
  return { child, http };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const done = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await done;
}

interface Tally {
  requests: number;
  bytes: number;
  byKind: Record<string, number>;
}

function tally(recs: RequestRecord[]): Tally {
  const byKind: Record<string, number> = {};
  let bytes = 0;
  for (const r of recs) {
    const kind = `${r.watch ? "WATCH" : r.method} ${r.path.replace(/\/node-a\b/, "/{node}").replace(/\/events\/.*/, "/events/{name}")}`;
    byKind[kind] = (byKind[kind] ?? 0) + 1;
    bytes += r.bytesIn + r.bytesOut;
  }
  return { requests: recs.length, bytes, byKind };
}

async function until(f: () => boolean, ms = 30_000): Promise<void> {
  const t0 = Date.now();
  while (!f()) {
    if (Date.now() - t0 > ms) throw new Error("timed out");
    await sleep(50);
  }
}

/** Requests in [t0, t1), with the watch streams' bytes counted at the end (they are open the whole time). */
async function measure(opts: { args: string[]; kubeletMs: number; seconds: number; storm: boolean }): Promise<{ tally: Tally; seconds: number }> {
  const api = await new FakeKubeApi({ tokens: { t: "node-a" } }).start();
  // 40 images: a Node object of about 12 KB, as on a typical worker.
  api.addNode("node-a", { taints: [{ key: TAINT.split(":")[0]!, effect: "NoSchedule" }], images: 40 });
  api.setCSINode("node-a", ["azurelustre.csi.azure.com"]);
  api.startKubelet("node-a", opts.kubeletMs);
  const node = fakeNodeDir();
  const kc = path.join(node.dir, "kubeconfig");
  fs.writeFileSync(kc, api.kubeconfig("t"));
  const gw = await start([`--kubeconfig=${kc}`, "--node-name=node-a", ...opts.args], node.env, node.dir);
  try {
    await until(() => api.condition("node-a", COND)?.status === "True" && api.taints("node-a").length === 0);
    nodeSize = api.node("node-a");
    await sleep(1000);
    const t0 = Date.now();
    const from = api.requests.length;
    const watchBytesAtStart = new Map(api.requests.filter((r) => r.watch).map((r) => [r, r.bytesOut]));
    let flips = 0;
    const opstate = path.join(node.dir, "sys/class/net/eth0/operstate");
    while (Date.now() - t0 < opts.seconds * 1000) {
      if (opts.storm) {
        fs.writeFileSync(opstate, flips % 2 === 0 ? "down\n" : "up\n");
        flips++;
        await sleep(2000);
      } else await sleep(500);
    }
    fs.writeFileSync(opstate, "up\n");
    const seconds = (Date.now() - t0) / 1000;
    const recs = api.requests.slice(from);
    // Watches opened before the window: only their bytes within it.
    const t = tally(recs);
    for (const [r, b] of watchBytesAtStart) t.bytes += r.bytesOut - b;
    return { tally: t, seconds };
  } finally {
    await stop(gw.child);
    await api.close();
    fs.rmSync(node.dir, { recursive: true, force: true });
  }
}

interface MemRow {
  label: string;
  reporting: boolean;
  startRss: number;
  startHeap: number;
  endRss: number;
  endHeap: number;
}

async function heapUsedMiB(http: string): Promise<number> {
  const metrics = await (await fetch(`http://${http}/metrics`)).text();
  return Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(metrics)?.[1] ?? NaN) / 1048576;
}

/** `count` Probes over keep-alive HTTP/1.1, `concurrency` at a time (kubelet's pattern, many times over). */
async function probes(httpEndpoint: string, count: number, concurrency = 16): Promise<void> {
  const [host, port] = [httpEndpoint.slice(0, httpEndpoint.lastIndexOf(":")), Number(httpEndpoint.slice(httpEndpoint.lastIndexOf(":") + 1))];
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  let sent = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.request({ host, port, path: "/csi.v1.Identity/Probe", method: "POST", agent, headers: { "content-type": "application/json", "content-length": 2 } }, (res) => {
        res.resume();
        res.on("end", resolve);
      });
      req.on("error", reject);
      req.end("{}");
    });
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < count) {
        sent++;
        await one();
      }
    }),
  );
  agent.destroy();
}

/** RSS and heap after start and after `count` Probes, with reporting off or on (against a fake API server). */
async function memoryRow(label: string, launch: Launch, reporting: boolean, count: number): Promise<MemRow> {
  const api = reporting ? await new FakeKubeApi({ tokens: { t: "node-a" } }).start() : undefined;
  api?.addNode("node-a", { images: 40 });
  const node = fakeNodeDir();
  const kc = path.join(node.dir, "kubeconfig");
  if (api) fs.writeFileSync(kc, api.kubeconfig("t", { insecure: launch.root !== root }));
  const args = api ? [`--kubeconfig=${kc}`, "--node-name=node-a", "--node-condition", COND, "--node-taint", TAINT] : [];
  const gw = await start(args, node.env, node.dir, launch);
  try {
    if (api) {
      await until(() => api.condition("node-a", COND)?.status === "True", 60_000).catch(() => {
        throw new Error(`${label}: no condition written in 60 s (requests: ${JSON.stringify(tally(api.requests).byKind)})`);
      });
    } else await sleep(2000);
    await sleep(1000);
    const startRss = rssBytes(gw.child.pid!) / 1048576;
    const startHeap = await heapUsedMiB(gw.http);
    await probes(gw.http, count);
    await sleep(2000);
    return { label, reporting, startRss, startHeap, endRss: rssBytes(gw.child.pid!) / 1048576, endHeap: await heapUsedMiB(gw.http) };
  } finally {
    await stop(gw.child);
    await api?.close();
    fs.rmSync(node.dir, { recursive: true, force: true });
  }
}

/**
 * Reporting off and on side by side, per runtime (this Node, and Node 24 where
 * KUBE_BENCH_NODE24 names its binary), and the old client's figures where
 * KUBE_BENCH_PEER names a checkout of the commit before this client (it needs
 * a 96 MiB old space: it refused to start under 90).
 */
async function memory(): Promise<string> {
  const count = Number(process.env.KUBE_BENCH_PROBES ?? 200_000);
  const runtimes = [{ bin: process.execPath, version: process.version }];
  if (process.env.KUBE_BENCH_NODE24) {
    const node24 = resolveNode24(process.env.KUBE_BENCH_NODE24);
    if (node24 && "error" in node24) throw new Error(`KUBE_BENCH_NODE24: ${node24.error}`);
    if (node24) runtimes.push(node24);
  }
  const peer = process.env.KUBE_BENCH_PEER;
  const lines = [
    `| runtime | client | reporting | RSS after start | RSS after ${count.toLocaleString("en-US")} Probes | heap used after start | heap used after the Probes |`,
    "|---|---|---|---|---|---|---|",
  ];
  for (const { bin, version } of runtimes) {
    process.stderr.write(`memory rows on ${bin}\n`);
    const off = await memoryRow(`${version} | - | off`, { ...HERE, node: bin }, false, count);
    const rows = [off, await memoryRow(`${version} | own (48 MiB old space) | on`, { ...HERE, node: bin }, true, count)];
    if (peer) rows.push(await memoryRow(`${version} | @kubernetes/client-node 1.4 (96 MiB old space) | on`, { node: bin, root: peer, oldSpaceMiB: 96 }, true, count));
    for (const r of rows) {
      const d = (a: number, b: number) => (r.reporting ? ` (${a - b >= 0 ? "+" : ""}${(a - b).toFixed(1)})` : "");
      lines.push(
        `| ${r.label} | ${r.startRss.toFixed(1)}${d(r.startRss, off.startRss)} | ${r.endRss.toFixed(1)}${d(r.endRss, off.endRss)} | ${r.startHeap.toFixed(1)}${d(r.startHeap, off.startHeap)} | ${r.endHeap.toFixed(1)}${d(r.endHeap, off.endHeap)} |`,
      );
    }
  }
  lines.push("", "MiB; in parentheses: on minus off on the same runtime in this run. Targets: RSS on ≤ off + 6 MiB, heap on ≤ off + 4 MiB.");
  return lines.join("\n");
}

const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1));
const mib = (b: number) => (b / 1048576 >= 100 ? Math.round(b / 1048576).toLocaleString("en-US") : (b / 1048576).toFixed(2));

let nodeSize: unknown = {};
async function main(): Promise<void> {
  const flags = ["--node-condition", COND, "--node-taint", TAINT];
  if (ONLY_MEMORY) {
    process.stdout.write((await memory()) + "\n");
    return;
  }
  const s = (ms: number) => `${Math.max(1, Math.round(ms / SCALE))}ms`;
  const steady = await measure({
    args: [...flags, "--check-interval=1s", `--node-heartbeat=${s(300_000)}`, `--node-resync=${Math.max(1, Math.round(300 / SCALE))}s`, `--node-write-interval=${s(10_000)}`],
    kubeletMs: 300_000 / SCALE,
    seconds: STEADY_S,
    storm: false,
  });
  const storm = await measure({ args: [...flags, "--check-interval=1s", "--node-taint-mode=continuous"], kubeletMs: 300_000, seconds: STORM_S, storm: true });
  const perHour = (m: { tally: Tally; seconds: number }, scale: number) => ({
    requests: (m.tally.requests * 3600) / (m.seconds * scale),
    bytes: (m.tally.bytes * 3600) / (m.seconds * scale),
  });
  const st = perHour(steady, SCALE);
  const sm = perHour(storm, 1);
  const lines = [
    `| one node, per hour | requests | bytes | 5,000 nodes: requests/s | 5,000 nodes: MiB/h |`,
    `|---|---|---|---|---|`,
    `| steady state (heartbeat 5m, watch renewed every 5m, kubelet reporting every 5m) | ${fmt(st.requests)} | ${mib(st.bytes)} MiB | ${fmt((st.requests * NODES) / 3600)} | ${mib(st.bytes * NODES)} |`,
    `| a check flipping every 2 s (continuous taint, Events) | ${fmt(sm.requests)} | ${mib(sm.bytes)} MiB | ${fmt((sm.requests * NODES) / 3600)} | ${mib(sm.bytes * NODES)} |`,
    "",
    `steady requests in the window (${steady.seconds.toFixed(0)} s × ${SCALE}): ${JSON.stringify(steady.tally.byKind)}`,
    `storm requests in ${storm.seconds.toFixed(0)} s: ${JSON.stringify(storm.tally.byKind)}`,
    `Node object: ${(JSON.stringify(nodeSize).length / 1024).toFixed(1)} KiB`,
    "",
    await memory(),
  ];
  process.stdout.write(lines.join("\n") + "\n");
}

if (isMain(import.meta.url)) {
  main().then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`${err.stack ?? err}\n`);
      process.exit(1);
    },
  );
}
