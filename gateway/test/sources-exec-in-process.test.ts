// --exec-in-process: finding the driver's process under procfs (a fake procfs
// tree), the nsenter command line the catalog runs (a fake nsenter on PATH
// that records its argv), the driver restarting, and — where this machine
// lets a test create a mount namespace — a real nsenter into a real one.

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, symlinkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultSpawnerPath } from "../src/exec/spawner.js";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { findNewestProcess, parseStat, ProcessNamespace } from "../src/exec/process-namespace.js";

const silent = pino({ level: "silent" });
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "probegate-exec-in-process-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One /proc/PID entry: comm as the kernel truncates it, stat with state and start time, argv[0]. */
function fakeProcess(procfs: string, pid: number, exe: string, startTime: number, state = "S"): void {
  const d = join(procfs, String(pid));
  mkdirSync(d, { recursive: true });
  const comm = exe.split("/").pop()!.slice(0, 15);
  writeFileSync(join(d, "comm"), `${comm}\n`);
  // Fields 4..21 are filler; field 22 is the start time.
  const filler = Array.from({ length: 18 }, (_, i) => String(i + 1)).join(" ");
  writeFileSync(join(d, "stat"), `${pid} (${comm}) ${state} ${filler} ${startTime} 0 0\n`);
  writeFileSync(join(d, "cmdline"), `${exe}\0-v=5\0`);
}

describe("process lookup in a fake procfs", () => {
  it("parses stat with spaces and parentheses in comm", () => {
    const filler = Array.from({ length: 18 }, () => "0").join(" ");
    expect(parseStat(`42 (a) b (c)) R ${filler} 987654 1 2`)).toEqual({ comm: "a) b (c)", state: "R", startTime: 987654n });
    expect(parseStat("garbage")).toBeUndefined();
  });

  it("finds the newest live process by name; a name longer than comm is confirmed from argv[0]", async () => {
    const procfs = join(dir, "proc");
    fakeProcess(procfs, 10, "/app/azurelustreplugin", 500);
    fakeProcess(procfs, 11, "/app/azurelustreplugin", 900); // newest live one
    fakeProcess(procfs, 12, "/app/azurelustreplugin", 1000, "Z"); // newer, but a zombie
    fakeProcess(procfs, 13, "/usr/bin/azurelustreplugX", 2000); // same 15-char comm, another program
    fakeProcess(procfs, 16, "azurelustreplugin-sidecar", 950); // argv[0] lies; its exe link (below) does not
    fakeProcess(procfs, 14, "/usr/sbin/lnetd", 3000);
    // A process that renamed itself (comm) to look like lnetd, but runs another program.
    fakeProcess(procfs, 15, "/usr/bin/python3", 4000);
    writeFileSync(join(procfs, "15", "comm"), "lnetd\n");
    mkdirSync(join(procfs, "self")); // non-numeric entries are ignored
    writeFileSync(join(procfs, "modules"), "lnet 1 0 - Live 0x0\n");
    expect(await findNewestProcess(procfs, "azurelustreplugin")).toEqual({ pid: 11, startTime: 900n });
    // /proc/PID/exe, when readable, is what names the program; a binary replaced on disk keeps its name.
    symlinkSync("/app/azurelustreplugin (deleted)", join(procfs, "16", "exe"));
    expect(await findNewestProcess(procfs, "azurelustreplugin")).toEqual({ pid: 16, startTime: 950n });
    symlinkSync("/opt/other-program", join(procfs, "13", "exe"));
    expect(await findNewestProcess(procfs, "azurelustreplugX")).toBeUndefined(); // its argv[0] says so, its exe does not
    expect(await findNewestProcess(procfs, "lnetd")).toEqual({ pid: 14, startTime: 3000n });
    expect(await findNewestProcess(procfs, "lnet")).toBeUndefined(); // whole names only
    expect(await findNewestProcess(join(dir, "missing"), "lnetd")).toBeUndefined();
  });
});

describe("commands run through nsenter into the process's mount namespace", () => {
  /** A fake nsenter: records its argv, then runs what follows `--` (as the real one does after setns). */
  function fakeNsenter(): { bin: string; log: string } {
    const bin = join(dir, "bin");
    mkdirSync(bin, { recursive: true });
    const log = join(dir, "nsenter.log");
    writeFileSync(
      join(bin, "nsenter"),
      `#!${process.execPath}
const fs = require("node:fs");
const { spawnSync } = require("node:child_process");
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(args) + "\\n");
const rest = args.slice(args.indexOf("--") + 1);
const r = spawnSync(rest[0], rest.slice(1), { stdio: "inherit" });
process.exit(r.status ?? 1);
`,
    );
    writeFileSync(join(bin, "lnetctl"), `#!${process.execPath}\nprocess.stdout.write("net:\\n    - net type: lo\\n");\n`);
    chmodSync(join(bin, "nsenter"), 0o755);
    chmodSync(join(bin, "lnetctl"), 0o755);
    return { bin, log };
  }

  it("builds `nsenter --mount=<procfs>/<pid>/ns/mnt -- lnetctl net show`, finds the driver again after a restart, and fails clearly without one", async () => {
    const procfs = join(dir, "proc");
    fakeProcess(procfs, 100, "/app/azurelustreplugin", 1000);
    const { bin, log } = fakeNsenter();
    const catalog = await SourceCatalog.create({
      procfs,
      sysfs: dir,
      execInProcess: "azurelustreplugin",
      env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
      logger: silent,
      defaults: { commandTtlMs: 1 },
    });
    expect(catalog.describe().find((d) => d.name === "lnetctl.net_show")?.argv).toEqual([
      "nsenter",
      `--mount=${procfs}/{pid of azurelustreplugin}/ns/mnt`,
      "--",
      "lnetctl",
      "net",
      "show",
    ]);

    const first = await catalog.read("lnetctl.net_show", {});
    expect(first.error).toBeNull();
    expect(first.stdout).toContain("net type: lo");
    const calls = () => readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l) as string[]);
    // The plain source is served from the one `net show -v 3` run (net-show-plain.ts).
    expect(calls().at(-1)).toEqual([`--mount=${procfs}/100/ns/mnt`, "--", "lnetctl", "net", "show", "-v", "3"]);

    // The driver container restarts: the old process is gone, a new one has a new PID.
    rmSync(join(procfs, "100"), { recursive: true });
    fakeProcess(procfs, 230, "/app/azurelustreplugin", 5000);
    await sleep(5);
    const second = await catalog.read("lnetctl.net_show", {});
    expect(second.ok).toBe(true);
    expect(calls().at(-1)).toEqual([`--mount=${procfs}/230/ns/mnt`, "--", "lnetctl", "net", "show", "-v", "3"]);

    // A PID reused by another program is not mistaken for the driver.
    rmSync(join(procfs, "230"), { recursive: true });
    fakeProcess(procfs, 230, "/usr/bin/sleep", 6000);
    await sleep(5);
    const gone = await catalog.read("lnetctl.net_show", {});
    expect(gone.ok).toBe(false);
    expect(gone.error).toBe(`ESRCH: no process named azurelustreplugin (looked under ${procfs})`);
    expect(calls()).toHaveLength(2); // nothing was run
  });

  it("proc.mounts is the target process's mount table (where the driver mounts volumes), not PID 1's", async () => {
    const procfs = join(dir, "proc");
    fakeProcess(procfs, 1, "/pause", 1);
    writeFileSync(join(procfs, "1", "mounts"), "overlay / overlay rw 0 0\n");
    fakeProcess(procfs, 42, "/app/azurelustreplugin", 100);
    writeFileSync(join(procfs, "42", "mounts"), "10.0.0.5@tcp:/lustrefs /var/lib/kubelet/pods/p/volumes/v lustre rw 0 0\n");
    const catalog = await SourceCatalog.create({ procfs, sysfs: dir, execInProcess: "azurelustreplugin", logger: silent });
    expect(catalog.describe().find((d) => d.name === "proc.mounts")?.path).toBe(`${procfs}/{pid of azurelustreplugin}/mounts`);
    const r = await catalog.read("proc.mounts", {});
    expect(r.ok).toBe(true);
    expect(r.stdout).toContain(" lustre ");
    rmSync(join(procfs, "42"), { recursive: true });
    await sleep(1100); // past the 1 s file TTL
    const gone = await catalog.read("proc.mounts", {});
    expect(gone.error).toMatch(/^ESRCH: no process named azurelustreplugin/);
  });

  it("re-checks the process it found last instead of scanning procfs each time", async () => {
    const procfs = join(dir, "proc");
    fakeProcess(procfs, 7, "/app/drv", 10);
    const ns = new ProcessNamespace(procfs, "drv");
    expect(await ns.prefix()).toEqual({ ok: true, pid: 7, argv: ["nsenter", `--mount=${procfs}/7/ns/mnt`, "--"] });
    // Same PID, new start time: a different process; it is found again by scanning.
    fakeProcess(procfs, 7, "/app/drv", 20);
    fakeProcess(procfs, 8, "/app/drv", 15);
    expect(await ns.prefix()).toMatchObject({ ok: true, pid: 7 });
    rmSync(join(procfs, "7"), { recursive: true });
    expect(await ns.prefix()).toMatchObject({ ok: true, pid: 8 });
  });
});

/** Whether this machine lets us create a mount namespace (root, and no seccomp/userns policy against it). */
function canUnshareMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const u = spawnSync("unshare", ["--mount", "--propagation", "private", "true"]);
  const n = spawnSync("nsenter", ["--version"]);
  return u.status === 0 && n.status === 0;
}

describe.runIf(canUnshareMount())("a real mount namespace (unshare --mount, real nsenter)", () => {
  let holder: ChildProcess | undefined;
  afterEach(() => {
    if (holder?.pid) {
      try {
        process.kill(-holder.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    holder = undefined;
  });

  it("runs lnetctl that exists only inside the other namespace", async () => {
    // A directory that is empty here, and in the new namespace a tmpfs holding
    // lnetctl, like the driver container that installed the Lustre client.
    const hidden = join(dir, "only-inside");
    mkdirSync(hidden);
    const name = `pgdrv${process.pid % 100000}${Math.floor(Math.random() * 1000)}`.slice(0, 15);
    const driverBin = join(dir, name);
    copyFileSync("/bin/sleep", driverBin);
    chmodSync(driverBin, 0o755);
    const ready = join(dir, "ready");
    const setup = join(dir, "setup.cjs");
    writeFileSync(
      setup,
      `const { execFileSync, spawn } = require("node:child_process");
const fs = require("node:fs");
execFileSync("mount", ["-t", "tmpfs", "tmpfs", ${JSON.stringify(hidden)}]);
fs.writeFileSync(${JSON.stringify(join(hidden, "lnetctl"))}, "#!${process.execPath}\\nprocess.stdout.write('inside the driver namespace: ' + process.argv.slice(2).join(' ') + '\\\\n');\\n", { mode: 0o755 });
const driver = spawn(${JSON.stringify(driverBin)}, ["300"], { stdio: "ignore" });
driver.on("spawn", () => fs.writeFileSync(${JSON.stringify(ready)}, String(driver.pid)));
`,
    );
    holder = spawn("unshare", ["--mount", "--propagation", "private", process.execPath, setup], { detached: true, stdio: "ignore" });
    const until = Date.now() + 20_000;
    while (!existsSync(ready) && Date.now() < until) await sleep(50);
    expect(existsSync(ready), "the namespace holder did not start").toBe(true);
    expect(readdirSync(hidden)).toEqual([]); // not visible out here

    const catalog = await SourceCatalog.create({
      procfs: "/proc",
      sysfs: dir,
      execInProcess: name,
      env: { ...process.env, PATH: `${hidden}:${process.env.PATH}` },
      logger: silent,
    });
    const r = await catalog.read("lnetctl.net_show", {});
    expect(r.error).toBeNull();
    expect(r.stdout).toBe("inside the driver namespace: net show -v 3\n");

    // The same through the command spawner (nsenter is what it starts), when it is built.
    if (defaultSpawnerPath() === undefined) return;
    const viaSpawner = await SourceCatalog.create({
      procfs: "/proc",
      sysfs: dir,
      execInProcess: name,
      env: { ...process.env, PATH: `${hidden}:${process.env.PATH}` },
      logger: silent,
      commandSpawner: true,
    });
    try {
      expect(viaSpawner.spawner?.fallbackReason).toBeUndefined();
      const s = await viaSpawner.read("lnetctl.net_show", {});
      expect(s.error).toBeNull();
      expect(s.stdout).toBe("inside the driver namespace: net show -v 3\n");
    } finally {
      await viaSpawner.stop();
    }
  }, 30_000);
});
