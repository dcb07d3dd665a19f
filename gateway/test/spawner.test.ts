// The command spawner (gateway/native/spawner.c with exec/spawner.ts):
// what only it can get wrong (its own death, a missing binary, several commands
// at once, descriptors), and the same results as the direct spawn for what both
// must do (group kills, large output, argv0 and environment). Real processes.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCommand, type CommandResult, type CommandSpec } from "../src/exec/run-command.js";
import { RepeatedOutput } from "../src/exec/repeated-output.js";
import { CommandSpawner, defaultSpawnerPath } from "../src/exec/spawner.js";
import { StatfsProber } from "../src/engine/sources/statfs.js";
import { ProcessRoom } from "../src/exec/room.js";
import { fakeLnet, type FakeLnet } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { untilReadyz } from "./helpers/readyz.js";
import { isAlive } from "./helpers/process-alive.js";

const SPAWNER = defaultSpawnerPath();
const NO_BINARY = "dist/native/probegate-spawner is not built (no C compiler): the gateway uses the direct spawn only";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dir: string;
const spawners: CommandSpawner[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "probegate-spawner-"));
});
afterEach(() => {
  for (const s of spawners.splice(0)) s.stop();
  rmSync(dir, { recursive: true, force: true });
});

function newSpawner(path = SPAWNER): CommandSpawner {
  const s = new CommandSpawner(path === undefined ? {} : { path });
  spawners.push(s);
  return s;
}

function spec(argv: string[], extra: Partial<CommandSpec> = {}): CommandSpec {
  return { argv, label: "test tool", timeoutMs: 20_000, maxOutputBytes: 1 << 20, env: process.env, ...extra };
}

async function until<T>(what: string, f: () => T | undefined | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** A node script that forks a grandchild which would live for ever, records both pids, then runs `tail`. */
function forkingTool(tail: string): string[] {
  const pids = join(dir, "pids");
  const code = `
    const { spawn } = require("node:child_process");
    const g = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    require("node:fs").writeFileSync(${JSON.stringify(pids)}, process.pid + " " + g.pid);
    ${tail}`;
  return [process.execPath, "-e", code];
}

/** Live children of a process, with their command names (from /proc). */
function childrenOf(ppid: number): Array<{ pid: number; comm: string }> {
  const out: Array<{ pid: number; comm: string }> = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      if (Number(fields[1]) === ppid && fields[0] !== "Z") out.push({ pid: Number(e), comm: stat.slice(stat.indexOf("(") + 1, close) });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const readPids = (): number[] => readFileSync(join(dir, "pids"), "utf8").split(" ").map(Number);

/** The spawner's metrics as a running gateway exports them: 0/1 per state, and the restarts counter. */
async function spawnerMetrics(gw: GatewayProcess): Promise<{ states: Record<string, number>; restarts: number | undefined }> {
  const text = await (await fetch(`http://${gw.http}/metrics`)).text();
  const states: Record<string, number> = {};
  for (const m of text.matchAll(/^probegate_command_spawner_state\{state="(\w+)"\} (\S+)$/gm)) states[m[1]!] = Number(m[2]);
  const restarts = /^probegate_command_spawner_restarts_total (\S+)$/m.exec(text);
  return { states, restarts: restarts ? Number(restarts[1]) : undefined };
}
const ACTIVE = { active: 1, fallback: 0, off: 0 };

const isSpawner = (c: { comm: string }) => c.comm.startsWith("probegate-spaw");

describe.skipIf(SPAWNER === undefined)("command spawner", () => {
  it("fails the command in flight when the spawner is killed, and runs the next one in a new spawner", async () => {
    const s = newSpawner();
    const marker = join(dir, "started");
    const hung = runCommand(spec([process.execPath, "-e", `require("fs").writeFileSync(${JSON.stringify(marker)}, "");setInterval(() => {}, 1000)`], { spawner: s }));
    await until("the hanging command to start", () => existsSync(marker));
    const first = s.pid!;
    process.kill(first, "SIGKILL");
    const r = await hung;
    expect(r.ok).toBe(false);
    expect(r.outcome).toBe("error");
    expect(r.error).toMatch(/^EIO: cannot run .*node: command spawner killed by SIGKILL$/);

    const next = await runCommand(spec(["echo", "again"], { spawner: s }));
    expect(next).toMatchObject({ ok: true, stdout: "again\n" });
    expect(s.starts).toBe(2);
    expect(s.restarts).toBe(1);
    expect(s.pid).not.toBe(first);
    expect(s.fallbackReason).toBeUndefined();
  });

  it("kills and replaces a spawner that stops answering (the command fails, never passes)", async () => {
    const s = new CommandSpawner({ ...(SPAWNER ? { path: SPAWNER } : {}), watchdogMarginMs: 200 });
    spawners.push(s);
    s.warm();
    const wedged = s.pid!;
    process.kill(wedged, "SIGSTOP");
    const r = await runCommand(spec(["echo", "never"], { spawner: s, timeoutMs: 300 }));
    expect(r).toMatchObject({ ok: false, outcome: "error", error: "EIO: cannot run echo: command spawner did not answer in time" });
    await until("the wedged spawner to be gone", () => !isAlive(wedged));
    expect(await runCommand(spec(["echo", "next"], { spawner: s }))).toMatchObject({ ok: true, stdout: "next\n" });
    expect(s.pid).not.toBe(wedged);
    expect(s.restarts).toBe(1);
  });

  it("kills the group of a command whose spawner died (nothing it started outlives it)", async () => {
    const s = newSpawner();
    const hung = runCommand(spec(forkingTool("setInterval(() => {}, 1000)"), { spawner: s }));
    await until("the tool to record its pids", () => existsSync(join(dir, "pids")) && readFileSync(join(dir, "pids"), "utf8").includes(" "));
    process.kill(s.pid!, "SIGKILL");
    expect((await hung).ok).toBe(false);
    const pids = readPids();
    await until("the tool and its grandchild to be gone", () => pids.every((p) => !isAlive(p)));
  });

  it("falls back to the direct spawn when the binary is missing, and commands still run", async () => {
    const s = newSpawner(join(dir, "no-such-spawner"));
    expect(s.fallbackReason).toMatch(/no-such-spawner not found/);
    const r = await runCommand(spec(["echo", "direct"], { spawner: s }));
    expect(r).toMatchObject({ ok: true, stdout: "direct\n", outcome: "ok" });
    expect(s.starts).toBe(0);
  });

  it("falls back for good after a spawner that keeps dying at once", async () => {
    const broken = join(dir, "broken-spawner");
    writeFileSync(broken, "#!/bin/sh\nexit 7\n");
    chmodSync(broken, 0o755);
    const lines: Array<{ level: number; msg: string; reason?: string }> = [];
    const logger = pino({ level: "info" }, { write: (l: string) => void lines.push(JSON.parse(l)) });
    const s = new CommandSpawner({ path: broken, maxFailures: 2, logger });
    spawners.push(s);
    const results: CommandResult[] = [];
    // Each request either fails with the spawner's death or, while it backs off, runs directly.
    for (let i = 0; i < 20 && s.fallbackReason === undefined; i++) {
      results.push(await runCommand(spec(["echo", String(i)], { spawner: s })));
      await sleep(300);
    }
    expect(s.fallbackReason).toMatch(/failed 2 times in a row \(last: (exited with status 7|request pipe failed)\)/);
    for (const r of results) if (!r.ok) expect(r.error).toMatch(/^EIO: cannot run echo: command spawner /);
    expect(await runCommand(spec(["echo", "after"], { spawner: s }))).toMatchObject({ ok: true, stdout: "after\n" });
    expect(await runCommand(spec(["echo", "again"], { spawner: s }))).toMatchObject({ ok: true, stdout: "again\n" });
    // Said once, at warn, with what it costs.
    const notUsed = lines.filter((l) => l.msg.startsWith("command spawner not used"));
    expect(notUsed).toHaveLength(1);
    expect(notUsed[0]).toMatchObject({ level: 40, reason: expect.stringMatching(/failed 2 times/) });
    expect(notUsed[0]!.msg).toMatch(/each costing a fork of the gateway/);
  });

  it("does not let a hanging command delay another", async () => {
    const s = newSpawner();
    let hungDone = false;
    const hung = runCommand(spec(["sleep", "30"], { spawner: s, timeoutMs: 60_000 })).then((r) => {
      hungDone = true;
      return r;
    });
    for (let i = 0; i < 5; i++) {
      const r = await runCommand(spec(["echo", `quick ${i}`], { spawner: s }));
      expect(r.stdout).toBe(`quick ${i}\n`);
    }
    expect(hungDone).toBe(false);
    s.stop(); // closing its request pipe kills the hanging command's group
    expect(await hung).toMatchObject({ ok: false, outcome: "error" });
  });

  it("passes no descriptor of its own to a command: only stdin, stdout and stderr", async () => {
    const s = newSpawner();
    const r = await runCommand(spec(["ls", "-l", "/proc/self/fd/"], { spawner: s }));
    expect(r.ok).toBe(true);
    const fds = [...r.stdout.matchAll(/ (\d+) -> (.*)$/gm)].map((m) => ({ fd: Number(m[1]), target: m[2]! }));
    expect(fds.find((f) => f.fd === 0)?.target).toBe("/dev/null");
    expect(fds.find((f) => f.fd === 1)?.target).toMatch(/^pipe:/);
    expect(fds.find((f) => f.fd === 2)?.target).toMatch(/^pipe:/);
    // ls's own directory handle is the only other one.
    expect(fds.filter((f) => f.fd > 2).map((f) => f.target)).toEqual([expect.stringMatching(/^\/proc\/\d+\/fd$/)]);
  });

  it("never hands a file without a #! line to /bin/sh (the direct spawn's execvp does)", async () => {
    const s = newSpawner();
    const noShebang = join(dir, "script");
    writeFileSync(noShebang, "echo ran by a shell\n");
    chmodSync(noShebang, 0o755);
    const r = await runCommand(spec([noShebang], { spawner: s }));
    expect(r).toMatchObject({ ok: false, stdout: "", error: `ENOEXEC: cannot run ${noShebang}: spawn ${noShebang} ENOEXEC` });
  });

  it("runs statfs probes: a hung one is reported, kept (never killed, never started twice) and answers when it returns", async () => {
    const s = newSpawner();
    const bin = join(dir, "bin");
    const log = join(dir, "stat.log");
    const hang = join(dir, "hang");
    mkdirSync(bin);
    // The fake stat records who started it; it hangs on the path /hung while the file exists.
    writeFileSync(join(bin, "stat"), `#!/bin/sh\necho "$(cat /proc/$PPID/comm) $5" >> '${log}'\nif [ "$5" = /hung ]; then while [ -e '${hang}' ]; do sleep 0.05; done; fi\necho bd00bd0\n`);
    chmodSync(join(bin, "stat"), 0o755);
    writeFileSync(hang, "");
    const prober = new StatfsProber({
      boundMs: 300,
      intervalMs: 0,
      maxOutstanding: 8,
      room: new ProcessRoom({ procfs: "/proc", env: { PATH: `${bin}:${process.env.PATH}` }, spawner: s }),
      mountTable: async () => undefined,
    });
    expect(await prober.probe("/hung")).toMatchObject({ kind: "hung" });
    expect(await prober.probe("/fine")).toEqual({ kind: "ok", fsType: "bd00bd0", access: "rw" });
    expect(await prober.probe("/hung")).toMatchObject({ kind: "hung" });
    expect(prober.count()).toBe(1);
    const lines = readFileSync(log, "utf8").trim().split("\n");
    expect(lines.filter((l) => l.endsWith(" /hung"))).toHaveLength(1);
    for (const l of lines) expect(l).toMatch(/^probegate-spaw/);
    rmSync(hang);
    await until("the hung probe to return", () => prober.count() === 0);
    expect(await prober.probe("/hung")).toEqual({ kind: "ok", fsType: "bd00bd0", access: "rw" });
    await prober.stop();
  });

  it("runs commands in / (the spawner's cwd, whatever the gateway's)", async () => {
    const s = newSpawner();
    const r = await runCommand(spec(["pwd"], { spawner: s }));
    expect(r.stdout).toBe("/\n");
  });
});

// What both paths must do alike.
const PATHS = [
  { path: "direct spawn", make: (): CommandSpawner | undefined => undefined, skip: false },
  { path: "command spawner", make: (): CommandSpawner | undefined => newSpawner(), skip: SPAWNER === undefined },
];

describe.each(PATHS)("commands ($path)", (mode) => {
  beforeEach((ctx) => {
    if (mode.skip) ctx.skip(NO_BINARY);
  });

  it("kills the whole group at the output cap (a forked grandchild is gone too)", async () => {
    const r = await runCommand(spec(forkingTool(`const b = "y".repeat(65536); setInterval(() => process.stdout.write(b), 5);`), {
      maxOutputBytes: 100_000,
      spawner: mode.make(),
    }));
    expect(r).toMatchObject({ ok: false, outcome: "truncated", truncated: true, error: "EFBIG: test tool output exceeded 100000 bytes" });
    expect(r.stdout.length).toBe(100_000);
    const pids = readPids();
    await until("the tool and its grandchild to be gone", () => pids.every((p) => !isAlive(p)));
  });

  it("kills the whole group at the timeout", async () => {
    const r = await runCommand(spec(forkingTool("setInterval(() => {}, 1000)"), { timeoutMs: 1500, spawner: mode.make() }));
    expect(r).toMatchObject({ ok: false, outcome: "timeout", error: "ETIMEDOUT: test tool timed out after 1500 ms" });
    const pids = readPids();
    await until("the tool and its grandchild to be gone", () => pids.every((p) => !isAlive(p)));
  });

  it("returns 4 MiB of output intact", async () => {
    const file = join(dir, "big");
    const data = Buffer.alloc(4 << 20);
    for (let i = 0; i < data.length; i++) data[i] = 0x20 + ((i * 7919) % 95);
    writeFileSync(file, data);
    const r = await runCommand(spec(["cat", file], { maxOutputBytes: 8 << 20, spawner: mode.make() }));
    expect(r.ok).toBe(true);
    expect(r.stdout.length).toBe(data.length);
    expect(createHash("sha256").update(r.stdout).digest("hex")).toBe(createHash("sha256").update(data).digest("hex"));
  });

  it("gives the command the environment and argv[0] as given", async () => {
    const env = { PATH: process.env.PATH!, ONLY_THIS: "a value with spaces", EMPTY: "" };
    const r = await runCommand(spec(["node", "-e", "process.stdout.write(JSON.stringify({ argv0: process.argv0, env: process.env }))"], { env, spawner: mode.make() }));
    expect(r.ok).toBe(true);
    expect(JSON.parse(r.stdout)).toEqual({ argv0: "node", env });
  });

  it("refuses a NUL byte in an argument or the environment with the same text (never passes it cut short)", async () => {
    const arg = await runCommand(spec(["echo", "a\0b"], { spawner: mode.make() }));
    expect(arg).toMatchObject({ ok: false, outcome: "error", error: expect.stringMatching(/^ERR_INVALID_ARG_VALUE: cannot run echo: .*null bytes/) });
    const env = await runCommand(spec(["echo", "x"], { env: { PATH: process.env.PATH!, BAD: "a\0b" }, spawner: mode.make() }));
    expect(env).toMatchObject({ ok: false, outcome: "error", error: expect.stringMatching(/^ERR_INVALID_ARG_VALUE: cannot run echo: .*null bytes/) });
  });

  it("reports a program that cannot be started with the same text", async () => {
    const noInterpreter = join(dir, "tool");
    writeFileSync(noInterpreter, "#!/nonexistent/interpreter\n");
    chmodSync(noInterpreter, 0o755);
    const r = await runCommand(spec([noInterpreter], { spawner: mode.make() }));
    expect(r).toMatchObject({ ok: false, outcome: "error", exitCode: null, error: `ENOENT: cannot run ${noInterpreter}: spawn ${noInterpreter} ENOENT` });
  });
});

describe.skipIf(SPAWNER === undefined)("kept output (spawner.c)", () => {
  it("says 'the same' only for the very output the gateway holds, whole, in that slot, from this spawner", async () => {
    const content = join(dir, "content");
    const tool = join(dir, "print.mjs");
    writeFileSync(tool, `import { readFileSync } from "node:fs"; process.stdout.write(readFileSync(${JSON.stringify(content)}));`);
    const s = newSpawner();
    const run = async (text: string, keep: { slot: number; held: number }, maxOutputBytes = 1 << 20) => {
      writeFileSync(content, text);
      const h = s.submit({ path: process.execPath, argv: ["node", tool], env: process.env, timeoutMs: 20_000, maxOutputBytes, keep })!;
      const r = await h.result;
      return { same: r.stdoutSame, out: r.stdout.toString(), token: r.token, cut: r.stdoutCut };
    };
    const A = "x".repeat(200_000);
    const B = A.slice(0, 100_000) + "y" + A.slice(100_001);
    const first = await run(A, { slot: 0, held: 0 });
    expect(first).toMatchObject({ same: false, out: A });
    // Held and unchanged: not sent.
    expect(await run(A, { slot: 0, held: first.token })).toEqual({ same: true, out: "", token: expect.any(Number), cut: false });
    // The gateway holds another output (or none): sent in full, and kept under the new token.
    const other = await run(A, { slot: 0, held: first.token + 1000 });
    expect(other).toMatchObject({ same: false, out: A });
    expect(await run(A, { slot: 0, held: first.token })).toMatchObject({ same: false, out: A });
    const held = (await run(A, { slot: 0, held: 0 })).token;
    // One byte changed, same length: sent.
    const changed = await run(B, { slot: 0, held });
    expect(changed).toMatchObject({ same: false, out: B });
    // Another slot keeps its own.
    expect(await run(B, { slot: 1, held: changed.token })).toMatchObject({ same: false, out: B });
    expect(await run(B, { slot: 0, held: changed.token })).toMatchObject({ same: true, out: "" });
    // A cut output is sent and never kept: the next run, even equal to the last whole one, is sent.
    const cut = await run(B + "zz", { slot: 0, held: changed.token }, B.length + 1);
    expect(cut).toMatchObject({ same: false, out: B + "z", cut: true });
    expect(await run(B, { slot: 0, held: changed.token })).toMatchObject({ same: false, out: B });
    // A new spawner process keeps nothing.
    const last = await run(B, { slot: 0, held: 0 });
    const pid = s.pid!;
    process.kill(pid, "SIGKILL");
    await until("a new spawner", () => s.pid !== undefined && s.pid !== pid ? true : (s.warm(), false));
    expect(await run(B, { slot: 0, held: last.token })).toMatchObject({ same: false, out: B });
  });

  it("gives a command source its last text when the spawner did not send it", async () => {
    // Through runCommand and a source's RepeatedOutput, as the catalog runs lctl.
    const content = join(dir, "content");
    const tool = join(dir, "print.mjs");
    writeFileSync(tool, `import { readFileSync } from "node:fs"; process.stdout.write(readFileSync(${JSON.stringify(content)}));`);
    const s = newSpawner();
    let notSent = 0;
    const submit = s.submit.bind(s);
    s.submit = (req) => {
      const h = submit(req);
      void h?.result.then((r) => (notSent += Number(r.stdoutSame)));
      return h;
    };
    const repeated = new RepeatedOutput(s.slotFor("test.listing"));
    const texts = ["a".repeat(70_000), "a".repeat(70_000), "b".repeat(70_000), "a".repeat(70_000), "a".repeat(70_000)];
    for (const t of texts) {
      writeFileSync(content, t);
      const r = await runCommand(spec([process.execPath, tool], { spawner: s, repeated }));
      expect(r.ok && r.stdout === t).toBe(true);
    }
    expect(notSent).toBe(2);
  });
});

// The wire format of spawner.c's requests (its header comment), spoken by hand
// here so the test can stop reading replies while the requests pipe stays open.
function runFrame(id: number, argv: string[]): Buffer {
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n >>> 0);
    return b;
  };
  const str = (t: string) => [u32(Buffer.byteLength(t)), Buffer.from(t)];
  const body = Buffer.concat([u32(1), u32(id), u32(60_000), u32(1 << 20), u32(argv.length), u32(0), ...str(argv[0]!), ...argv.flatMap(str)]);
  return Buffer.concat([u32(body.length), body]);
}

describe.skipIf(SPAWNER === undefined)("the spawner binary on its own", () => {
  it("kills the commands it runs when a reply meets a closed pipe (the gateway died while a command was ending)", async () => {
    const child = spawn(SPAWNER!, [], { stdio: ["pipe", "pipe", "ignore"] });
    try {
      child.stdin!.write(runFrame(1, ["/bin/sleep", "600"]));
      // The first reply: started, id 1, the command's pid.
      const started = await new Promise<Buffer>((resolve) => child.stdout!.once("data", (d: Buffer) => resolve(d)));
      expect(started.readUInt32LE(4)).toBe(1);
      const hanging = started.readUInt32LE(12);
      expect(isAlive(hanging)).toBe(true);
      // The gateway's end of the replies goes, its end of the requests stays: the
      // next reply (the second command's "started") is written into a broken pipe.
      child.stdout!.destroy();
      await sleep(100);
      child.stdin!.write(runFrame(2, ["/bin/true"]));
      await until("the spawner to exit", () => child.exitCode !== null || child.signalCode !== null, 10_000);
      await until("the hanging command to be killed with it", () => !isAlive(hanging), 10_000);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe.skipIf(SPAWNER === undefined)("a running gateway", () => {
  let gw: GatewayProcess | undefined;
  let node: FakeLnet | undefined;
  afterEach(async () => {
    await gw?.stop();
    node?.cleanup();
  });

  // A wrapper lnetctl records the pid and name of the process that started it, then runs the fake one.
  function recordingPath(n: FakeLnet): { env: NodeJS.ProcessEnv; record: string } {
    const record = join(dir, "parents");
    const real = join(ROOT, "gateway", "demo", "bin", "lnetctl");
    writeFileSync(join(dir, "lnetctl"), `#!/bin/sh\necho "$PPID $(cat /proc/$PPID/comm)" >> '${record}'\nexec '${real}' "$@"\n`);
    chmodSync(join(dir, "lnetctl"), 0o755);
    return { env: { ...n.env, PATH: `${dir}:${n.env.PATH}` }, record };
  }

  // The gateway itself by its pid: its main thread's name is "node" on Node 20 and "MainThread" on Node 24.
  for (const flag of ["on", "off"] as const) {
    it(`starts lnetctl from ${flag === "on" ? "the spawner" : "the gateway itself"} with --command-spawner=${flag}`, async () => {
      node = fakeLnet({ base: "healthy" });
      const { env, record } = recordingPath(node);
      gw = await startGatewayProcess(
        [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", `--plugins-dir=${join(ROOT, "dist", "plugins")}`, `--command-spawner=${flag}`],
        { env },
      );
      await until("lnetctl to be run", () => existsSync(record) && readFileSync(record, "utf8").length > 0, 30_000);
      const parents = readFileSync(record, "utf8").trim().split("\n");
      for (const p of parents) {
        const [pid, comm] = [Number(p.slice(0, p.indexOf(" "))), p.slice(p.indexOf(" ") + 1)];
        if (flag === "on") {
          expect(comm).toMatch(/^probegate-spaw/);
          expect(pid).not.toBe(gw.child.pid);
        } else expect(pid).toBe(gw.child.pid);
      }
      await untilReadyz(gw, (r) => /\[\+\]lnet-nets ok/.test(r.text), "lnet-nets passing on the real tool's output");
      expect(await spawnerMetrics(gw)).toEqual({ states: flag === "on" ? ACTIVE : { active: 0, fallback: 0, off: 1 }, restarts: 0 });
    });
  }

  it("replaces a killed spawner and counts it in probegate_command_spawner_restarts_total", async () => {
    node = fakeLnet({ base: "healthy" });
    gw = await startGatewayProcess(
      [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", `--plugins-dir=${join(ROOT, "dist", "plugins")}`],
      { env: node.env },
    );
    const first = await until("the spawner", () => childrenOf(gw!.child.pid!).find(isSpawner));
    expect(await spawnerMetrics(gw)).toEqual({ states: ACTIVE, restarts: 0 });
    process.kill(first.pid, "SIGKILL");
    // The next round's commands start a new one.
    await until("a new spawner", () => childrenOf(gw!.child.pid!).find((c) => isSpawner(c) && c.pid !== first.pid));
    expect(await spawnerMetrics(gw)).toEqual({ states: ACTIVE, restarts: 1 });
    await untilReadyz(gw, (r) => /\[\+\]lnet-nets ok/.test(r.text), "lnet-nets passing through the new spawner");
  });

  it("shows state fallback when installed without the spawner binary, and runs the commands itself", async () => {
    // The image's runtime file set (deploy/Dockerfile) without dist/native/.
    const install = join(dir, "install");
    for (const part of ["package.json", "bin", "dist/gateway/bundle", "dist/gateway/src", "dist/gateway/gen"]) {
      cpSync(join(ROOT, part), join(install, part), { recursive: true });
    }
    symlinkSync(join(ROOT, "node_modules"), join(install, "node_modules"));
    node = fakeLnet({ base: "healthy" });
    const { env, record } = recordingPath(node);
    gw = await startGatewayProcess(
      [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", `--plugins-dir=${join(ROOT, "dist", "plugins")}`, "--command-spawner=on"],
      { env, bin: join(install, "bin", "probegate.js") },
    );
    await untilReadyz(gw, (r) => /\[\+\]lnet-nets ok/.test(r.text), "lnet-nets passing on the real tool's output");
    for (const p of readFileSync(record, "utf8").trim().split("\n")) expect(Number(p.slice(0, p.indexOf(" ")))).toBe(gw.child.pid);
    expect(childrenOf(gw.child.pid!).filter(isSpawner)).toEqual([]);
    expect(await spawnerMetrics(gw)).toEqual({ states: { active: 0, fallback: 1, off: 0 }, restarts: 0 });
    expect(gw.logs().find((l) => String(l.msg).startsWith("command spawner not used"))).toMatchObject({ reason: expect.stringMatching(/probegate-spawner not found/) });
  });

  it("ends the spawner and the commands it runs when the gateway is killed", async () => {
    node = fakeLnet({ base: "healthy", netShow: { out: "net:\n", delayMs: 600_000 } });
    gw = await startGatewayProcess(
      [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", `--plugins-dir=${join(ROOT, "dist", "plugins")}`],
      { env: node.env },
    );
    const spawner = await until("the spawner", () => childrenOf(gw!.child.pid!).find((c) => c.comm.startsWith("probegate-spaw")));
    const hanging = await until("the hanging lnetctl", () => childrenOf(spawner.pid)[0]);
    await gw.stop("SIGKILL");
    await until("the spawner and the command to be gone", () => !isAlive(spawner.pid) && !isAlive(hanging.pid));
  });
});
