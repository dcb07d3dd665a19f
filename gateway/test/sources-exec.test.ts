// Process handling of command sources, through custom sources (--sources)
// running real Node child processes: started directly by the gateway, and
// again through the command spawner (gateway/native/spawner.c), which must
// behave the same.

import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { defaultSpawnerPath } from "../src/exec/spawner.js";
import { isAlive } from "./helpers/process-alive.js";

const silent = pino({ level: "silent" });
let dir: string;
let spawner: string | false = false;
const catalogs: SourceCatalog[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "probegate-sources-exec-"));
});
afterEach(async () => {
  await Promise.all(catalogs.splice(0).map((c) => c.stop()));
  rmSync(dir, { recursive: true, force: true });
});

const SPAWNER = defaultSpawnerPath();
const PATHS = [
  { path: "direct spawn", spawner: false as const, skip: false },
  // Built by npm run build when a C compiler exists; without one the gateway uses the direct spawn only.
  { path: "command spawner", spawner: SPAWNER ?? "", skip: SPAWNER === undefined },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function catalogWith(entries: object[], env: NodeJS.ProcessEnv = process.env): Promise<SourceCatalog> {
  const file = join(dir, "sources.yaml");
  writeFileSync(file, JSON.stringify(entries)); // JSON is YAML
  const catalog = await SourceCatalog.create({ procfs: dir, sysfs: dir, sourcesFile: file, env, logger: silent, commandSpawner: spawner });
  if (spawner) expect(catalog.spawner?.fallbackReason).toBeUndefined();
  catalogs.push(catalog);
  return catalog;
}

function node(name: string, code: string, extra: object = {}): object {
  return { name, argv: [process.execPath, "-e", code], timeout: "20s", ttl: "1s", ...extra };
}

async function waitUntilDead(pids: number[], deadlineMs = 15_000): Promise<number[]> {
  const until = Date.now() + deadlineMs;
  let alive = pids.filter(isAlive);
  while (alive.length > 0 && Date.now() < until) {
    await sleep(50);
    alive = alive.filter(isAlive);
  }
  return alive;
}

describe.each(PATHS)("command execution ($path)", (mode) => {
  beforeEach((ctx) => {
    if (mode.skip) ctx.skip("dist/native/probegate-spawner is not built (no C compiler)");
    spawner = mode.spawner;
  });

  it("kills a hanging command and the children it forked at the timeout", async () => {
    const script = join(dir, "hang.mjs");
    const pidFile = join(dir, "pids");
    writeFileSync(
      script,
      `import { spawn } from "node:child_process";
       import { writeFileSync } from "node:fs";
       const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
       writeFileSync(process.argv[2], process.pid + " " + child.pid);
       process.stdout.write("started\\n");
       setInterval(() => {}, 1000);`,
    );
    const catalog = await catalogWith([
      { name: "hang", argv: [process.execPath, script, pidFile], timeout: "5s", ttl: "1s" },
    ]);
    const r = await catalog.read("hang", {});
    expect(r).toMatchObject({ ok: false, exitCode: null, truncated: false });
    expect(r.error).toMatch(/^ETIMEDOUT: node \S+hang\.mjs .* timed out after 5000 ms$/);
    expect(r.stdout).toBe("started\n");
    const pids = readFileSync(pidFile, "utf8").split(" ").map(Number);
    expect(pids).toHaveLength(2);
    expect(await waitUntilDead(pids)).toEqual([]);
  });

  it("ends the commands still running when the catalog stops, and runs no new one", async () => {
    const pidFile = join(dir, "pid");
    const catalog = await catalogWith([
      node("slow", `require("fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000)`, { timeout: "5m" }),
      node("later", "process.stdout.write('ran')"),
    ]);
    const pending = catalog.read("slow", {});
    const until = Date.now() + 15_000;
    while (Date.now() < until) {
      try {
        if (readFileSync(pidFile, "utf8")) break;
      } catch {
        /* not started yet */
      }
      await sleep(20);
    }
    const pid = Number(readFileSync(pidFile, "utf8"));
    await catalog.stop();
    // stop() resolved only after the child was reaped: it is gone already.
    expect(isAlive(pid)).toBe(false);
    expect(await pending).toMatchObject({ ok: false, error: "killed by SIGKILL" });
    const r = await catalog.read("later", {});
    expect(r).toMatchObject({ ok: false });
    expect(r.error).toMatch(/^ECANCELED: .* not run: the gateway is stopping$/);
  });

  it("kills a command that spews output past the cap instead of waiting for its timeout", async () => {
    const catalog = await catalogWith([
      // fs.writeSync, not process.stdout.write: the latter may queue
      // asynchronously on a pipe, and a loop that never yields then stops
      // producing output after the first 64 KiB, so the cap was never hit
      // and the test waited for the 5-minute timeout instead.
      node("spew", "const fs = require('fs'); const b = Buffer.alloc(65536, 120); for (;;) { try { fs.writeSync(1, b); } catch (e) { if (e.code !== 'EAGAIN') throw e; } }", {
        timeout: "5m",
        maxOutput: "256KiB",
      }),
    ]);
    const r = await catalog.read("spew", {});
    expect(r).toMatchObject({ ok: false, exitCode: null, truncated: true });
    expect(r.error).toMatch(/^EFBIG: node -e .* output exceeded 262144 bytes$/);
    expect(r.stdout).toBe("x".repeat(262144));
  });

  it("caps stderr separately from stdout", async () => {
    const catalog = await catalogWith([
      node("noisy", "process.stdout.write('fine\\n'); process.stderr.write('e'.repeat(5000));", { maxOutput: 1000 }),
    ]);
    const r = await catalog.read("noisy", {});
    expect(r).toMatchObject({ ok: false, truncated: true, stdout: "fine\n" });
    expect(r.stderr).toBe("e".repeat(1000));
  });

  it("accepts output exactly at the cap", async () => {
    const catalog = await catalogWith([node("exact", "process.stdout.write('y'.repeat(1000))", { maxOutput: 1000 })]);
    expect(await catalog.read("exact", {})).toMatchObject({ ok: true, truncated: false, stdout: "y".repeat(1000) });
  });

  it("reports death by signal", async () => {
    const catalog = await catalogWith([node("term", "process.kill(process.pid, 'SIGTERM'); setInterval(() => {}, 1000)")]);
    expect(await catalog.read("term", {})).toMatchObject({ ok: false, exitCode: null, error: "killed by SIGTERM" });
  });

  it("gives the command an empty stdin and / as working directory", async () => {
    const catalog = await catalogWith([
      node(
        "stdin",
        "let n = 0; process.stdin.on('data', (d) => (n += d.length)).on('end', () => console.log(n, process.cwd()));",
      ),
    ]);
    expect(await catalog.read("stdin", {})).toMatchObject({ ok: true, stdout: "0 /\n" });
  });

  it("passes arguments verbatim, without a shell", async () => {
    const catalog = await catalogWith([
      {
        name: "args",
        argv: [process.execPath, "-e", "console.log(JSON.stringify(process.argv.slice(1)))", "$(id)", "a b", "'; ls"],
        timeout: "20s",
        ttl: "1s",
      },
    ]);
    const r = await catalog.read("args", {});
    expect(JSON.parse(r.stdout)).toEqual(["$(id)", "a b", "'; ls"]);
  });

  it("refuses missing or non-executable programs", async () => {
    const bin = join(dir, "bin");
    mkdirSync(bin);
    writeFileSync(join(bin, "notexec"), "#!/bin/sh\n");
    chmodSync(join(bin, "notexec"), 0o644);
    const catalog = await catalogWith(
      [
        { name: "abs", argv: ["/nonexistent/tool"], timeout: "1s", ttl: "1s" },
        { name: "notexec", argv: ["notexec"], timeout: "1s", ttl: "1s" },
      ],
      { PATH: bin },
    );
    expect((await catalog.read("abs", {})).error).toBe("ENOENT: /nonexistent/tool not found or not executable");
    expect((await catalog.read("notexec", {})).error).toBe("ENOENT: notexec not found on PATH");
  });

  it("reads each run's own output when it repeats, changes by one byte, changes back or is cut", async () => {
    // A listing the size of a node's (300 KiB), printed again run after run:
    // the repeat is given the last run's text (repeated-output.ts), so every
    // change must still be seen, and a cut run must not pass for a whole one.
    const outputs = join(dir, "outputs.json");
    const at = join(dir, "at");
    const big = "osc.lustrefs-OST0000-osc-ffff.state=\n".repeat(8192);
    const changed = big.slice(0, 150_000) + "X" + big.slice(150_001);
    const sequence = [big, big, changed, big, "", big, big + "é".repeat(10)];
    writeFileSync(outputs, JSON.stringify(sequence));
    writeFileSync(at, "0");
    const script = `const fs = require("node:fs");
      const i = Number(fs.readFileSync(${JSON.stringify(at)}, "utf8"));
      fs.writeFileSync(${JSON.stringify(at)}, String(i + 1));
      process.stdout.write(JSON.parse(fs.readFileSync(${JSON.stringify(outputs)}, "utf8"))[i]);`;
    const cap = big.length + 5;
    const catalog = await catalogWith([node("listing", script, { ttl: "0s", maxOutput: cap })]);
    const seen = [];
    for (let i = 0; i < sequence.length; i++) seen.push(await catalog.read("listing", {}));
    for (let i = 0; i < sequence.length - 1; i++) {
      expect(seen[i]!.stdout === sequence[i], `run ${i}`).toBe(true);
      expect(seen[i]).toMatchObject({ ok: true, truncated: false });
    }
    // Cut inside the two-byte "é"s: the whole characters before the cap, never the half one.
    const last = seen[sequence.length - 1]!;
    expect(last).toMatchObject({ ok: false, truncated: true });
    expect(last.stdout === big + "éé", "cut run").toBe(true);
  });

  it("custom sources take no facts and are cached by their ttl", async () => {
    const counter = join(dir, "count");
    const catalog = await catalogWith([
      node("count", `require("node:fs").appendFileSync(${JSON.stringify(counter)}, "x"); console.log("ok")`, {
        ttl: "1m",
      }),
    ]);
    expect(catalog.requiredFacts("count")).toEqual([]);
    await Promise.all(Array.from({ length: 50 }, () => catalog.read("count", { "lnet.selfNid": "x" })));
    await catalog.read("count", {});
    expect(readFileSync(counter, "utf8")).toBe("x");
  });
});
