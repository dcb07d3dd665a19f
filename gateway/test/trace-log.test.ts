// The gateway's plugin trace log: a per-plugin budget, refilled over time,
// with the count of dropped lines on the next line logged.
import { Writable } from "node:stream";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { TraceLog } from "../src/runtime/trace-log.js";

function capture(level: "debug" | "info") {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n")) if (l) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: pino({ level }, stream), lines };
}

const flush = () => new Promise((r) => setImmediate(r));

describe("TraceLog", () => {
  it("logs a burst, drops the rest, and says how many were dropped once the budget refills", async () => {
    const { logger, lines } = capture("debug");
    let now = 0;
    const log = new TraceLog(logger, { burst: 3, refillMs: 1000 }, () => now);
    for (let i = 0; i < 10; i++) log.log("a.wasm", `line ${i}`);
    await flush();
    expect(lines.map((l) => l.trace)).toEqual(["line 0", "line 1", "line 2"]);
    now = 999;
    log.log("a.wasm", "still dry");
    now = 1000;
    log.log("a.wasm", "refilled");
    await flush();
    expect(lines.at(-1)).toMatchObject({ msg: "plugin trace", plugin: "a.wasm", trace: "refilled", droppedTraces: 8, level: 20 });
    // The count restarts after it was reported.
    now = 2000;
    log.log("a.wasm", "next");
    await flush();
    expect(lines.at(-1)!.droppedTraces).toBeUndefined();
  });

  it("keeps one budget per plugin", async () => {
    const { logger, lines } = capture("debug");
    const log = new TraceLog(logger, { burst: 2, refillMs: 60_000 }, () => 0);
    for (let i = 0; i < 5; i++) log.log("noisy.wasm", "x");
    log.log("quiet.wasm", "y");
    await flush();
    expect(lines.map((l) => l.plugin)).toEqual(["noisy.wasm", "noisy.wasm", "quiet.wasm"]);
  });

  it("costs nothing and logs nothing above debug", async () => {
    const { logger, lines } = capture("info");
    const log = new TraceLog(logger, { burst: 2, refillMs: 1 }, () => 0);
    for (let i = 0; i < 5; i++) log.log("a.wasm", "x");
    await flush();
    expect(lines).toEqual([]);
  });
});
