// Storage and volume health (issue #30), measured on running gateways:
//   rpc     NodeGetStorageHealth and NodeGetVolumeHealth against Probe in the same
//           run, on the same gateway and connection: client latency (p50/p99) and
//           the gateway's CPU per call (schedstat of its threads over the window);
//   rounds  the gateway's CPU for one evaluation round (storage checks + every
//           volume) with 0, 1, 8 and 64 mounted volumes on 1,000 OSTs, and 8 on
//           64 OSTs; the children's CPU (fake tools, statfs probes) beside it;
//   rss     RSS with 64 volumes against none (after the same rounds).
// The node is the demo's fake Lustre client (gateway/demo/bin, rendered by
// gateway/demo/lib/fake-lustre.js) with a mount table that lists the volumes
// under a kubelet directory made here (vol_data.json beside each mount, so the
// gateway rediscovers them as after a restart). Run:
//   npm run build && node dist/bench/health.js [rpc,rounds,rss]
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
import { cpuSample, rssBytes } from "./lib/proc.js";
import { PROBEGATE_NODE_FLAGS } from "./targets.js";

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

type Renderer = {
  renderImports(d: object): string;
  renderStates(d: object): string;
  renderGetname(d: object): string;
};

export async function fakeNode(volumes: number, osts: number): Promise<FakeNode> {
  const rendererFile = path.join(root, "gateway/demo/lib/fake-lustre.js");
  if (!fs.existsSync(rendererFile)) throw new Error("needs the fake Lustre client (gateway/demo/lib/fake-lustre.js, branch h30-plugins)");
  const r = (await import(pathToFileURL(rendererFile).href)) as Renderer;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-health-bench-"));
  fs.cpSync(path.join(root, "gateway/demo/scenarios/healthy"), dir, { recursive: true });
  const kubeletDir = path.join(dir, "kubelet");
  const mountpoint = "/mnt/lustrefs";
  const desc = { version: "2.15", filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint, mdts: 1, osts }] };
  fs.writeFileSync(path.join(dir, "imports.out"), r.renderImports(desc));
  fs.writeFileSync(path.join(dir, "import_states.out"), r.renderStates(desc));
  const mounts = ["proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0", "/dev/vda1 / ext4 rw,relatime 0 0", `10.0.0.2@tcp:/lustrefs ${mountpoint} lustre rw,flock,lazystatfs 0 0`];
  const vols: FakeNode["volumes"] = [];
  for (let i = 0; i < volumes; i++) {
    const pv = `pv-bench-${i}`;
    const id = `lustrefs/vol-${i}`;
    const target = path.join(kubeletDir, "pods", `0000000${i}-aaaa-4bbb-8ccc-dddddddddddd`, "volumes", "kubernetes.io~csi", pv, "mount");
    fs.mkdirSync(target, { recursive: true });
    fs.writeFileSync(path.join(path.dirname(target), "vol_data.json"), JSON.stringify({ driverName: "lustre.csi.example.com", volumeHandle: id, specVolID: pv }));
    mounts.push(`10.0.0.2@tcp:/lustrefs ${target} lustre rw,flock,lazystatfs 0 0`);
    vols.push({ id, target });
  }
  fs.writeFileSync(path.join(dir, "proc/1/mounts"), mounts.join("\n") + "\n");
  fs.writeFileSync(path.join(dir, "getname.out"), r.renderGetname(desc));
  const env = { ...process.env, PATH: `${path.join(root, "gateway/demo/bin")}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: dir };
  return { dir, kubeletDir, env, volumes: vols };
}

// ---- the gateway ----

export interface Gw {
  child: ChildProcess;
  pid: number;
  socket: string;
  http: string;
  stop(): Promise<void>;
}

export async function startGateway(node: FakeNode, args: string[]): Promise<Gw> {
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
      path.join(root, "bin/probegate.js"),
      `--csi-endpoint=unix://${socket}`,
      `--http-endpoint=127.0.0.1:${port}`,
      `--plugins-dir=${path.join(root, "dist/plugins")}`,
      `--path.procfs=${path.join(node.dir, "proc")}`,
      `--path.sysfs=${path.join(node.dir, "sys")}`,
      `--kubelet-dir=${node.kubeletDir}`,
      "--log-level=warn",
      ...args,
    ],
    { env: node.env, stdio: ["ignore", "ignore", "pipe"] },
  );
  let err = "";
  child.stderr!.on("data", (d) => (err = (err + d).slice(-4000)));
  const httpAddr = `127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`probegate exited: ${err}`);
    try {
      if ((await fetch(`http://${httpAddr}/readyz`)).status === 200) break;
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

async function load(session: http2.ClientHttp2Session, pid: number, method: string, p: string, body: Buffer, calls: number, concurrency: number): Promise<RpcRow> {
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
  rounds: number;
  /** The gateway's own CPU per round, ms. */
  gatewayMsPerRound: number;
  /** Its children's (fake tools, statfs probes) CPU per round, ms. */
  childrenMsPerRound: number;
  rssMiB: number;
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

export async function roundCost(volumes: number, osts: number, seconds = Number(process.env.HEALTH_BENCH_ROUND_S ?? 20), intervalS = 1): Promise<RoundRow> {
  const node = await fakeNode(volumes, osts);
  const gw = await startGateway(node, [`--check-interval=${intervalS}s`]);
  try {
    const rounds = () => metricSum(gw.http, "probegate_check_runs_total", (l) => l.includes('check="lustre-imports"'));
    // Let the first rounds (discovery, first evaluations, JIT) pass.
    await sleep(5000);
    const r0 = await rounds();
    const c0 = cpuSample(gw.pid);
    await sleep(seconds * 1000);
    const c1 = cpuSample(gw.pid);
    const r1 = await rounds();
    const n = Math.max(1, r1 - r0);
    return {
      volumes,
      osts,
      rounds: r1 - r0,
      gatewayMsPerRound: ((c1.sched - c0.sched) * 1000) / n,
      childrenMsPerRound: ((c1.children - c0.children) * 1000) / n,
      rssMiB: rssBytes(gw.pid) / 2 ** 20,
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
    "| volumes | OSTs | rounds | gateway CPU ms/round | children CPU ms/round | RSS MiB |",
    "|---|---|---|---|---|---|",
    ...rows.map((r) => `| ${r.volumes} | ${r.osts} | ${r.rounds} | ${r.gatewayMsPerRound.toFixed(2)} | ${r.childrenMsPerRound.toFixed(1)} | ${r.rssMiB.toFixed(1)} |`),
  ].join("\n");
}

async function main(): Promise<void> {
  const only = new Set((process.argv[2] ?? "rpc,rounds").split(","));
  if (only.has("rpc")) console.log(rpcTable(await rpcCost()) + "\n");
  if (only.has("rounds")) {
    const rows: RoundRow[] = [];
    for (const [v, o] of [[0, 1000], [1, 1000], [8, 1000], [64, 1000], [8, 64], [0, 64]] as const) rows.push(await roundCost(v, o));
    console.log(roundTable(rows));
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
