// What the server pings (#42) add to a node a minute, counted, not timed:
// gateways with the bundled plugins on fake Lustre clients with 1 and 64
// mounted volumes of one file system, and 64 volumes over two file systems,
// each next to the same node served with the #42 storage checks left out
// (lnet-servers, lnet-peer-health: nothing reads lnet.server_pings,
// lctl.imports or lnetctl.peer_show_health, so nothing pings), all at the
// defaults (--check-interval 5s, --health-interval 30s,
// --server-ping-interval 30s) and all in the same run. Which commands ran
// comes from the fake tools' call log (gateway/demo/bin, one line a call)
// over the window; the CPU of each gateway's process tree (itself, its
// command spawner and the commands both reaped) over the same window is
// printed beside it, with the load average, as a same-run comparison only.
//
//   npm run ts:build && node dist/bench/server-ping-cost.js [--seconds 120] [--settle 35]
//
// A file system here is a failover MGS pair, one MDS (MDT0000) and 8 OSTs
// each on its own OSS failover pair: 10 servers, 20 NIDs, every first NID
// answering (a partner is pinged only while the first does not answer).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { startGateway, writeClient, type FakeNode, type Gw, type Renderer } from "./health.js";
import { isMain } from "./lib/main.js";
import { repoRoot } from "./lib/paths.js";
import { cpuDelta, cpuSample } from "./lib/proc.js";

const root = repoRoot();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface FsLayout {
  name: string;
  mgs: [string, string];
  mds: string;
  /** OST i on pair i. */
  oss: Array<[string, string]>;
}

function layout(name: string, net: number): FsLayout {
  const a = (host: number) => `10.${net}.0.${host}@tcp`;
  return { name, mgs: [a(2), a(12)], mds: a(3), oss: Array.from({ length: 8 }, (_, i) => [a(20 + 2 * i), a(21 + 2 * i)] as [string, string]) };
}

const FILESYSTEMS = [layout("lustrefs", 0), layout("scratch", 1)];

interface Shape {
  id: string;
  volumes: number;
  filesystems: number;
}

const SHAPES: Shape[] = [
  { id: "1 volume, 1 fs", volumes: 1, filesystems: 1 },
  { id: "64 volumes, 1 fs", volumes: 64, filesystems: 1 },
  { id: "64 volumes, 2 fs", volumes: 64, filesystems: 2 },
];

/** A fake Lustre client (the demo's healthy node) with `shape`'s volumes, each its own mount with its own imports. */
async function lustreNode(shape: Shape): Promise<FakeNode> {
  const r = (await import(pathToFileURL(path.join(root, "gateway/demo/lib/fake-lustre.js")).href)) as Renderer;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-ping-cost-"));
  fs.cpSync(path.join(root, "gateway/demo/scenarios/healthy"), dir, { recursive: true });
  const kubeletDir = path.join(dir, "kubelet");
  const since = Math.floor(Date.now() / 1000) - 3600;
  const mounts = ["proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0", "/dev/vda1 / ext4 rw,relatime 0 0"];
  const filesystems: object[] = [];
  const answers: Record<string, string> = { "10.0.0.10@tcp": "ok" };
  const volumes: FakeNode["volumes"] = [];
  for (let i = 0; i < shape.volumes; i++) {
    const l = FILESYSTEMS[i % shape.filesystems]!;
    const pv = `pv-ping-${i}`;
    const target = path.join(kubeletDir, "pods", `0000000${i}-aaaa-4bbb-8ccc-dddddddddddd`, "volumes", "kubernetes.io~csi", pv, "mount");
    fs.mkdirSync(target, { recursive: true });
    fs.writeFileSync(path.join(path.dirname(target), "vol_data.json"), JSON.stringify({ driverName: "lustre.csi.example.com", volumeHandle: `${l.name}/vol-${i}`, specVolID: pv }));
    mounts.push(`${l.mgs.join(":")}:/${l.name} ${target} lustre rw,flock,lazystatfs 0 0`);
    const f = { name: l.name, instance: (0xffff8f0a3b5d0000n + BigInt(i) * 0x1000n).toString(16), mountpoint: target, mdts: 1, osts: l.oss.length, servers: {} as Record<string, string[]> };
    for (const t of r.targetNames(f)) f.servers[t] = t.startsWith("MDT") ? [l.mds] : l.oss[parseInt(t.slice(3), 16)]!;
    filesystems.push(f);
    volumes.push({ id: `${l.name}/vol-${i}`, target });
    for (const nid of [...l.mgs, l.mds, ...l.oss.flat()]) answers[nid] = "ok";
  }
  const desc = { version: "2.15", mgsNid: FILESYSTEMS[0]!.mgs[0], since, filesystems };
  fs.writeFileSync(path.join(dir, "ping_nids.json"), JSON.stringify(answers));
  const env = writeClient(r, dir, desc, mounts);
  fs.rmSync(path.join(dir, "calls.log"), { force: true });
  return { dir, kubeletDir, env, volumes };
}

/** The bundled plugins without the #42 storage checks (a directory of links). */
function withoutPings(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "probegate-ping-cost-plugins-"));
  const bundled = path.join(root, "dist", "plugins");
  for (const f of fs.readdirSync(bundled)) {
    if (f === "lnet-servers.wasm" || f === "lnet-peer-health.wasm") continue;
    fs.symlinkSync(path.join(bundled, f), path.join(dir, f));
  }
  return dir;
}

/** Lines of calls.log by command key (`ping`, `imports`, `peer_show`, …). */
function callCounts(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  let text = "";
  try {
    text = fs.readFileSync(path.join(dir, "calls.log"), "utf8");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    if (line.length === 0) continue;
    const key = line.split(" ", 1)[0]!;
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

interface Row {
  shape: string;
  variant: "pings" | "no #42 checks";
  perMinute: Record<string, number>;
  totalPerMinute: number;
  cpuSecPerMinute: number;
}

async function main(): Promise<void> {
  const arg = (name: string, dflt: number) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? Number(process.argv[i + 1]) : dflt;
  };
  const windowSec = arg("seconds", 120);
  const settleSec = arg("settle", 35);
  const off = withoutPings();
  const runs: Array<{ shape: Shape; variant: Row["variant"]; node: FakeNode; gw?: Gw }> = [];
  for (const shape of SHAPES) {
    for (const variant of ["pings", "no #42 checks"] as const) runs.push({ shape, variant, node: await lustreNode(shape) });
  }
  try {
    for (const r of runs) r.gw = await startGateway(r.node, [], r.variant === "pings" ? undefined : off);
    await sleep(settleSec * 1000);
    const load0 = fs.readFileSync("/proc/loadavg", "utf8").trim();
    const before = runs.map((r) => ({ calls: callCounts(r.node.dir), cpu: cpuSample(r.gw!.pid) }));
    await sleep(windowSec * 1000);
    const load1 = fs.readFileSync("/proc/loadavg", "utf8").trim();
    const rows: Row[] = runs.map((r, i) => {
      const after = callCounts(r.node.dir);
      const perMinute: Record<string, number> = {};
      let total = 0;
      for (const [k, v] of after) {
        const n = ((v - (before[i]!.calls.get(k) ?? 0)) * 60) / windowSec;
        if (n > 0) perMinute[k] = n;
        total += n;
      }
      const d = cpuDelta(before[i]!.cpu, cpuSample(r.gw!.pid));
      return { shape: r.shape.id, variant: r.variant, perMinute, totalPerMinute: total, cpuSecPerMinute: ((d.cpuSec + d.childrenSec) * 60) / d.wallSec };
    });
    process.stdout.write(JSON.stringify({ at: new Date().toISOString(), windowSec, settleSec, loadavg: [load0, load1], rows }, null, 2) + "\n");
  } finally {
    for (const r of runs) await r.gw?.stop().catch(() => undefined);
    for (const r of runs) fs.rmSync(r.node.dir, { recursive: true, force: true });
    fs.rmSync(off, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
