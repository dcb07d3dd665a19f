// The process room (gateway/src/exec/room.ts): every command through the one
// place rule, to a deadline (run) or kept while it hangs (start + one-per-key),
// started through the spawner or directly with the same results. Real processes.

import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ProcessRoom } from "../src/exec/room.js";
import { CommandSpawner, defaultSpawnerPath } from "../src/exec/spawner.js";

const SPAWNER = defaultSpawnerPath();
const MODES = [
  { name: "direct spawn", spawner: false },
  ...(SPAWNER ? [{ name: "spawner", spawner: true }] : []),
];

let dir: string;
const rooms: ProcessRoom[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "probegate-room-"));
});
afterEach(async () => {
  for (const r of rooms.splice(0)) await r.stop();
  rmSync(dir, { recursive: true, force: true });
});

function room(spawner: boolean, opts: { commandPrefix?: string[]; execInProcess?: string; procfs?: string } = {}): ProcessRoom {
  const r = new ProcessRoom({
    procfs: opts.procfs ?? "/proc",
    env: { PATH: `${join(dir, "bin")}:${process.env.PATH}` },
    ...(opts.commandPrefix ? { commandPrefix: opts.commandPrefix } : {}),
    ...(opts.execInProcess ? { execInProcess: opts.execInProcess } : {}),
    ...(spawner ? { spawner: new CommandSpawner({ path: SPAWNER! }) } : {}),
  });
  rooms.push(r);
  return r;
}

/** A tool that logs each start and hangs while `hang` exists. */
function hangingTool(): { log: string; hang: string } {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  const log = join(dir, "starts.log");
  const hang = join(dir, "hang");
  writeFileSync(join(bin, "pingish"), `#!/bin/sh\necho "$1" >> '${log}'\nwhile [ -e '${hang}' ]; do sleep 0.05; done\necho "answered $1"\n`);
  chmodSync(join(bin, "pingish"), 0o755);
  writeFileSync(hang, "");
  return { log, hang };
}

const until = async (what: string, cond: () => boolean, ms = 10_000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe.each(MODES)("the process room ($name)", ({ spawner }) => {
  it("runs a command behind the place's prefix, to its deadline", async () => {
    const r = room(spawner, { commandPrefix: ["env", "PLACE=prefixed"] });
    expect(await r.run({ argv: ["sh", "-c", "echo $PLACE"], label: "sh", timeoutMs: 5000, maxOutputBytes: 1024 })).toMatchObject({
      ok: true,
      stdout: "prefixed\n",
    });
    const slow = await r.run({ argv: ["sleep", "30"], label: "sleep", timeoutMs: 200, maxOutputBytes: 1024 });
    expect(slow).toMatchObject({ ok: false, outcome: "timeout", error: "ETIMEDOUT: sleep timed out after 200 ms" });
  });

  it("fails a command, and starts nothing, when the --exec-in-process target is not there", async () => {
    const procfs = join(dir, "proc");
    mkdirSync(procfs);
    const r = room(spawner, { execInProcess: "driver", procfs });
    expect(await r.run({ argv: ["true"], label: "true", timeoutMs: 1000, maxOutputBytes: 64 })).toMatchObject({
      ok: false,
      error: `ESRCH: no process named driver (looked under ${procfs})`,
    });
    expect(await r.start({ argv: ["true"], label: "true", maxOutputBytes: 64 })).toMatchObject({ ok: false, stage: "place" });
  });

  it("keeps one hung command per key (one process, however often asked) until it ends", async () => {
    const { log, hang } = hangingTool();
    const r = room(spawner);
    const pings = r.perKey({ maxOutstanding: 4 });
    // A ping per NID: one call on the room.
    const ping = (nid: string) => pings.run(nid, { argv: ["pingish", nid], label: "pingish", maxOutputBytes: 1024, waitMs: 300 });
    expect(await ping("10.0.0.1@tcp")).toMatchObject({ kind: "hung" });
    const again = await ping("10.0.0.1@tcp");
    expect(again).toMatchObject({ kind: "hung" });
    // It waited its waitMs (less a millisecond: timers run on the loop's millisecond clock, ms on performance.now).
    expect(again.kind === "hung" && again.ms).toBeGreaterThanOrEqual(299);
    expect(pings.count()).toBe(1);
    expect(readFileSync(log, "utf8").trim().split("\n")).toEqual(["10.0.0.1@tcp"]);

    rmSync(hang);
    await until("the hung command to end", () => pings.count() === 0);
    expect(await ping("10.0.0.1@tcp")).toMatchObject({ kind: "done", value: { ok: true, stdout: "answered 10.0.0.1@tcp\n" } });
    expect(readFileSync(log, "utf8").trim().split("\n")).toEqual(["10.0.0.1@tcp", "10.0.0.1@tcp"]);
  });

  it("refuses a key past the cap of outstanding runs, and kills them all at stop", async () => {
    const { log } = hangingTool();
    const r = room(spawner);
    const perKey = r.perKey({ maxOutstanding: 2 });
    const start = (key: string) => perKey.run(key, { argv: ["pingish", key], label: "pingish", maxOutputBytes: 1024, waitMs: 100 });
    expect(await start("a")).toMatchObject({ kind: "hung" });
    expect(await start("b")).toMatchObject({ kind: "hung" });
    expect(await start("c")).toEqual({ kind: "refused", code: "EAGAIN" });
    expect(readFileSync(log, "utf8").trim().split("\n").sort()).toEqual(["a", "b"]);
    await perKey.stop(5000);
    expect(perKey.count()).toBe(0);
    expect(await start("d")).toEqual({ kind: "refused", code: "ECANCELED" });
  });

  it("kills a child at its own deadline and holds the key until it is gone", async () => {
    const { log } = hangingTool();
    const r = room(spawner);
    const steps = r.perKey({ maxOutstanding: 4 });
    const step = () => steps.run("/mnt/x", { argv: ["pingish", "/mnt/x"], label: "pingish", maxOutputBytes: 1024, waitMs: 5000, killAfterMs: 200 });
    const first = await step();
    expect(first).toMatchObject({ kind: "done", value: { ok: false, outcome: "error", error: "killed by SIGKILL" } });
    expect(steps.count()).toBe(0);
    expect(readFileSync(log, "utf8").trim().split("\n")).toEqual(["/mnt/x"]);
  });
});
