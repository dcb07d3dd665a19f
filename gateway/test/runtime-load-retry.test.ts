// A plugin whose manifest() missed its deadline at load is retried at its
// backoff (2 s, then 4 s), by the runtime's own timer: the directory's
// safety-net poll is a minute while inotify watches, and nothing in the
// directory changes to wake a rescan.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PluginRuntime } from "../src/runtime/runtime.js";
import { compileHostile } from "./hostile/build.js";

let dir: string;
let runtime: PluginRuntime;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pg-load-retry-"));
  writeFileSync(join(dir, "manifestloop.wasm"), await compileHostile("manifestloop"));
}, 120_000);

afterAll(async () => {
  await runtime?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a plugin load that timed out", () => {
  it("is tried again at 2 s and 4 s after, with no file event and no poll due", async () => {
    runtime = new PluginRuntime({ dir, isKnownSource: () => true, timeoutMs: 300, pollMs: 600_000, logger: pino({ level: "silent" }) });
    await runtime.start();
    expect(runtime.current().refusals).toMatchObject([{ file: "manifestloop.wasm", reason: "PluginTimeout" }]);
    // Each attempt ends with the sandbox's worker killed at the deadline.
    const first = runtime.sandbox.restarts;
    expect(first).toBeGreaterThanOrEqual(1);
    const attempts: number[] = [];
    const t0 = Date.now();
    while (Date.now() - t0 < 9_000 && attempts.length < 2) {
      await new Promise((r) => setTimeout(r, 100));
      if (runtime.sandbox.restarts > first + attempts.length) attempts.push(Date.now() - t0);
    }
    expect(attempts).toHaveLength(2);
    // The backoff doubles: the second retry comes about 4 s after the first (deadline and scheduling aside).
    expect(attempts[1]! - attempts[0]!).toBeGreaterThan(3_000);
    expect(runtime.current().refusals).toMatchObject([{ file: "manifestloop.wasm", reason: "PluginTimeout" }]);
  }, 30_000);
});
