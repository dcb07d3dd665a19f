// Quick bench (not part of `npm run bench`): what one process start costs the
// process that starts it, by its own RSS. Node starts a child with fork() and
// exec(): the fork copies the parent's page tables and marks its pages
// copy-on-write, so the parent's CPU per start grows with its resident memory.
// A check round that runs one command pays this once per command; it is the
// floor under a round's cost (docs/performance.md, "Health rounds").
// Each row also measures the same starts through the command spawner
// (gateway/native/spawner.c, started before the ballast as the gateway starts
// it early): a pipe write and read in the parent, posix_spawn in the spawner.
//   npm run build && node dist/bench/fork-cost.js [MiB ...]
import { spawn } from "node:child_process";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { runCommand } from "../gateway/src/exec/run-command.js";
import { CommandSpawner } from "../gateway/src/exec/spawner.js";

const STARTS = 40;

function rssKiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : undefined;
}

async function perStart(start: () => Promise<unknown>): Promise<{ cpu: number; system: number; wall: number }> {
  await start();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < STARTS; i++) await start();
  const c = process.cpuUsage(c0);
  return { cpu: (c.user + c.system) / 1000 / STARTS, system: c.system / 1000 / STARTS, wall: (performance.now() - t0) / STARTS };
}

async function measure(ballastMiB: number): Promise<void> {
  const spawner = new CommandSpawner();
  spawner.warm();
  // Touched memory, as a heap and buffers in use are.
  const ballast: Buffer[] = [];
  for (let i = 0; i < ballastMiB; i++) ballast.push(Buffer.alloc(1 << 20, 1));
  const direct = await perStart(() => new Promise<void>((r) => spawn("/bin/true").on("exit", () => r())));
  const spec = { argv: ["/bin/true"], label: "true", timeoutMs: 10_000, maxOutputBytes: 4096, env: {} };
  const via = spawner.fallbackReason === undefined ? await perStart(() => runCommand({ ...spec, spawner })) : undefined;
  const round = (n: number) => +n.toFixed(2);
  const row = {
    ballastMiB,
    rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    cpuMsPerStart: round(direct.cpu),
    systemMsPerStart: round(direct.system),
    wallMsPerStart: round(direct.wall),
    ...(via
      ? {
          spawnerCpuMsPerStart: round(via.cpu),
          spawnerSystemMsPerStart: round(via.system),
          spawnerWallMsPerStart: round(via.wall),
          spawnerRssKiB: rssKiB(spawner.pid),
        }
      : { spawner: `not used: ${spawner.fallbackReason}` }),
  };
  console.log(JSON.stringify(row));
  spawner.stop();
  ballast.length = 0;
}

// Each size in a fresh process, so a larger ballast's pages do not linger in the next row.
const sizes = process.argv.slice(2).map(Number).filter((n) => n >= 0);
if (sizes.length === 1) await measure(sizes[0]!);
else for (const mb of sizes.length ? sizes : [0, 25, 50, 100, 200]) spawnSync(process.execPath, [process.argv[1]!, String(mb)], { stdio: "inherit" });
