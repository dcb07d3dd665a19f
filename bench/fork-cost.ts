// Quick bench (not part of `npm run bench`): what one process start costs the
// process that starts it, by its own RSS. Node starts a child with fork() and
// exec(): the fork copies the parent's page tables and marks its pages
// copy-on-write, so the parent's CPU per start grows with its resident memory.
// A check round that runs one command pays this once per command; it is the
// floor under a round's cost (docs/performance.md, "Health rounds").
//   npm run ts:build && node dist/bench/fork-cost.js [MiB ...]
import { spawn } from "node:child_process";
import { spawnSync } from "node:child_process";

const STARTS = 40;

async function measure(ballastMiB: number): Promise<void> {
  // Touched memory, as a heap and buffers in use are.
  const ballast: Buffer[] = [];
  for (let i = 0; i < ballastMiB; i++) ballast.push(Buffer.alloc(1 << 20, 1));
  await new Promise<void>((r) => spawn("/bin/true").on("exit", () => r()));
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < STARTS; i++) await new Promise<void>((r) => spawn("/bin/true").on("exit", () => r()));
  const c = process.cpuUsage(c0);
  const row = {
    ballastMiB,
    rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
    cpuMsPerStart: +((c.user + c.system) / 1000 / STARTS).toFixed(2),
    systemMsPerStart: +(c.system / 1000 / STARTS).toFixed(2),
    wallMsPerStart: +((performance.now() - t0) / STARTS).toFixed(2),
  };
  console.log(JSON.stringify(row));
  ballast.length = 0;
}

// Each size in a fresh process, so a larger ballast's pages do not linger in the next row.
const sizes = process.argv.slice(2).map(Number).filter((n) => n >= 0);
if (sizes.length === 1) await measure(sizes[0]!);
else for (const mb of sizes.length ? sizes : [0, 25, 50, 100, 200]) spawnSync(process.execPath, [process.argv[1]!, String(mb)], { stdio: "inherit" });
