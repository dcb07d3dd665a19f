// Preloaded into a server under test (`node --import dist/bench/lib/mem-report.js`)
// by the footprint section: on SIGUSR2 it writes the process's own view of its
// memory to $PROBEGATE_BENCH_MEMREPORT. It adds nothing else to the process.
import fs from "node:fs";
import v8 from "node:v8";

export interface MemReport {
  memoryUsage: NodeJS.MemoryUsage;
  /** [space, size MiB, used MiB] */
  spaces: [string, number, number][];
  heap: v8.HeapInfo;
  code: v8.HeapCodeStatistics;
}

const out = process.env.PROBEGATE_BENCH_MEMREPORT;
if (out) {
  process.on("SIGUSR2", () => {
    const MiB = 1024 * 1024;
    const report: MemReport = {
      memoryUsage: process.memoryUsage(),
      spaces: v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_size / MiB, s.space_used_size / MiB]),
      heap: v8.getHeapStatistics(),
      code: v8.getHeapCodeStatistics(),
    };
    fs.writeFileSync(`${out}.tmp`, JSON.stringify(report));
    fs.renameSync(`${out}.tmp`, out);
  });
}
