import { Writable } from "node:stream";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { SourceCatalog, type SourceCatalogOptions } from "../src/engine/sources/index.js";
import { Metrics } from "../src/observability/metrics.js";
import { fakeLnet, type FakeLnet, type FakeLnetSpec } from "./helpers/fake-lnet.js";

const silent = pino({ level: "silent" });
const nodes: FakeLnet[] = [];

function node(spec: FakeLnetSpec): FakeLnet {
  const n = fakeLnet(spec);
  nodes.push(n);
  return n;
}

function catalogFor(n: FakeLnet, extra: Partial<SourceCatalogOptions> = {}): Promise<SourceCatalog> {
  return SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silent, ...extra });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(() => {
  for (const n of nodes.splice(0)) n.cleanup();
});

describe("built-in sources on the healthy demo node", () => {
  it("reads proc.mounts from PID 1's mount table under the procfs root", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n);
    const r = await catalog.read("proc.mounts", {});
    expect(r.ok).toBe(true);
    expect(r.stdout).toMatch(/ lustre /);
    expect(catalog.describe().find((d) => d.name === "proc.mounts")?.path).toBe(`${n.procfs}/1/mounts`);
  });

  it("lists the ABI catalog with its parameters", async () => {
    const catalog = await catalogFor(node({ base: "healthy" }));
    expect(catalog.names()).toEqual([
      "lnetctl.net_show",
      "lctl.list_nids",
      "lnetctl.ping",
      "proc.modules",
      "proc.mounts",
      "sys.net.operstate",
      "kernel.release",
      "kernel.modules_dep",
      "modprobe.lnet_options",
      "mount_lustre.version",
      "lctl.imports",
      "lctl.import_states",
      "lfs.getname",
      "lustre.health_check",
      "lnetctl.net_show_health",
      "lnetctl.peer_show_health",
      "volume.statfs",
      "lnet.server_pings",
      "lnet.peer_pings",
    ]);
    expect(catalog.requiredFacts("lnet.peer_pings")).toEqual(["config.peers"]);
    expect(catalog.has("lnetctl.ping")).toBe(true);
    expect(catalog.has("lnetctl.peer_show")).toBe(false);
    expect(catalog.requiredFacts("lnetctl.ping")).toEqual(["lnet.selfNid"]);
    expect(catalog.requiredFacts("sys.net.operstate")).toEqual(["lnet.interfaces"]);
    expect(catalog.requiredFacts("lnetctl.net_show")).toEqual([]);
    const byName = Object.fromEntries(catalog.describe().map((d) => [d.name, d]));
    expect(byName["lnetctl.ping"]).toEqual({
      name: "lnetctl.ping",
      kind: "command",
      argv: ["lnetctl", "ping", "--timeout=5", "{lnet.selfNid}"],
      timeoutMs: 10_000,
      ttlMs: 10_000,
      params: ["lnet.selfNid"],
    });
    expect(byName["proc.modules"]).toMatchObject({ kind: "file", ttlMs: 1000, params: [] });
    expect(byName["lnetctl.net_show"]).toMatchObject({ timeoutMs: 3000, ttlMs: 2000 });
    // For lnetConfiguredAt: mount: a presence check run once a minute, files under the configured roots.
    expect(byName["mount_lustre.version"]).toMatchObject({ kind: "command", argv: ["mount.lustre", "-V"], timeoutMs: 3000, ttlMs: 60_000 });
    expect(byName["kernel.modules_dep"]).toMatchObject({ kind: "file", path: "/lib/modules/{release}/modules.dep", params: [] });
    expect(byName["modprobe.lnet_options"]).toMatchObject({ kind: "file", path: "/etc/modprobe.d/*.conf", params: [] });
    // The statfs prober's results for a volume's paths (facts set by the volume evaluation), cached a second.
    expect(byName["volume.statfs"]).toMatchObject({ kind: "file", path: "statfs({volume.stagingPath}), statfs({volume.path})", ttlMs: 1000, params: [] });
  });

  it("runs lnetctl net show and lctl list_nids through PATH", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n);
    const before = Date.now();
    const show = await catalog.read("lnetctl.net_show", {});
    expect(show).toMatchObject({ ok: true, exitCode: 0, error: null, truncated: false, stderr: "" });
    expect(show.stdout).toContain("nid: 10.0.0.10@tcp");
    expect(show.fetchedAtMs).toBeGreaterThanOrEqual(before);
    const nids = await catalog.read("lctl.list_nids", {});
    expect(nids).toMatchObject({ ok: true, exitCode: 0, stdout: "10.0.0.10@tcp\n" });
    // The plain `net show` is served from the one `net show -v 3` run (net-show-plain.ts).
    expect(n.calls()).toEqual(["net_show_health lnetctl net show -v 3", "list_nids lctl list_nids"]);
  });

  it("pings the NID from the lnet.selfNid fact", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n);
    const r = await catalog.read("lnetctl.ping", { "lnet.selfNid": "10.0.0.10@tcp" });
    expect(r).toMatchObject({ ok: true, exitCode: 0 });
    expect(r.stdout).toContain("primary nid: 10.0.0.10@tcp");
    expect(n.calls("ping")).toEqual(["ping lnetctl ping --timeout=5 10.0.0.10@tcp"]);
    const other = await catalog.read("lnetctl.ping", { "lnet.selfNid": "10.0.0.99@tcp" });
    expect(other).toMatchObject({ ok: false, exitCode: 1, error: "exit status 1" });
    expect(other.stderr).toContain("failed to ping 10.0.0.99@tcp");
  });

  it("refuses to ping without a valid NID, and runs nothing", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n);
    expect(await catalog.read("lnetctl.ping", {})).toMatchObject({
      ok: false,
      exitCode: null,
      error: "fact lnet.selfNid is not available",
    });
    expect((await catalog.read("lnetctl.ping", { "lnet.selfNid": "" })).error).toBe(
      "fact lnet.selfNid is not available",
    );
    expect((await catalog.read("lnetctl.ping", { "lnet.selfNid": "--help" })).error).toBe(
      'fact lnet.selfNid is not a valid NID: "--help"',
    );
    expect((await catalog.read("lnetctl.ping", { "lnet.selfNid": "1.2.3.4@tcp x" })).error).toBe(
      'fact lnet.selfNid is not a valid NID: "1.2.3.4@tcp x"',
    );
    expect(n.calls()).toEqual([]);
  });

  it("reads /proc/modules from the procfs root", async () => {
    const catalog = await catalogFor(node({ base: "healthy" }));
    const r = await catalog.read("proc.modules", {});
    expect(r).toMatchObject({ ok: true, exitCode: null, error: null, truncated: false });
    expect(r.stdout).toMatch(/^lnet 745472 /m);
    expect(r.stdout).toMatch(/^lustre /m);
  });

  it("reads operstate for each interface in lnet.interfaces", async () => {
    const catalog = await catalogFor(node({ base: "healthy" }));
    const r = await catalog.read("sys.net.operstate", { "lnet.interfaces": "eth0, lo,ib0,eth0," });
    expect(r).toMatchObject({ ok: true, exitCode: null, error: null });
    expect(r.stdout).toBe("eth0 up\nlo unknown\nib0 absent\n");
    const none = await catalog.read("sys.net.operstate", { "lnet.interfaces": "" });
    expect(none).toMatchObject({ ok: true, stdout: "" });
  });

  it("rejects unsafe interface names before touching the filesystem", async () => {
    const catalog = await catalogFor(node({ base: "healthy" }));
    expect((await catalog.read("sys.net.operstate", {})).error).toBe("fact lnet.interfaces is not available");
    for (const bad of ["..", "eth0/../../..", "eth0:1", "x y"]) {
      const r = await catalog.read("sys.net.operstate", { "lnet.interfaces": `eth0,${bad}` });
      expect(r).toMatchObject({ ok: false, stdout: "" });
      expect(r.error).toBe(`fact lnet.interfaces contains an invalid interface name: ${JSON.stringify(bad)}`);
    }
  });

  it("answers unknown sources without throwing", async () => {
    const catalog = await catalogFor(node({ base: "healthy" }));
    expect(await catalog.read("nope", {})).toMatchObject({ ok: false, error: "unknown source nope" });
    expect(catalog.requiredFacts("nope")).toEqual([]);
  });
});

describe("failures", () => {
  it("reports a missing binary as ENOENT on PATH", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n, { env: { ...n.env, PATH: "/nonexistent:relative/dir" } });
    expect(await catalog.read("lnetctl.net_show", {})).toEqual({
      ok: false,
      exitCode: null,
      stdout: "",
      stderr: "",
      error: "ENOENT: lnetctl not found on PATH",
      truncated: false,
      fetchedAtMs: expect.any(Number),
    });
    expect((await catalog.read("lctl.list_nids", {})).error).toBe("ENOENT: lctl not found on PATH");
  });

  it("keeps stdout and stderr of a failing command", async () => {
    const n = node({ netShow: { out: "show:\n  - net:\n      errno: -22\n", err: "oops\n", exit: 3 } });
    const r = await (await catalogFor(n)).read("lnetctl.net_show", {});
    expect(r).toMatchObject({ ok: false, exitCode: 3, error: "exit status 3", stderr: "oops\n" });
    expect(r.stdout).toContain("errno: -22");
  });

  it("answers like unconfigured LNet when the scenario has no output", async () => {
    const n = node({ base: "lnet-down" });
    const catalog = await catalogFor(n);
    const show = await catalog.read("lnetctl.net_show", {});
    expect(show).toMatchObject({ ok: false, exitCode: 1, error: "exit status 1" });
    expect(show.stderr).toContain("errno: -100");
    const nids = await catalog.read("lctl.list_nids", {});
    expect(nids).toMatchObject({ ok: false, exitCode: 1 });
    const modules = await catalog.read("proc.modules", {});
    expect(modules.stdout).not.toMatch(/^lnet /m);
  });

  it("decodes binary garbage without crashing", async () => {
    const garbage = Buffer.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x6e, 0x69, 0x64, 0xe2, 0x82, 0x0a]);
    const n = node({ netShow: { out: garbage, err: garbage }, modules: garbage as unknown as string });
    const catalog = await catalogFor(n);
    const r = await catalog.read("lnetctl.net_show", {});
    expect(r.ok).toBe(true);
    expect(r.stdout).toContain("\uFFFD");
    expect(r.stdout).toContain("nid");
    expect(r.stderr).toContain("\uFFFD");
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
    expect((await catalog.read("proc.modules", {})).stdout).toContain("\uFFFD");
  });

  it("reports unreadable files with the path", async () => {
    const n = node({});
    const r = await (await catalogFor(n)).read("proc.modules", {});
    expect(r).toEqual({
      ok: false,
      exitCode: null,
      stdout: "",
      stderr: "",
      error: `ENOENT: ${n.procfs}/modules does not exist`,
      truncated: false,
      fetchedAtMs: expect.any(Number),
    });
  });

  it("cuts file sources at the output cap", async () => {
    const n = node({ modules: "lnet 1 0 - Live\n".repeat(1000) });
    const catalog = await catalogFor(n, { defaults: { maxOutputBytes: 100 } });
    const r = await catalog.read("proc.modules", {});
    expect(r).toMatchObject({ ok: false, truncated: true, error: `EFBIG: ${n.procfs}/modules exceeded 100 bytes` });
    expect(r.stdout).toHaveLength(100);
  });

  it("cuts command output at the cap without splitting a character", async () => {
    const n = node({ netShow: { out: "é".repeat(5000) } });
    const catalog = await catalogFor(n, { defaults: { maxOutputBytes: 1001 } });
    const r = await catalog.read("lnetctl.net_show", {});
    expect(r).toMatchObject({
      ok: false,
      exitCode: null,
      truncated: true,
      error: "EFBIG: lnetctl net show output exceeded 1001 bytes",
    });
    expect(r.stdout).toBe("é".repeat(500));
  });

  it("times out a hanging ping after its own timeout", async () => {
    const n = node({ base: "healthy", ping: { delayMs: 10 ** 12 } });
    const catalog = await catalogFor(n, { defaults: { pingTimeoutMs: 300 } });
    const r = await catalog.read("lnetctl.ping", { "lnet.selfNid": "10.0.0.10@tcp" });
    expect(r).toMatchObject({
      ok: false,
      exitCode: null,
      error: "ETIMEDOUT: lnetctl ping timed out after 300 ms",
      stdout: "",
    });
    // Other commands keep their own (default) timeout.
    expect((await catalog.read("lnetctl.net_show", {})).ok).toBe(true);
  });
});

describe("caching", () => {
  it("runs a command once for a thousand concurrent reads", async () => {
    const n = node({ base: "healthy", netShow: { delayMs: 100 } });
    const catalog = await catalogFor(n);
    const results = await Promise.all(Array.from({ length: 1000 }, () => catalog.read("lnetctl.net_show", {})));
    expect(n.calls("net_show")).toHaveLength(1);
    expect(new Set(results).size).toBe(1);
    expect(results[0]?.ok).toBe(true);
    // Still cached right after.
    await catalog.read("lnetctl.net_show", {});
    expect(n.calls("net_show")).toHaveLength(1);
  });

  it("caches ping per NID", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n);
    const reads = Array.from({ length: 200 }, (_, i) =>
      catalog.read("lnetctl.ping", { "lnet.selfNid": i % 2 ? "10.0.0.10@tcp" : "10.0.0.11@tcp" }),
    );
    await Promise.all(reads);
    expect(n.calls("ping").sort()).toEqual(["ping lnetctl ping --timeout=5 10.0.0.10@tcp", "ping lnetctl ping --timeout=5 10.0.0.11@tcp"]);
  });

  it("runs again once the TTL has expired", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n, { defaults: { commandTtlMs: 1500, fileTtlMs: 1500 } });
    const first = await catalog.read("lctl.list_nids", {});
    expect(await catalog.read("lctl.list_nids", {})).toBe(first);
    expect(n.calls("list_nids")).toHaveLength(1);
    n.update({ listNids: { out: "0@lo\n" } });
    await sleep(1700);
    const second = await catalog.read("lctl.list_nids", {});
    expect(n.calls("list_nids")).toHaveLength(2);
    expect(second.stdout).toBe("0@lo\n");
    expect(second.fetchedAtMs).toBeGreaterThan(first.fetchedAtMs);
  });

  it("caches failures too, so a broken tool is not hammered", async () => {
    const n = node({ listNids: { exit: 1 } });
    const catalog = await catalogFor(n);
    await Promise.all([catalog.read("lctl.list_nids", {}), catalog.read("lctl.list_nids", {})]);
    await catalog.read("lctl.list_nids", {});
    expect(n.calls("list_nids")).toHaveLength(1);
  });
});

describe("command prefix", () => {
  it("prepends the prefix and checks the prefix program on PATH", async () => {
    const n = node({ base: "healthy" });
    const catalog = await catalogFor(n, { commandPrefix: ["env", "PROBEGATE_PREFIXED=1"] });
    expect(catalog.describe().find((d) => d.name === "lctl.list_nids")?.argv).toEqual([
      "env",
      "PROBEGATE_PREFIXED=1",
      "lctl",
      "list_nids",
    ]);
    expect((await catalog.read("lctl.list_nids", {})).stdout).toBe("10.0.0.10@tcp\n");

    const missing = await catalogFor(n, { commandPrefix: ["nsenter-not-installed", "--"] });
    expect((await missing.read("lctl.list_nids", {})).error).toBe("ENOENT: nsenter-not-installed not found on PATH");
  });
});

describe("observability", () => {
  it("counts executions by result, timeouts and errors", async () => {
    const n = node({ base: "healthy", ping: { delayMs: 10 ** 12 } });
    const metrics = new Metrics({ processMetrics: false });
    const catalog = await catalogFor(n, { metrics, defaults: { pingTimeoutMs: 200 } });
    await Promise.all([catalog.read("lctl.list_nids", {}), catalog.read("lctl.list_nids", {})]);
    await catalog.read("lnetctl.ping", { "lnet.selfNid": "10.0.0.10@tcp" });
    await catalog.read("proc.modules", {});
    const values = async (c: { get(): Promise<{ values: Array<{ labels: object; value: number }> }> }) =>
      (await c.get()).values.map((v) => ({ ...v.labels, value: v.value }));
    expect(await values(metrics.sourceExecutions)).toEqual(
      expect.arrayContaining([
        { source: "lctl.list_nids", result: "ok", value: 1 },
        { source: "lnetctl.ping", result: "timeout", value: 1 },
        { source: "proc.modules", result: "ok", value: 1 },
      ]),
    );
    // Every source read has its series, from 0 (so rate() sees the first timeout); only the ping counted one.
    const nonZero = async (c: Parameters<typeof values>[0]) => (await values(c)).filter((v) => v.value !== 0);
    expect(await nonZero(metrics.sourceTimeouts)).toEqual([{ source: "lnetctl.ping", value: 1 }]);
    expect(await nonZero(metrics.sourceErrors)).toEqual([{ source: "lnetctl.ping", value: 1 }]);
    for (const c of [metrics.sourceTimeouts, metrics.sourceErrors]) {
      expect((await values(c)).map((v) => (v as { source?: string }).source).sort()).toEqual(["lctl.list_nids", "lnetctl.ping", "proc.modules"]);
    }
    const duration = (await metrics.sourceDuration.get()).values.find(
      (v) => v.metricName === "probegate_source_duration_seconds_count" && v.labels.source === "lctl.list_nids",
    );
    expect(duration?.value).toBe(1);
  });

  it("logs each execution at debug, without the output", async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const logger = pino({ level: "debug" }, sink);
    const n = node({ listNids: { out: "SECRET-LOOKING-OUTPUT\n" } });
    await (await catalogFor(n, { logger })).read("lctl.list_nids", {});
    const records = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ level: 20, source: "lctl.list_nids", result: "ok", exitCode: 0 });
    expect(lines.join("")).not.toContain("SECRET-LOOKING-OUTPUT");
  });
});
