// The demo node (gateway/demo): scenario lookup, the fake LNet tools, and the
// three scenarios as the source catalog sees them.

import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { demoBinDir, demoScenarioDir, listDemoScenarios } from "../src/engine/sources/demo.js";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { fakeLnet, type FakeLnet } from "./helpers/fake-lnet.js";

const silent = pino({ level: "silent" });
const nodes: FakeLnet[] = [];
afterEach(() => {
  for (const n of nodes.splice(0)) n.cleanup();
});

async function scenario(base: string) {
  const n = fakeLnet({ base });
  nodes.push(n);
  const catalog = await SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silent });
  const facts = { "lnet.selfNid": "10.0.0.10@tcp", "lnet.interfaces": "eth0" };
  const read = async (name: string) => catalog.read(name, facts);
  return { n, read };
}

describe("demo scenarios", () => {
  it("resolves scenario directories from the package root", () => {
    expect(listDemoScenarios()).toEqual(expect.arrayContaining(["healthy", "lnet-down", "ni-down"]));
    const dir = demoScenarioDir("healthy");
    expect(dir.endsWith(join("gateway", "demo", "scenarios", "healthy"))).toBe(true);
    expect(existsSync(join(dir, "net_show.out"))).toBe(true);
    expect(existsSync(join(demoBinDir(), "lnetctl"))).toBe(true);
  });

  it("names the available scenarios when asked for an unknown one", () => {
    expect(() => demoScenarioDir("nope")).toThrow(/unknown demo scenario "nope"; available: .*healthy.*lnet-down.*ni-down/);
    expect(() => demoScenarioDir("../healthy")).toThrow(/unknown demo scenario/);
  });

  it("healthy: every source succeeds", async () => {
    const { read } = await scenario("healthy");
    expect((await read("lnetctl.net_show")).stdout).toMatch(/nid: 10\.0\.0\.10@tcp\n\s+status: up/);
    expect((await read("lctl.list_nids")).stdout).toBe("10.0.0.10@tcp\n");
    expect((await read("lnetctl.ping")).stdout).toContain("primary nid: 10.0.0.10@tcp");
    expect((await read("proc.modules")).stdout).toMatch(/^lnet .*\n(.*\n)*/m);
    expect((await read("sys.net.operstate")).stdout).toBe("eth0 up\n");
  });

  it("ni-down: the NI and eth0 are down and ping fails", async () => {
    const { read } = await scenario("ni-down");
    expect((await read("lnetctl.net_show")).stdout).toMatch(/nid: 10\.0\.0\.10@tcp\n\s+status: down/);
    const ping = await read("lnetctl.ping");
    expect(ping).toMatchObject({ ok: false, exitCode: 1, error: "exit status 1" });
    expect(ping.stderr).toContain("failed to ping 10.0.0.10@tcp");
    expect((await read("sys.net.operstate")).stdout).toBe("eth0 down\n");
  });

  it("lnet-down: tools fail with error documents and the modules are gone", async () => {
    const { read } = await scenario("lnet-down");
    const show = await read("lnetctl.net_show");
    expect(show).toMatchObject({ ok: false, exitCode: 1, stdout: "" });
    expect(show.stderr).toMatch(/errno: -100\n\s+descr: /);
    expect((await read("lctl.list_nids")).stderr).toContain("No such device");
    expect((await read("lnetctl.ping")).stderr).toContain("failed to ping 10.0.0.10@tcp: Network is down");
    expect((await read("proc.modules")).stdout).not.toMatch(/^(lnet|lustre) /m);
  });
});

describe("fake lnetctl", () => {
  const run = (n: FakeLnet, tool: string, args: string[], env: NodeJS.ProcessEnv = n.env) =>
    spawnSync(join(demoBinDir(), tool), args, { env, encoding: "utf8" });

  it("logs every call with its key and argv", () => {
    const n = fakeLnet({ netShow: { out: "net:\n" } });
    nodes.push(n);
    expect(run(n, "lnetctl", ["net", "show", "-v"]).stdout).toBe("net:\n");
    run(n, "lnetctl", ["ping", "1.2.3.4@tcp"]);
    run(n, "lctl", ["list_nids"]);
    expect(n.calls()).toEqual(["net_show lnetctl net show -v", "ping lnetctl ping 1.2.3.4@tcp", "list_nids lctl list_nids"]);
    expect(n.calls("ping")).toHaveLength(1);
  });

  it("answers with .err and .exit, and checks the pinged NID", () => {
    const n = fakeLnet({ netShow: { out: "doc\n", err: "warn\n", exit: 7 }, ping: { out: "pong\n", expectNid: "10.0.0.10@tcp" } });
    nodes.push(n);
    expect(run(n, "lnetctl", ["net", "show"])).toMatchObject({ status: 7, stdout: "doc\n", stderr: "warn\n" });
    expect(run(n, "lnetctl", ["ping", "10.0.0.10@tcp"])).toMatchObject({ status: 0, stdout: "pong\n" });
    const wrong = run(n, "lnetctl", ["ping", "10.0.0.11@tcp"]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain("failed to ping 10.0.0.11@tcp: Input/output error");
  });

  it("can be changed in place by the helper", () => {
    const n = fakeLnet({ base: "healthy" });
    nodes.push(n);
    n.clear("list_nids");
    expect(run(n, "lctl", ["list_nids"]).status).toBe(1);
    n.update({ listNids: { out: "10.9.9.9@tcp\n" }, operstate: { eth1: "up\n" } });
    expect(run(n, "lctl", ["list_nids"]).stdout).toBe("10.9.9.9@tcp\n");
    expect(readFileSync(join(n.sysfs, "class", "net", "eth1", "operstate"), "utf8")).toBe("up\n");
  });

  it("refuses to run without a scenario", () => {
    const n = fakeLnet({});
    nodes.push(n);
    const { PROBEGATE_FAKE_LNET: _omit, ...env } = n.env;
    const r = run(n, "lnetctl", ["net", "show"], env);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("PROBEGATE_FAKE_LNET is not set");
  });
});
