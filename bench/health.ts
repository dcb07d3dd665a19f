// Storage and volume health (issue #30), measured on running gateways:
//   rpc     NodeGetStorageHealth and NodeGetVolumeHealth against Probe in the same
//           run, on the same gateway and connection: client latency (p50/p99) and
//           the gateway's CPU per call (schedstat of its threads over the window);
//   rounds  the gateway's CPU for one evaluation round (storage check + every
//           volume) with 0, 1, 8 and 64 mounted volumes on 64 OSTs and 1 and 8
//           on 1,000 (ROUND_ROWS), the children's CPU (fake tools, statfs
//           probes) beside it, and RSS: 64 volumes against none.
// The node is the demo's fake Lustre client (gateway/demo/bin, rendered by
// gateway/demo/lib/fake-lustre.js) with a mount table that lists the volumes
// under a kubelet directory made here (vol_data.json beside each mount, so the
// gateway rediscovers them as after a restart). Run:
//   npm run build && node dist/bench/health.js [rpc,rounds]
//   node dist/bench/health.js rss PEER_ROOT   (RSS, 64 volumes against none, this build against another)
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { grpcFrame, PROBE_PATH } from "./lib/grpc.js";
import { isMain } from "./lib/main.js";
import { repoRoot } from "./lib/paths.js";
import { cpuSample, rssBytes, spawnerRssBytes } from "./lib/proc.js";
import { PROBEGATE_NODE_ENV, PROBEGATE_NODE_FLAGS } from "./lib/launch.js";

const root = repoRoot();
export const STORAGE_PATH = "/csi.v1.Node/NodeGetStorageHealth";
export const VOLUME_PATH = "/csi.v1.Node/NodeGetVolumeHealth";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- hand-encoded requests (proto3 wire format: tag, length, bytes) ----

function lengthDelimited(field: number, value: string): Buffer {
  const bytes = Buffer.from(value, "utf8");
  const varint: number[] = [];
  let n = bytes.length;
  do {
    varint.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...varint]), bytes]);
}

/** NodeGetVolumeHealthRequest { volume_id = 1; volume_publish_path = 2; staging_target_path = 3 } */
export function volumeHealthRequest(volumeId: string, publishPath = "", stagingPath = ""): Buffer {
  return grpcFrame(Buffer.concat([lengthDelimited(1, volumeId), ...(publishPath ? [lengthDelimited(2, publishPath)] : []), ...(stagingPath ? [lengthDelimited(3, stagingPath)] : [])]));
}
/** NodeGetStorageHealthRequest {} (no secrets). */
export const STORAGE_HEALTH_REQUEST = grpcFrame(new Uint8Array());
export const PROBE_REQUEST = grpcFrame(new Uint8Array());

// ---- a node: fake Lustre client, mount table with N volumes ----

export interface FakeNode {
  dir: string;
  kubeletDir: string;
  env: NodeJS.ProcessEnv;
  volumes: Array<{ id: string; target: string }>;
}

export type Renderer = {
  renderImports(d: object): string;
  renderStates(d: object): string;
  renderGetname(d: object): string;
  targetNames(fs: object): string[];
};

export interface NodeShape {
  /**
   * Each volume its own Lustre mount (its own superblock, so its own set of
   * imports), as kubelet mounts every PersistentVolume; otherwise (the
   * default) the volumes are listed in the mount table but the client holds
   * one mount's imports.
   */
  mountPerVolume?: boolean;
  /**
   * State-history entries per import (≤ 16, the kernel's ring). 2 is an
   * import that connected once; an OSC that goes IDLE after 20 s without
   * RPCs and reconnects on the next one fills its ring within minutes.
   */
  history?: number;
}

/** A ring of `n` entries ending FULL: CONNECTING, FULL, IDLE, CONNECTING, FULL, … (an idle-cycling OSC). */
function idleCycle(n: number, since: number): Array<[number, string]> {
  if (n <= 2) return [[since, "CONNECTING"], [since, "FULL"]];
  const words = ["IDLE", "CONNECTING", "FULL"];
  const out: Array<[number, string]> = [];
  for (let i = 0; i < n; i++) out.push([since + i * 30, words[(i + 3 - (n % 3)) % 3]!]);
  return out;
}

export async function fakeNode(volumes: number, osts: number, shape: NodeShape = {}): Promise<FakeNode> {
  const rendererFile = path.join(root, "gateway/demo/lib/fake-lustre.js");
  if (!fs.existsSync(rendererFile)) throw new Error("needs the fake Lustre client (gateway/demo/lib/fake-lustre.js)");
  const r = (await import(pathToFileURL(rendererFile).href)) as Renderer;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-health-bench-"));
  fs.cpSync(path.join(root, "gateway/demo/scenarios/healthy"), dir, { recursive: true });
  const kubeletDir = path.join(dir, "kubelet");
  const mountpoint = "/mnt/lustrefs";
  const since = Math.floor(Date.now() / 1000) - 3600;
  const fsAt = (instance: string, at: string) => {
    const f: Record<string, unknown> = { name: "lustrefs", instance, mountpoint: at, mdts: 1, osts };
    const n = Math.min(16, shape.history ?? 2);
    if (n > 2) f.history = Object.fromEntries(r.targetNames(f).map((t) => [t, idleCycle(n, since)]));
    return f;
  };
  const filesystems = [fsAt("ffff8f0a3b5c9000", mountpoint)];
  const mounts = ["proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0", "/dev/vda1 / ext4 rw,relatime 0 0", `10.0.0.2@tcp:/lustrefs ${mountpoint} lustre rw,flock,lazystatfs 0 0`];
  const vols: FakeNode["volumes"] = [];
  for (let i = 0; i < volumes; i++) {
    const pv = `pv-bench-${i}`;
    const id = `lustrefs/vol-${i}`;
    const target = path.join(kubeletDir, "pods", `0000000${i}-aaaa-4bbb-8ccc-dddddddddddd`, "volumes", "kubernetes.io~csi", pv, "mount");
    fs.mkdirSync(target, { recursive: true });
    fs.writeFileSync(path.join(path.dirname(target), "vol_data.json"), JSON.stringify({ driverName: "lustre.csi.example.com", volumeHandle: id, specVolID: pv }));
    mounts.push(`10.0.0.2@tcp:/lustrefs ${target} lustre rw,flock,lazystatfs 0 0`);
    if (shape.mountPerVolume) filesystems.push(fsAt((0xffff8f0a3b5d0000n + BigInt(i) * 0x1000n).toString(16), target));
    vols.push({ id, target });
  }
  const desc = { version: "2.15", mgsNid: "10.0.0.2@tcp", since, filesystems };
  return { dir, kubeletDir, env: writeClient(r, dir, desc, mounts), volumes: vols };
}

/**
 * What the fake tools read for a Lustre client described by `desc` (fake-lustre.js):
 * the import and state listings, `lfs getname`, the mount table (and the same as
 * mountinfo); the environment that runs them, with a fake `stat`.
 */
export function writeClient(r: Renderer, dir: string, desc: object, mounts: string[]): NodeJS.ProcessEnv {
  fs.writeFileSync(path.join(dir, "imports.out"), r.renderImports(desc));
  fs.writeFileSync(path.join(dir, "import_states.out"), r.renderStates(desc));
  fs.writeFileSync(path.join(dir, "proc/1/mounts"), mounts.join("\n") + "\n");
  // The same table as mountinfo, as a host has it (lfs.getname is kept while its Lustre lines are unchanged).
  const info = mounts.map((m, i) => {
    const [dev, at, type, opts] = m.split(" ");
    return `${30 + i} 1 0:${40 + i} / ${at} rw,relatime shared:${i + 1} - ${type} ${dev} ${opts}`;
  });
  fs.writeFileSync(path.join(dir, "proc/1/mountinfo"), info.join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "getname.out"), r.renderGetname(desc));
  // The volumes are directories of this machine's file system: a fake `stat`
  // answers as a Lustre mount does (statfs type 0xbd00bd0), so the volume
  // checks judge them as on a node instead of reporting NotLustre.
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin, { recursive: true });
  fs.writeFileSync(path.join(bin, "stat"), "#!/bin/sh\necho bd00bd0\n", { mode: 0o755 });
  return { ...process.env, PATH: `${bin}:${path.join(root, "gateway/demo/bin")}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: dir };
}

// ---- the gateway ----

export interface Gw {
  child: ChildProcess;
  pid: number;
  socket: string;
  http: string;
  stop(): Promise<void>;
}

/** Which build to start, and how: this checkout as it ships, or a peer build as it shipped (its own env). */
export interface Launch {
  root: string;
  env: Record<string, string>;
}
export const THIS_BUILD: Launch = { root, env: PROBEGATE_NODE_ENV };

export async function startGateway(node: FakeNode, args: string[], pluginsDir?: string, launch: Launch = THIS_BUILD): Promise<Gw> {
  const socket = path.join(node.dir, "csi.sock");
  const port = await new Promise<number>((res) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => res(p));
    });
  });
  const child = spawn(
    process.execPath,
    [
      ...PROBEGATE_NODE_FLAGS,
      path.join(launch.root, "bin/probegate.js"),
      `--csi-endpoint=unix://${socket}`,
      `--http-endpoint=127.0.0.1:${port}`,
      `--plugins-dir=${pluginsDir ?? path.join(launch.root, "dist/plugins")}`,
      `--path.procfs=${path.join(node.dir, "proc")}`,
      `--path.sysfs=${path.join(node.dir, "sys")}`,
      `--kubelet-dir=${node.kubeletDir}`,
      "--log-level=warn",
      ...args,
    ],
    { env: { ...node.env, ...launch.env }, stdio: ["ignore", "ignore", "pipe"] },
  );
  let err = "";
  child.stderr!.on("data", (d) => (err = (err + d).slice(-4000)));
  const httpAddr = `127.0.0.1:${port}`;
  // A gateway given only health checks has no readiness check and is never
  // ready (NoChecks): for it, up means live.
  const readyPath = pluginsDir === undefined ? "readyz" : "livez";
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`probegate exited: ${err}`);
    try {
      if ((await fetch(`http://${httpAddr}/${readyPath}`)).status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (i > 300) throw new Error(`probegate not ready after 30 s: ${err}`);
    await sleep(100);
  }
  return {
    child,
    pid: child.pid!,
    socket,
    http: httpAddr,
    stop: async () => {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    },
  };
}

// ---- a unary gRPC call over the unix socket ----

export function connect(socket: string): http2.ClientHttp2Session {
  return http2.connect("http://localhost", { createConnection: () => net.connect(socket) });
}

export function call(session: http2.ClientHttp2Session, p: string, body: Buffer): Promise<{ status: string; bytes: number }> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ":method": "POST", ":path": p, "content-type": "application/grpc", te: "trailers" });
    let bytes = 0;
    let status = "";
    req.on("response", (h) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
    });
    req.on("trailers", (t) => (status = String(t["grpc-status"] ?? status)));
    req.on("data", (d: Buffer) => (bytes += d.length));
    req.on("end", () => resolve({ status, bytes }));
    req.on("error", reject);
    req.end(body);
  });
}

export interface RpcRow {
  method: string;
  calls: number;
  p50Us: number;
  p99Us: number;
  /** The gateway's CPU (all its threads) per call, µs. */
  cpuUsPerCall: number;
  responseBytes: number;
  notOk: number;
}

/** `calls` unary calls from `concurrency` workers on one connection: latencies and the gateway `pid`'s CPU per call. */
export async function load(session: http2.ClientHttp2Session, pid: number, method: string, p: string, body: Buffer, calls: number, concurrency: number): Promise<RpcRow> {
  const lat: number[] = [];
  let notOk = 0;
  let bytes = 0;
  let next = 0;
  const c0 = cpuSample(pid);
  const worker = async () => {
    while (next < calls) {
      next++;
      const t = process.hrtime.bigint();
      const r = await call(session, p, body);
      lat.push(Number(process.hrtime.bigint() - t) / 1000);
      if (r.status !== "0") notOk++;
      bytes = r.bytes;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const c1 = cpuSample(pid);
  lat.sort((a, b) => a - b);
  return {
    method,
    calls,
    p50Us: lat[Math.floor(lat.length * 0.5)]!,
    p99Us: lat[Math.floor(lat.length * 0.99)]!,
    cpuUsPerCall: ((c1.sched - c0.sched) * 1e6) / calls,
    responseBytes: bytes,
    notOk,
  };
}

/** The three RPCs in one gateway, interleaved (Probe, storage, volume, three times), on 8 volumes, 64 OSTs, one degraded OST. */
export async function rpcCost(calls = Number(process.env.HEALTH_BENCH_CALLS ?? 20000), concurrency = 8): Promise<RpcRow[]> {
  const node = await fakeNode(8, 64);
  // One OST down, beyond any grace: the answers carry an entry (a non-empty list is the costlier answer).
  const r = (await import(pathToFileURL(path.join(root, "gateway/demo/lib/fake-lustre.js")).href)) as Renderer;
  const desc = { version: "2.15", filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: "/mnt/lustrefs", mdts: 1, osts: 64, states: { OST0003: "DISCONN" } }] };
  fs.writeFileSync(path.join(node.dir, "imports.out"), r.renderImports(desc));
  fs.writeFileSync(path.join(node.dir, "import_states.out"), r.renderStates(desc));
  // Rounds every hour: the windows measure answering, not evaluating (the first round runs at start).
  const gw = await startGateway(node, ["--check-interval=1h"]);
  const session = connect(gw.socket);
  try {
    const vol = node.volumes[3]!;
    const volReq = volumeHealthRequest(vol.id, vol.target);
    // Warm-up, and wait until the volume has been evaluated (an empty first answer is allowed).
    for (let i = 0; i < 50; i++) {
      const res = await call(session, VOLUME_PATH, volReq);
      if (res.bytes > 5 + vol.id.length + 4) break;
      await sleep(100);
    }
    for (const [p, b] of [[PROBE_PATH, PROBE_REQUEST], [STORAGE_PATH, STORAGE_HEALTH_REQUEST], [VOLUME_PATH, volReq]] as const) {
      for (let i = 0; i < 2000; i++) await call(session, p, b);
    }
    const rows: RpcRow[] = [];
    for (let rep = 0; rep < 3; rep++) {
      rows.push(await load(session, gw.pid, "Probe", PROBE_PATH, PROBE_REQUEST, calls, concurrency));
      rows.push(await load(session, gw.pid, "NodeGetStorageHealth", STORAGE_PATH, STORAGE_HEALTH_REQUEST, calls, concurrency));
      rows.push(await load(session, gw.pid, "NodeGetVolumeHealth", VOLUME_PATH, volReq, calls, concurrency));
    }
    // Median of the three repetitions per method.
    const out: RpcRow[] = [];
    for (const m of ["Probe", "NodeGetStorageHealth", "NodeGetVolumeHealth"]) {
      const rs = rows.filter((x) => x.method === m).sort((a, b) => a.cpuUsPerCall - b.cpuUsPerCall);
      out.push(rs[1]!);
    }
    return out;
  } finally {
    session.close();
    await gw.stop();
    fs.rmSync(node.dir, { recursive: true, force: true });
  }
}

// ---- evaluation rounds ----

export interface RoundRow {
  volumes: number;
  osts: number;
  /** Each volume its own mount (its own imports), and state-history entries per import. */
  mountPerVolume: boolean;
  history: number;
  /** Which plugins the gateway ran: the two the target names, or every bundled one. */
  plugins: "health" | "all";
  rounds: number;
  /** The gateway's own CPU per round (all its threads: the sandbox worker too), ms. */
  gatewayMsPerRound: number;
  /** Its children's (fake tools, statfs probes) CPU per round, ms. */
  childrenMsPerRound: number;
  /** Median RSS over the second half of the window: the gateway's plus its command spawner's (memory the node pays for both). */
  rssMiB: number;
  /** The spawner's part of it (median over the same samples). */
  spawnerRssMiB: number;
  /** Bytes of the state listing (`lctl get_param *.state`) and of the import listing the fake prints. */
  statesKiB: number;
  importsKiB: number;
}

async function metricSum(httpAddr: string, name: string, filter: (labels: string) => boolean): Promise<number> {
  const text = await (await fetch(`http://${httpAddr}/metrics`)).text();
  let sum = 0;
  for (const line of text.split("\n")) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m && filter(m[1] ?? "")) sum += Number(m[2]);
  }
  return sum;
}

/** The two checks issue #30's round target is about: the storage check and the volume check. */
export const HEALTH_PLUGINS = ["lustre-imports", "volume-lustre-health"];

export interface RoundOptions extends NodeShape {
  plugins?: "health" | "all";
  /** More gateway flags, e.g. --command-spawner=off. */
  args?: string[];
  /** Another build (rssAgainstPeer); default this one. */
  launch?: Launch;
  seconds?: number;
  intervalS?: number;
}

/**
 * The gateway's CPU per round at the default cadence (5 s: every command is
 * read anew each round, the 2 s command cache having expired), over a window
 * of whole rounds; statfs probes (each path every 30 s) fall in the window as
 * they would on a node, so their share is in the figure.
 */
export async function roundCost(volumes: number, osts: number, o: RoundOptions = {}): Promise<RoundRow> {
  const seconds = o.seconds ?? Number(process.env.HEALTH_BENCH_ROUND_S ?? 30);
  const node = await fakeNode(volumes, osts, o);
  const plugins = o.plugins ?? "health";
  let pluginsDir: string | undefined;
  if (plugins === "health") {
    pluginsDir = path.join(node.dir, "plugins");
    fs.mkdirSync(pluginsDir);
    for (const p of HEALTH_PLUGINS) fs.copyFileSync(path.join((o.launch ?? THIS_BUILD).root, "dist/plugins", `${p}.wasm`), path.join(pluginsDir, `${p}.wasm`));
  }
  const gw = await startGateway(node, [`--check-interval=${o.intervalS ?? 5}s`, ...(o.args ?? [])], pluginsDir, o.launch);
  try {
    const rounds = () => metricSum(gw.http, "probegate_check_runs_total", (l) => l.includes('check="lustre-imports"'));
    // Let the first rounds (discovery, first evaluations, JIT) pass.
    await sleep(12_000);
    const r0 = await rounds();
    const c0 = cpuSample(gw.pid);
    const rss: number[] = [];
    const spawnerRss: number[] = [];
    const t0 = Date.now();
    while (Date.now() - t0 < seconds * 1000) {
      await sleep(1000);
      if (Date.now() - t0 > (seconds * 1000) / 2) {
        const sp = spawnerRssBytes(gw.pid) / 2 ** 20;
        spawnerRss.push(sp);
        rss.push(rssBytes(gw.pid) / 2 ** 20 + sp);
      }
    }
    const c1 = cpuSample(gw.pid);
    const r1 = await rounds();
    const n = Math.max(1, r1 - r0);
    rss.sort((x, y) => x - y);
    spawnerRss.sort((x, y) => x - y);
    return {
      volumes,
      osts,
      mountPerVolume: o.mountPerVolume ?? false,
      history: o.history ?? 2,
      plugins,
      rounds: r1 - r0,
      gatewayMsPerRound: ((c1.sched - c0.sched) * 1000) / n,
      childrenMsPerRound: ((c1.children - c0.children) * 1000) / n,
      rssMiB: rss[rss.length >> 1] ?? rssBytes(gw.pid) / 2 ** 20,
      spawnerRssMiB: spawnerRss[spawnerRss.length >> 1] ?? 0,
      statesKiB: fs.statSync(path.join(node.dir, "import_states.out")).size / 1024,
      importsKiB: fs.statSync(path.join(node.dir, "imports.out")).size / 1024,
    };
  } finally {
    await gw.stop();
    fs.rmSync(node.dir, { recursive: true, force: true });
  }
}

export function rpcTable(rows: RpcRow[]): string {
  const probe = rows.find((r) => r.method === "Probe")!;
  return [
    "| RPC (unix socket, 8 concurrent, one connection) | calls | p50 µs | p99 µs | gateway CPU µs/call | × Probe's CPU | response bytes | not OK |",
    "|---|---|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.method} | ${r.calls} | ${r.p50Us.toFixed(0)} | ${r.p99Us.toFixed(0)} | ${r.cpuUsPerCall.toFixed(1)} | ${(r.cpuUsPerCall / probe.cpuUsPerCall).toFixed(2)} | ${r.responseBytes} | ${r.notOk} |`),
  ].join("\n");
}

export function roundTable(rows: RoundRow[]): string {
  return [
    "| plugins | volumes | OSTs | mount per volume | history | states KiB | imports KiB | rounds | gateway CPU ms/round | children CPU ms/round | RSS MiB (gateway + spawner) |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows.map(
      (r) =>
        `| ${r.plugins} | ${r.volumes} | ${r.osts} | ${r.mountPerVolume ? "yes" : "no"} | ${r.history} | ${r.statesKiB.toFixed(0)} | ${r.importsKiB.toFixed(0)} | ${r.rounds} | ${r.gatewayMsPerRound.toFixed(2)} | ${r.childrenMsPerRound.toFixed(1)} | ${r.rssMiB.toFixed(1)} |`,
    ),
  ].join("\n");
}

/**
 * The rows issue #30 asks for: 1, 8 and 64 volumes (each its own mount, as
 * kubelet mounts them) on 64 OSTs, and 1 and 8 on 1,000 OSTs, with short and
 * full (16-entry) state histories; 0 volumes is the "none" RSS is compared
 * with; the last row runs every bundled check (what a node runs).
 */
export const ROUND_ROWS: Array<[number, number, RoundOptions]> = [
  [0, 64, { mountPerVolume: true }],
  [1, 64, { mountPerVolume: true }],
  [8, 64, { mountPerVolume: true }],
  [64, 64, { mountPerVolume: true }],
  [8, 64, { mountPerVolume: true, history: 16 }],
  [64, 64, { mountPerVolume: true, history: 16 }],
  [1, 1000, { mountPerVolume: true }],
  [8, 1000, { mountPerVolume: true }],
  [8, 64, { mountPerVolume: true, history: 16, plugins: "all" }],
];

/**
 * RSS with 64 volumes against none (the two ROUND_ROWS the target
 * compares), for this build and a peer build (`peerRoot`: another checkout's
 * root, its dist built), both started by this harness, so both are counted
 * alike (gateway plus spawner); the peer without this build's environment
 * (bench/lib/launch.ts), as it shipped. Interleaved peer, this, peer, this so
 * both see the same minutes of a shared machine; `reps` times each.
 */
export async function rssAgainstPeer(peerRoot: string, reps = 2): Promise<Array<{ build: string; volumes: number; rssMiB: number; spawnerRssMiB: number }>> {
  const out: Array<{ build: string; volumes: number; rssMiB: number; spawnerRssMiB: number }> = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const volumes of [0, 64]) {
      for (const launch of [{ root: peerRoot, env: {} }, THIS_BUILD]) {
        const row = await roundCost(volumes, 64, { mountPerVolume: true, launch });
        console.error(JSON.stringify({ build: launch.root, ...row }));
        out.push({ build: launch.root, volumes, rssMiB: row.rssMiB, spawnerRssMiB: row.spawnerRssMiB });
      }
    }
  }
  return out;
}

async function main(): Promise<void> {
  if (process.argv[2] === "rss") {
    const peerRoot = process.argv[3];
    if (!peerRoot) throw new Error("usage: node dist/bench/health.js rss PEER_ROOT (a checkout with its dist built)");
    const rows = await rssAgainstPeer(path.resolve(peerRoot), Number(process.env.HEALTH_BENCH_REPS ?? 2));
    const median = (b: string, v: number, pick: (r: (typeof rows)[number]) => number) => {
      const xs = rows.filter((r) => r.build === b && r.volumes === v).map(pick).sort((x, y) => x - y);
      return xs[(xs.length - 1) >> 1]!;
    };
    console.log("| build | RSS MiB, 0 volumes | RSS MiB, 64 volumes × 64 OSTs | 64 against none | of which the spawner |\n|---|---|---|---|---|");
    for (const b of [path.resolve(peerRoot), root]) {
      const none = median(b, 0, (r) => r.rssMiB);
      const full = median(b, 64, (r) => r.rssMiB);
      const sp = median(b, 64, (r) => r.spawnerRssMiB) - median(b, 0, (r) => r.spawnerRssMiB);
      console.log(`| ${b} | ${none.toFixed(1)} | ${full.toFixed(1)} | +${(full - none).toFixed(1)} | +${sp.toFixed(1)} |`);
    }
    return;
  }
  const only = new Set((process.argv[2] ?? "rpc,rounds").split(","));
  if (only.has("rpc")) console.log(rpcTable(await rpcCost()) + "\n");
  if (only.has("rounds")) {
    const rows: RoundRow[] = [];
    for (const [v, o, opts] of ROUND_ROWS) {
      const row = await roundCost(v, o, opts);
      console.error(JSON.stringify(row));
      rows.push(row);
    }
    console.log(roundTable(rows));
    const none = rows.find((r) => r.volumes === 0);
    const full = rows.find((r) => r.volumes === 64 && r.history === 2);
    if (none && full) console.log(`\nRSS, 64 volumes (64 OSTs each) against none: +${(full.rssMiB - none.rssMiB).toFixed(1)} MiB`);
  }
}

if (isMain(import.meta.url)) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
