// LNet reachability of the servers (#42): which servers a node's Lustre
// mounts use (mount sources, imports), the lnet.server_pings source over a
// fake node whose `lnetctl ping` answers per NID (reachable, timing out,
// hanging), its bounds (pings counted, never timed), and the bundled
// lnet-servers plugin's entries in storage health with the imports FULL.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { lustreServers, parseMountSource } from "../src/engine/sources/server-nids.js";
import { canonicalNid, interpretPing, ServerPinger } from "../src/engine/sources/server-pings.js";
import { SERVER_PING_DEFAULTS } from "../src/engine/sources/catalog.js";
import type { CommandResult } from "../src/exec/run-command.js";
import { fakeLustre, type FakeLustre, type FakeLustreState } from "./helpers/fake-lustre.js";
import { ROOT } from "./helpers/gateway-process.js";
import { startChecks } from "./helpers/checks-harness.js";
import { silentLogger, waitFor } from "./hostile/harness.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const MGS = ["10.0.0.2@tcp", "10.0.0.12@tcp"];
const MDS = "10.0.0.3@tcp";
const OSS_PAIR = ["10.0.0.5@tcp", "10.0.0.6@tcp"];
const OSS = "10.0.0.7@tcp";
const ALL = [...MGS, MDS, ...OSS_PAIR, OSS];

function state(): FakeLustreState {
  return {
    version: "2.16",
    mgsNid: MGS[0],
    since: Math.floor(Date.now() / 1000) - 3600,
    filesystems: [
      {
        name: "lustrefs",
        instance: "ffff8f0a3b5c9000",
        mountpoint: "/mnt/lustre",
        mdts: 1,
        osts: 4,
        servers: { MDT0000: [MDS], OST0000: OSS_PAIR, OST0001: [OSS_PAIR[1]!, OSS_PAIR[0]!], OST0002: [OSS], OST0003: [OSS] },
      },
    ],
  };
}

type How = "ok" | "timeout" | "unreachable" | "eio" | "hang" | "garbage";

function answers(n: FakeLustre, over: Record<string, How> = {}): void {
  const table: Record<string, How> = Object.fromEntries(ALL.map((nid) => [nid, "ok"]));
  writeFileSync(join(n.dir, "ping_nids.json"), JSON.stringify({ ...table, ...over }));
}

function node(mountSource = `${MGS.join(":")}:/lustrefs`) {
  const n = fakeLustre({ base: "healthy", lustre: state() });
  cleanups.push(() => n.cleanup());
  writeFileSync(join(n.procfs, "1", "mounts"), `/dev/sda1 / ext4 rw 0 0\n${mountSource} /mnt/lustre lustre rw,flock,lazystatfs 0 0\n`);
  answers(n);
  return n;
}

/** Pings per NID so far (hung ones included: the fake logs a call before it answers). */
function pingCalls(n: FakeLustre): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of n.calls("ping")) {
    const nid = line.split(" ").at(-1)!;
    out.set(nid, (out.get(nid) ?? 0) + 1);
  }
  return out;
}

describe("server NIDs", () => {
  it("reads MGS failover nodes and multi-NID nodes from mount sources, IPv6 and quoted NIDs included", () => {
    expect(parseMountSource("10.0.0.2@tcp,192.168.1.2@o2ib:10.0.0.12@tcp:/lustrefs/sub")).toEqual({
      fs: "lustrefs",
      nodes: [["10.0.0.2@tcp", "192.168.1.2@o2ib"], ["10.0.0.12@tcp"]],
    });
    expect(parseMountSource("10.0.0.2@o2ib1:10.0.0.3@efa:/fs")).toEqual({ fs: "fs", nodes: [["10.0.0.2@o2ib1"], ["10.0.0.3@efa"]] });
    expect(parseMountSource("2001:db8::2@tcp:2001:db8::12@tcp1:/fs2")).toEqual({ fs: "fs2", nodes: [["2001:db8::2@tcp"], ["2001:db8::12@tcp1"]] });
    expect(parseMountSource('"10.0.0.2@tcp":/fs')).toEqual({ fs: "fs", nodes: [["10.0.0.2@tcp"]] });
    expect(parseMountSource("mgs.example.com@tcp:/fs")).toMatchObject({ fs: "fs", why: expect.stringContaining("is not a NID") });
    expect(parseMountSource("nonsense")).toMatchObject({ why: expect.stringContaining('no ":/fsname"') });
  });

  it("one server per NID set: a failover pair serving several OSTs is one server, MGC blocks are left to the mount source", () => {
    const n = node();
    const imports = readFileSync(join(n.dir, "imports.out"), "utf8");
    const mounts = `${MGS.join(":")}:/lustrefs /mnt/lustre lustre rw 0 0\nbad\\040source /mnt/x lustre rw 0 0\n`;
    const list = lustreServers(mounts, imports);
    expect(list.servers).toEqual([
      { fs: "lustrefs", role: "mgs", nids: MGS, targets: ["MGS"] },
      { fs: "lustrefs", role: "oss", nids: OSS_PAIR, targets: ["OST0000", "OST0001"] },
      { fs: "lustrefs", role: "oss", nids: [OSS], targets: ["OST0002", "OST0003"] },
      { fs: "lustrefs", role: "mds", nids: [MDS], targets: ["MDT0000"] },
    ]);
    expect(list.unparsed).toEqual([{ fs: "", why: expect.stringContaining('"bad source" has no ":/fsname"') }]);
  });
});

// What lnetctl prints, from Lustre's source (lnet/utils/lnetctl.c jt_ping,
// yaml_lnet_ping_display; liblnetconfig.c infra_ping_nid; cyaml.c print_string).
describe("lnetctl ping answers as 2.12–2.17 print them", () => {
  const NID = "10.0.0.5@tcp";
  const run = (over: Partial<CommandResult>): CommandResult => ({ ok: false, exitCode: 255, stdout: "", stderr: "", error: "exit status 255", truncated: false, outcome: "error", ...over });
  const ioctlError = (text: string) => `manage:\n    - ping:\n          errno: -1\n          descr: failed to ping ${NID}: ${text}\n                 \n`;
  const netlinkError = (errno: number, text: string) => `manage:\n  - ping: ""\n    errno: ${errno}\n    descr: "failed to ping ${NID}: ${text}"\n`;

  it("up to 2.15 the errno line is lnetctl's -1 and the cause is descr's strerror text (on stderr)", () => {
    expect(interpretPing(NID, run({ stderr: ioctlError("Input/output error") }), 0)).toEqual({ kind: "fail", errno: 5 });
    expect(interpretPing(NID, run({ stderr: ioctlError("No route to host") }), 0)).toEqual({ kind: "fail", errno: 113 });
    expect(interpretPing(NID, run({ stderr: ioctlError("Network is down") }), 0)).toEqual({ kind: "error", code: "errno100" });
    expect(interpretPing(NID, run({ stderr: ioctlError("No such device") }), 0)).toEqual({ kind: "error", code: "errno19" });
    // lnetctl could not start (no /dev/lnet): its own startup error, no cause named.
    expect(interpretPing(NID, run({ stderr: "lnetctl:\n    - startup:\n          errno: -1\n          descr: cannot register LNet device\n" }), 0)).toEqual({ kind: "error", code: "errno1" });
  });

  it("2.16+ put the kernel's errno on stdout", () => {
    expect(interpretPing(NID, run({ stdout: netlinkError(-110, "Connection timed out") }), 0)).toEqual({ kind: "timeout" });
    expect(interpretPing(NID, run({ stdout: netlinkError(-5, "Input/output error") }), 0)).toEqual({ kind: "fail", errno: 5 });
    expect(interpretPing(NID, run({ stdout: netlinkError(-101, "Network is unreachable") }), 0)).toEqual({ kind: "fail", errno: 101 });
  });

  it("an answer names the NID as primary nid or under peer ni / peer_ni, @tcp0 printed @tcp; an empty exit 0 is no answer", () => {
    const ok = (stdout: string) => run({ ok: true, exitCode: 0, error: null, outcome: "ok", stdout });
    const ioctlReply = `ping:\n    - primary nid: ${NID}\n      Multi-Rail: True\n      peer ni:\n        - nid: ${NID}\n`;
    const netlinkReply = "ping:\n  - primary nid: 10.9.0.5@o2ib\n    Multi-Rail: True\n    peer_ni:\n      - nid: 10.9.0.5@o2ib\n      - nid: 10.0.0.5@tcp\n";
    expect(interpretPing(NID, ok(ioctlReply), 3)).toEqual({ kind: "ok", ms: 3 });
    expect(interpretPing(NID, ok(netlinkReply), 3)).toEqual({ kind: "ok", ms: 3 });
    expect(interpretPing("10.0.0.5@TCP0", ok(ioctlReply), 3)).toEqual({ kind: "ok", ms: 3 });
    expect(interpretPing("10.0.0.6@tcp", ok(ioctlReply), 3)).toEqual({ kind: "error", code: "EBADMSG" });
    // An lnetctl that does not know an option returns 0 having printed nothing (jt_ping's getopt default).
    expect(interpretPing(NID, ok(""), 3)).toEqual({ kind: "error", code: "EBADMSG" });
    expect(canonicalNid("10.0.0.5@o2ib0")).toBe("10.0.0.5@o2ib");
    expect(canonicalNid("10.0.0.5@tcp10")).toBe("10.0.0.5@tcp10");
  });

  it("--timeout is whole seconds, never 0 or 1 (LNet's 180 s), and the default is within that", () => {
    const room = { start: () => Promise.reject(new Error("not started")), env: {} } as unknown as ConstructorParameters<typeof ServerPinger>[0]["room"];
    for (const timeoutSeconds of [0, 1, 1.5, 180]) expect(() => new ServerPinger({ ...SERVER_PING_DEFAULTS, timeoutSeconds, room })).toThrow(RangeError);
    expect(() => new ServerPinger({ ...SERVER_PING_DEFAULTS, room })).not.toThrow();
  });
});

describe("lnet.server_pings on a fake node", () => {
  async function catalogOn(n: FakeLustre) {
    let clock = 1_000_000;
    const catalog = await SourceCatalog.create({
      procfs: n.procfs,
      sysfs: n.sysfs,
      env: n.env,
      logger: silentLogger,
      now: () => clock,
      serverPings: { waitMs: 1500, boundMs: 15_000 },
    });
    cleanups.push(() => catalog.stop());
    const read = async () => {
      clock += 5_000; // past every cache TTL: each read reads anew
      return (await catalog.read("lnet.server_pings", {})).stdout;
    };
    return { catalog, read, advance: (ms: number) => (clock += ms) };
  }

  it("pings each server once per interval, the second NID of a pair only when the first does not answer, and a hung ping costs one process", async () => {
    const n = node();
    const c = await catalogOn(n);
    const first = await c.read();
    expect(first.split("\n").filter(Boolean)).toEqual([
      `server lustrefs mgs MGS ${MGS[0]}=${first.match(/=(ok\/\d+)/)![1]} ${MGS[1]}=skipped`,
      expect.stringMatching(new RegExp(`^server lustrefs oss OST0000,OST0001 ${OSS_PAIR[0]}=ok/\\d+ ${OSS_PAIR[1]}=skipped$`)),
      expect.stringMatching(new RegExp(`^server lustrefs oss OST0002,OST0003 ${OSS}=ok/\\d+$`)),
      expect.stringMatching(new RegExp(`^server lustrefs mds MDT0000 ${MDS}=ok/\\d+$`)),
    ]);
    expect(Object.fromEntries(pingCalls(n))).toEqual({ [MGS[0]!]: 1, [OSS_PAIR[0]!]: 1, [OSS]: 1, [MDS]: 1 });

    // Within the interval (30 s): answered from memory, nothing runs.
    await c.read();
    await c.read();
    expect([...pingCalls(n).values()].reduce((a, b) => a + b)).toBe(4);

    // The OSS stops answering: after the interval, one ping each; the pair's first NID failing brings its second in.
    answers(n, { [OSS]: "timeout", [OSS_PAIR[0]!]: "unreachable" });
    c.advance(30_000);
    const after = await c.read();
    expect(after).toContain(`${OSS}=timeout`);
    expect(after).toMatch(new RegExp(`${OSS_PAIR[0]}=fail/113 ${OSS_PAIR[1]}=ok/\\d+`));
    expect(Object.fromEntries(pingCalls(n))).toEqual({ [MGS[0]!]: 2, [OSS_PAIR[0]!]: 2, [OSS_PAIR[1]!]: 1, [OSS]: 2, [MDS]: 2 });
    expect(n.calls("ping").every((l) => / ping --timeout=5 [^ ]+$/.test(l))).toBe(true);

    // A 2.15 node: every unanswered ping is EIO, its cause only in descr (errno -1 on stderr).
    answers(n, { [OSS]: "eio" });
    c.advance(30_000);
    expect(await c.read()).toContain(`${OSS}=fail/5`);

    // The MDS ping hangs: pending within LNet's timeout, hung past the bound, never started again beside itself.
    answers(n, { [MDS]: "hang" });
    c.advance(30_000);
    expect(await c.read()).toContain(`${MDS}=ok/`); // still the last answer while the new ping runs
    c.advance(16_000);
    expect(await c.read()).toMatch(new RegExp(`${MDS}=hung/\\d+`));
    c.advance(60_000);
    expect(await c.read()).toMatch(new RegExp(`${MDS}=hung/\\d+`));
    expect(pingCalls(n).get(MDS)).toBe(4);
    expect(c.catalog.serverPingsOutstanding()).toBe(1);
  });

  it("a read at the interval's own cadence but a little early pings (reads every 30 s do not skip every other ping); one earlier than a tenth of it does not", async () => {
    const n = node();
    const c = await catalogOn(n);
    await c.read();
    expect(pingCalls(n).get(MDS)).toBe(1);
    c.advance(24_000); // + the read's 5 s: 29 s after the last ping started
    await c.read();
    expect(pingCalls(n).get(MDS)).toBe(2);
    c.advance(22_000); // 27 s: within the interval less its tenth (28 s)
    await c.read();
    expect(pingCalls(n).get(MDS)).toBe(2);
  });

  it("bad input: an unparseable source, garbage from lnetctl, lnetctl missing, LNet down: said, never ok", async () => {
    const n = node("mgs.example.com@tcp:/lustrefs");
    const c = await catalogOn(n);
    answers(n, { [MDS]: "garbage" });
    const out = await c.read();
    expect(out).toContain('unparsed lustrefs "mount source \\"mgs.example.com@tcp:/lustrefs\\": \\"mgs.example.com@tcp\\" is not a NID"');
    expect(out).toContain(`${MDS}=error/EBADMSG`);
    expect(out).not.toContain("mgs ");

    n.missing("lnetctl");
    c.advance(30_000);
    expect(await c.read()).toContain(`${OSS}=error/ENOENT`);
    n.restore("lnetctl");

    // No per-NID table: the fake answers as lnetctl does with LNet down (errno -100).
    n.clear("ping");
    rmSync(join(n.dir, "ping_nids.json"));
    c.advance(30_000);
    expect(await c.read()).toContain(`${OSS}=error/errno100`);
  });

  it("no Lustre mounted: no server, no ping, no imports listing run", async () => {
    const n = fakeLustre({ base: "healthy" });
    cleanups.push(() => n.cleanup());
    writeFileSync(join(n.procfs, "1", "mounts"), "/dev/sda1 / ext4 rw 0 0\n");
    const c = await catalogOn(n);
    expect(await c.read()).toBe("");
    expect(n.calls("ping")).toEqual([]);
    expect(n.calls("imports")).toEqual([]);
  });
});

describe("the lnet-servers plugin in storage health, imports FULL throughout", () => {
  it("a lost OSS, then every MDS: entries of their own appear beside the import checks' and go when pings answer again", async () => {
    const n = node();
    const plugins = join(n.dir, "health-plugins");
    mkdirSync(plugins);
    for (const p of ["lustre-imports", "lnet-servers"]) copyFileSync(join(ROOT, "dist/plugins", `${p}.wasm`), join(plugins, `${p}.wasm`));
    const catalog = await SourceCatalog.create({
      procfs: n.procfs,
      sysfs: n.sysfs,
      env: n.env,
      logger: silentLogger,
      serverPings: { intervalMs: 0, waitMs: 2000 },
    });
    const { engine, health } = await startChecks(catalog, plugins, cleanups);
    const round = async () => {
      await new Promise((r) => setTimeout(r, 2100)); // past the command cache
      await engine.refresh();
    };
    await waitFor(() => health.view.hasStorageChecks(), "storage checks loaded");
    expect(health.view.storage()).toEqual([]);
    expect(engine.snapshot().conditions.find((c) => c.name === "lnet-servers")).toMatchObject({ probe: "storage", status: "pass" });

    answers(n, { [OSS]: "timeout" });
    await round();
    expect(health.view.storage()).toMatchObject([{ status: "STORAGE_DEGRADED", reason: "LnetOssUnreachable", fs: "lustrefs", check: "lnet-servers" }]);
    expect(health.view.storage()[0]!.message).toContain(`OST0002/OST0003 on ${OSS} (timeout)`);

    answers(n, { [OSS]: "timeout", [MDS]: "unreachable", [MGS[0]!]: "timeout", [MGS[1]!]: "timeout" });
    await round();
    const entries = health.view.storage();
    expect(entries.map((e) => [e.status, e.reason])).toEqual(
      expect.arrayContaining([
        ["STORAGE_UNREACHABLE", "LnetMdsUnreachable"],
        ["STORAGE_DEGRADED", "LnetOssUnreachable"],
        ["STORAGE_DEGRADED", "LnetMgsUnreachable"],
      ]),
    );
    expect(entries.find((e) => e.reason === "LnetMdsUnreachable")!.message).toContain(`no MDS answers: MDT0000 on ${MDS} (fail 113)`);
    // The imports still read FULL: lustre-imports has nothing to say.
    expect(entries.every((e) => e.check === "lnet-servers")).toBe(true);
    expect(engine.snapshot().conditions.find((c) => c.name === "lustre-imports")).toMatchObject({ status: "pass" });

    answers(n);
    await round();
    expect(health.view.storage()).toEqual([]);
  });
});

describe("lnet-self-ping with peers: readiness toward the configured peers", () => {
  const SELF = "10.0.0.10@tcp"; // the healthy scenario's NID

  async function checksOn(n: FakeLustre, config: string | null) {
    const plugins = join(n.dir, "ready-plugins");
    mkdirSync(plugins);
    for (const p of ["lnet-nids", "lnet-self-ping"]) copyFileSync(join(ROOT, "dist/plugins", `${p}.wasm`), join(plugins, `${p}.wasm`));
    if (config !== null) writeFileSync(join(plugins, "lnet-self-ping.yaml"), config);
    const catalog = await SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silentLogger, serverPings: { intervalMs: 0, waitMs: 2000 } });
    const { engine } = await startChecks(catalog, plugins, cleanups);
    const round = async () => {
      await new Promise((r) => setTimeout(r, 2100));
      await engine.refresh();
    };
    const selfPing = () => engine.snapshot().conditions.find((c) => c.name === "lnet-self-ping")!;
    return { engine, round, selfPing };
  }

  it("unset: the self-ping decides, and a lost server changes nothing", async () => {
    const n = node();
    answers(n, { [SELF]: "ok", [MGS[0]!]: "timeout", [MGS[1]!]: "timeout" });
    const c = await checksOn(n, null);
    expect(c.selfPing()).toMatchObject({ status: "pass", reason: "SelfPingOk" });
    expect(c.engine.snapshot().ready).toBe(true);
    expect(n.calls("ping").filter((l) => l.endsWith(MGS[0]!))).toEqual([]);
  });

  it("require any: ready while one MGS answers, not ready when none does, ready again when one is back; all: both needed", async () => {
    const n = node();
    answers(n, { [SELF]: "ok" });
    const c = await checksOn(n, `peers: [${MGS.join(", ")}]\n`);
    expect(c.selfPing()).toMatchObject({ status: "pass", reason: "PeersReachable" });
    expect(c.selfPing().message).toContain("2 of 2 peer(s) answer");

    answers(n, { [SELF]: "ok", [MGS[0]!]: "timeout" });
    await c.round();
    expect(c.selfPing()).toMatchObject({ status: "pass", reason: "PeersReachable" });
    expect(c.engine.snapshot().ready).toBe(true);

    answers(n, { [SELF]: "ok", [MGS[0]!]: "timeout", [MGS[1]!]: "unreachable" });
    await c.round();
    expect(c.selfPing()).toMatchObject({ status: "fail", reason: "PeersUnreachable" });
    expect(c.selfPing().message).toContain(`no answer from ${MGS[0]} (timeout), ${MGS[1]} (fail 113)`);
    expect(c.engine.snapshot().ready).toBe(false);

    answers(n, { [SELF]: "ok", [MGS[0]!]: "timeout" });
    await c.round();
    expect(c.engine.snapshot().ready).toBe(true);

    writeFileSync(join(n.dir, "ready-plugins", "lnet-self-ping.yaml"), `peers: [${MGS.join(", ")}]\nrequire: all\n`);
    await waitFor(async () => {
      await c.round();
      return c.selfPing().reason === "PeersUnreachable";
    }, "require: all applied", 20_000);
    expect(c.engine.snapshot().ready).toBe(false);
  });

  it("a peer that is not a NID is refused with a clear reason, never ready by default", async () => {
    const n = node();
    answers(n, { [SELF]: "ok" });
    const c = await checksOn(n, "peers: [mgs.example.com@tcp]\n");
    expect(c.selfPing()).toMatchObject({ status: "fail", reason: "PeersUnchecked" });
    expect(c.selfPing().message).toContain("not a list of valid NIDs");
    expect(c.engine.snapshot().ready).toBe(false);
  });
});

describe("multi-rail: peer NI health (lnet-peer-health) in storage health", () => {
  const peerShow = (hv: number) =>
    `peer:\n    - primary nid: ${OSS}\n      Multi-Rail: True\n      peer ni:\n        - nid: ${OSS}\n          state: NA\n          health stats:\n              health value: 1000\n              dropped: 0\n              timeout: 0\n              error: 0\n              network timeout: 0\n        - nid: 10.1.0.7@tcp1\n          state: NA\n          health stats:\n              health value: ${hv}\n              dropped: 0\n              timeout: ${hv < 1000 ? 7 : 0}\n              error: 0\n              network timeout: 0\n`;

  it("a server's second rail below full health: an entry naming that peer NI while degraded, gone when it recovers", async () => {
    const n = node();
    writeFileSync(join(n.dir, "peer_show.out"), peerShow(1000));
    const plugins = join(n.dir, "mr-plugins");
    mkdirSync(plugins);
    copyFileSync(join(ROOT, "dist/plugins", "lnet-peer-health.wasm"), join(plugins, "lnet-peer-health.wasm"));
    const catalog = await SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silentLogger });
    const { engine, health } = await startChecks(catalog, plugins, cleanups);
    const round = async () => {
      await new Promise((r) => setTimeout(r, 2100));
      await engine.refresh();
    };
    expect(health.view.storage()).toEqual([]);
    writeFileSync(join(n.dir, "peer_show.out"), peerShow(870));
    await round();
    expect(health.view.storage()).toMatchObject([{ status: "STORAGE_DEGRADED", reason: "LnetPeerNiDegraded", check: "lnet-peer-health" }]);
    expect(health.view.storage()[0]!.message).toContain(`10.1.0.7@tcp1 of peer ${OSS} (health value 870; timeout 7)`);
    writeFileSync(join(n.dir, "peer_show.out"), peerShow(1000));
    await round();
    expect(health.view.storage()).toEqual([]);
    expect(n.calls("peer_show").every((l) => l.includes("peer show -v 3"))).toBe(true);
  });
});
