// Every fixture through the real compiled plugins, as the host would call them.
import { beforeAll, describe, expect, it } from "vitest";
import {
  type CheckResult, ensureBuilt, failedSource, fixture, generatedNetShow, input, loadPlugin, okSource,
} from "./harness";

beforeAll(() => ensureBuilt());

type Expect = { status: CheckResult["status"]; reason: string; message?: RegExp; facts?: Record<string, string> | null };

function expectResult(r: CheckResult, e: Expect) {
  expect(r.status).toBe(e.status);
  expect(r.reason).toBe(e.reason);
  expect(r.reason).toMatch(/^[A-Z][A-Za-z0-9]{0,63}$/);
  if (e.message) expect(r.message).toMatch(e.message);
  if (e.facts === null) expect(r.facts).toBeUndefined();
  else if (e.facts) expect(r.facts).toEqual(e.facts);
}

describe("kernel-modules (proc.modules)", () => {
  const run = (text: string) => loadPlugin("kernel-modules").check(input({ "proc.modules": okSource(text, { exitCode: null }) }));
  it.each<[string, Expect]>([
    ["modules/loaded.txt", { status: "pass", reason: "ModulesLoaded" }],
    ["modules/no-lustre.txt", { status: "fail", reason: "ModulesMissing", message: /not loaded: lustre$/ }],
    ["modules/none.txt", { status: "fail", reason: "ModulesMissing", message: /lnet and lustre/ }],
    ["modules/selftest-only.txt", { status: "fail", reason: "ModulesMissing", message: /lnet and lustre/ }],
    ["modules/lustre-unloading.txt", { status: "fail", reason: "ModulesNotLive", message: /lustre \(Unloading\)/ }],
    ["net_show/garbage.txt", { status: "fail", reason: "ParseError", message: /proc\.modules/ }],
    ["net_show/empty.txt", { status: "fail", reason: "ParseError", message: /proc\.modules: output is empty/ }],
    ["net_show/binary.bin", { status: "fail", reason: "ParseError", message: /binary/ }],
  ])("%s", (file, e) => expectResult(run(fixture(file)), e));

  it("accepts a last line cut mid-way", () => {
    const text = fixture("modules/loaded.txt") + "nf_conn";
    expectResult(run(text), { status: "pass", reason: "ModulesLoaded" });
  });
});

describe("lnet-nets (lnetctl.net_show)", () => {
  const run = (text: string) => loadPlugin("lnet-nets").check(input({ "lnetctl.net_show": okSource(text) }));
  const eth0 = { "lnet.interfaces": "eth0" };
  it.each<[string, Expect]>([
    ["net_show/healthy-2.15.yaml", { status: "pass", reason: "NetsUp", facts: eth0 }],
    ["net_show/healthy-2.10-padded.yaml", { status: "pass", reason: "NetsUp", facts: { "lnet.interfaces": "ens3" } }],
    ["net_show/healthy-compact.yaml", { status: "pass", reason: "NetsUp", facts: eth0 }],
    ["net_show/crlf.yaml", { status: "pass", reason: "NetsUp", facts: eth0 }],
    ["net_show/ipv6.yaml", { status: "pass", reason: "NetsUp", facts: eth0 }],
    ["net_show/o2ib.yaml", { status: "pass", reason: "NetsUp", facts: { "lnet.interfaces": "ib0" } }],
    ["net_show/multi-net.yaml", { status: "pass", reason: "NetsUp", message: /^3 non-loopback/, facts: { "lnet.interfaces": "eth0,eth1,ib0" } }],
    ["net_show/verbose.yaml", { status: "pass", reason: "NetsUp", facts: eth0 }],
    ["net_show/stray-noise.yaml", { status: "pass", reason: "NetsUp", message: /ignored 1 non-YAML line/, facts: eth0 }],
    ["net_show/ni-down.yaml", { status: "fail", reason: "NiDown", message: /10\.1\.0\.4@tcp \(down\)/, facts: eth0 }],
    ["net_show/verbose-ni-down.yaml", { status: "fail", reason: "NiDown", message: /10\.1\.0\.4@tcp/ }],
    ["net_show/multi-rail-one-down.yaml", { status: "fail", reason: "NiDown", message: /: 172\.16\.1\.12@o2ib \(down\)$/, facts: { "lnet.interfaces": "ib0,ib1" } }],
    ["net_show/lo-only.yaml", { status: "fail", reason: "NoNonLoopbackNet", facts: null }],
    ["net_show/lnet-down-error.yaml", { status: "fail", reason: "LNetError", message: /errno -100: cannot get networks: Network is down/ }],
    ["net_show/truncated.yaml", { status: "fail", reason: "ParseError", message: /lnetctl\.net_show/ }],
    ["net_show/garbage.txt", { status: "fail", reason: "ParseError", message: /lnetctl\.net_show: no `net:` list; unexpected line 1: Segmentation fault/ }],
    ["net_show/empty.txt", { status: "fail", reason: "ParseError", message: /empty/ }],
    ["net_show/binary.bin", { status: "fail", reason: "ParseError", message: /binary/ }],
  ])("%s", (file, e) => expectResult(run(fixture(file)), e));

  it("never counts 0@lo, even when it is the only NI up", () => {
    const text = fixture("net_show/ni-down.yaml");
    expect(text).toContain("0@lo");
    expect(run(text).status).toBe("fail");
  });

  it("names every NI that is not up, including one without a status", () => {
    const text = fixture("net_show/multi-net.yaml")
      .replace("status: up\n          interfaces:\n              0: eth1", "status: down\n          interfaces:\n              0: eth1")
      .replace(/(nid: 172\.16\.3\.12@o2ib3\n)\s+status: up\n/, "$1");
    const r = run(text);
    expectResult(r, { status: "fail", reason: "NiDown", message: /10\.2\.0\.4@tcp1 \(down\) and 172\.16\.3\.12@o2ib3 \(no status\)/ });
  });

  it("drops invalid interface names from lnet.interfaces", () => {
    const text = fixture("net_show/multi-net.yaml").replace("0: eth1", "0: eth1/evil").replace("0: ib0", '0: "a,b"');
    const r = run(text);
    expect(r.facts).toEqual({ "lnet.interfaces": "eth0" });
    expect(r.message).toMatch(/ignored invalid interface name/);
  });

  it("fails on output the host marked truncated", () => {
    const r = loadPlugin("lnet-nets").check(input({ "lnetctl.net_show": okSource(fixture("net_show/healthy-2.15.yaml"), { truncated: true }) }));
    expectResult(r, { status: "fail", reason: "ParseError", message: /truncated/ });
  });

  it("quotes the error of a failed source and lnetctl's descr", () => {
    const r = loadPlugin("lnet-nets").check(
      input({ "lnetctl.net_show": failedSource("exit status 1", { stderr: fixture("net_show/lnet-down-error.yaml") }) }),
    );
    expectResult(r, { status: "fail", reason: "SourceFailed", message: /lnetctl\.net_show failed: exit status 1 \(cannot get networks: Network is down\)/ });
  });

  it("reports a missing command", () => {
    const r = loadPlugin("lnet-nets").check(
      input({ "lnetctl.net_show": failedSource("ENOENT: lnetctl not found on PATH", { exitCode: null }) }),
    );
    expectResult(r, { status: "fail", reason: "SourceFailed", message: /ENOENT: lnetctl not found on PATH/ });
  });

  it("handles a generated 1,024-NI net show, with and without -v", () => {
    for (const verbose of [false, true]) {
      const r = run(generatedNetShow(1024, { verbose }));
      expectResult(r, { status: "pass", reason: "NetsUp", message: /^1024 non-loopback NI/ });
      expect(r.facts!["lnet.interfaces"].split(",")).toHaveLength(1024);
    }
    const down = run(generatedNetShow(1024, { down: [3, 1000] }));
    expectResult(down, { status: "fail", reason: "NiDown", message: /10\.0\.3\.4@tcp \(down\) and 10\.3\.232\.4@tcp \(down\)/ });
  });

  it("keeps the result under the ABI's 64 KiB even with 1,024 NIs down", () => {
    const all = Array.from({ length: 1024 }, (_, i) => i);
    const raw = loadPlugin("lnet-nets").checkRaw(JSON.stringify(input({ "lnetctl.net_show": okSource(generatedNetShow(1024, { down: all })) })));
    expect(Buffer.byteLength(raw)).toBeLessThan(64 * 1024);
    expect(JSON.parse(raw)).toMatchObject({ status: "fail", reason: "NiDown" });
    expect(JSON.parse(raw).message).toMatch(/and 1014 more$/);
  });
});

describe("lnet-nids (lctl.list_nids)", () => {
  const run = (text: string) => loadPlugin("lnet-nids").check(input({ "lctl.list_nids": okSource(text) }));
  it.each<[string, Expect]>([
    ["list_nids/tcp.txt", { status: "pass", reason: "NidsValid", facts: { "lnet.selfNid": "10.1.0.4@tcp" } }],
    ["list_nids/crlf.txt", { status: "pass", reason: "NidsValid", facts: { "lnet.selfNid": "10.1.0.4@tcp" } }],
    ["list_nids/ipv6.txt", { status: "pass", reason: "NidsValid", facts: { "lnet.selfNid": "2001:db8::4@tcp" } }],
    ["list_nids/multi.txt", { status: "pass", reason: "NidsValid", message: /172\.16\.0\.12@o2ib3 and 10\.1\.0\.4@tcp1/, facts: { "lnet.selfNid": "172.16.0.12@o2ib3" } }],
    ["list_nids/lo-only.txt", { status: "fail", reason: "NoNonLoopbackNid", facts: null }],
    ["list_nids/invalid-nids.txt", { status: "fail", reason: "NoNonLoopbackNid", message: /ignored line\(s\): 999\.1\.0\.4@tcp and 10\.1\.0\.4@TCP/ }],
    ["list_nids/garbage.txt", { status: "fail", reason: "ParseError", message: /lctl\.list_nids: no NID/ }],
    ["net_show/empty.txt", { status: "fail", reason: "ParseError", message: /empty/ }],
    ["net_show/binary.bin", { status: "fail", reason: "ParseError", message: /binary/ }],
  ])("%s", (file, e) => expectResult(run(fixture(file)), e));

  it("fails with LNet down (lctl exits non-zero)", () => {
    const r = loadPlugin("lnet-nids").check(
      input({ "lctl.list_nids": failedSource("exit status 1", { stderr: "opening /dev/lnet failed: No such device\n" }) }),
    );
    expectResult(r, { status: "fail", reason: "SourceFailed", message: /exit status 1 \(opening \/dev\/lnet failed: No such device\)/ });
  });
});

describe("lnet-self-ping (lnetctl.ping)", () => {
  const nid = "10.1.0.4@tcp";
  const run = (src: ReturnType<typeof okSource>, selfNid: string | null = nid) =>
    loadPlugin("lnet-self-ping").check(input({ "lnetctl.ping": src }, selfNid ? { "lnet.selfNid": selfNid } : {}));

  it("passes when the reply names the NID", () => {
    expectResult(run(okSource(fixture("ping/ok.yaml"))), { status: "pass", reason: "SelfPingOk", message: /10\.1\.0\.4@tcp/ });
  });
  it("passes when only a peer ni names the NID (multi-rail)", () => {
    expectResult(run(okSource(fixture("ping/ok-multirail.yaml")), "172.16.1.12@o2ib"), { status: "pass", reason: "SelfPingOk" });
  });
  it("passes for IPv6 NIDs, case-insensitively", () => {
    expectResult(run(okSource(fixture("ping/ok-ipv6.yaml")), "2001:DB8::4@tcp"), { status: "pass", reason: "SelfPingOk" });
  });
  it("fails when the reply names other NIDs", () => {
    expectResult(run(okSource(fixture("ping/other-nid.yaml"))), { status: "fail", reason: "PingNidMismatch", message: /does not name 10\.1\.0\.4@tcp/ });
  });
  it("fails on an error document even with exit code 0", () => {
    expectResult(run(okSource(fixture("ping/error-eio.yaml"))), { status: "fail", reason: "PingFailed", message: /failed to ping 10\.1\.0\.4@tcp: Input\/output error/ });
  });
  it("fails on an error document on stderr with a non-zero exit", () => {
    const src = failedSource("exit status 1", { stderr: fixture("ping/lnet-down.yaml") });
    expectResult(run(src), { status: "fail", reason: "PingFailed", message: /Network is down/ });
  });
  it("fails on a non-zero exit without an error document", () => {
    expectResult(run(failedSource("exit status 255", { stderr: "lnetctl: unknown failure\n" })), { status: "fail", reason: "SourceFailed", message: /exit status 255 \(lnetctl: unknown failure\)/ });
  });
  it("fails on a timeout", () => {
    const src = failedSource("ETIMEDOUT: lnetctl ping timed out after 10000 ms", { exitCode: null });
    expectResult(run(src), { status: "fail", reason: "PingTimeout", message: /timed out after 10000 ms/ });
  });
  it("fails clearly when lnet.selfNid was not available", () => {
    const src = failedSource("fact lnet.selfNid is not available", { exitCode: null });
    expectResult(run(src, null), { status: "fail", reason: "SelfNidUnavailable", message: /lnet\.selfNid/ });
  });
  it.each<[string, string]>([
    ["garbage", "net_show/garbage.txt"],
    ["binary", "net_show/binary.bin"],
    ["empty", "net_show/empty.txt"],
    ["a net show instead of a ping reply", "net_show/healthy-2.15.yaml"],
  ])("fails with ParseError on %s", (_label, file) => {
    expectResult(run(okSource(fixture(file))), { status: "fail", reason: "ParseError", message: /lnetctl\.ping/ });
  });
  it("fails with ParseError on a truncated reply", () => {
    expectResult(run(okSource("ping:\n    - primary ni")), { status: "fail", reason: "ParseError" });
  });
});

describe("net-interfaces (sys.net.operstate)", () => {
  const run = (text: string) => loadPlugin("net-interfaces").check(input({ "sys.net.operstate": okSource(text, { exitCode: null }) }, { "lnet.interfaces": "eth0" }));
  it.each<[string, Expect]>([
    ["operstate/up.txt", { status: "pass", reason: "InterfacesUp", message: /eth0/ }],
    ["operstate/crlf.txt", { status: "pass", reason: "InterfacesUp", message: /eth0 and eth1/ }],
    ["operstate/unknown.txt", { status: "pass", reason: "InterfacesUp", message: /operstate unknown \(counted as up\): ib0/ }],
    ["operstate/one-down.txt", { status: "fail", reason: "InterfaceDown", message: /: eth1 \(down\)$/ }],
    ["operstate/all-bad.txt", { status: "fail", reason: "InterfaceDown", message: /eth0 \(lowerlayerdown\), ib0 \(notpresent\), ib1 \(dormant\) and eth9 \(absent\)/ }],
    ["operstate/garbage.txt", { status: "fail", reason: "ParseError", message: /sys\.net\.operstate/ }],
    ["net_show/empty.txt", { status: "fail", reason: "ParseError" }],
    ["net_show/binary.bin", { status: "fail", reason: "ParseError", message: /binary/ }],
  ])("%s", (file, e) => expectResult(run(fixture(file)), e));

  it("fails clearly when lnet.interfaces was not available", () => {
    const r = loadPlugin("net-interfaces").check(input({ "sys.net.operstate": failedSource("fact lnet.interfaces is not available", { exitCode: null }) }));
    expectResult(r, { status: "fail", reason: "SourceFailed", message: /fact lnet\.interfaces is not available/ });
  });
});

describe("input handling shared by all plugins", () => {
  const plugins = ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping", "net-interfaces"];
  it.each(plugins)("%s: not JSON -> BadInput", (name) => {
    const r = JSON.parse(loadPlugin(name).checkRaw("{not json"));
    expect(r).toMatchObject({ status: "fail", reason: "BadInput" });
  });
  it.each(plugins)("%s: source absent -> SourceMissing", (name) => {
    expect(loadPlugin(name).check(input({}))).toMatchObject({ status: "fail", reason: "SourceMissing" });
  });
  it("decodes \\u escapes and surrogate pairs in the input", () => {
    const raw = '{"mode":"node","sources":{"lctl.list_nids":{"ok":true,"exitCode":0,"stdout":"\\u0031\\u0030.1.0.4@tcp\\n0@lo\\n\\ud83d\\ude00","stderr":"","error":null,"truncated":false,"ageMs":1}},"facts":{}}';
    const r = JSON.parse(loadPlugin("lnet-nids").checkRaw(raw));
    expect(r).toMatchObject({ status: "pass", facts: { "lnet.selfNid": "10.1.0.4@tcp" } });
    expect(r.message).toContain("ignored line(s): 😀");
  });
});

// Configuration (manifest `config`; the host passes every declared key, validated).
describe("configuration", () => {
  const withConfig = (sources: Parameters<typeof input>[0], config: Record<string, unknown>) => ({ ...input(sources), config });

  it("each configurable plugin declares its keys with defaults, and only those", () => {
    const decl = (name: string) => loadPlugin(name).manifest().config;
    expect(Object.keys(decl("kernel-modules"))).toEqual(["modules", "lnetConfiguredAt"]);
    expect(decl("kernel-modules").modules).toMatchObject({ type: "string[]", default: ["lnet", "lustre"] });
    expect(Object.keys(decl("lnet-nets"))).toEqual(["optionalNets", "requiredNets", "minUpPerNet", "ignoreNids", "lnetConfiguredAt"]);
    expect(decl("lnet-nets").minUpPerNet).toMatchObject({ type: "integer", default: 0, min: 0 });
    expect(Object.keys(decl("net-interfaces"))).toEqual(["ignoreInterfaces"]);
    for (const name of ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping"]) {
      expect(decl(name).lnetConfiguredAt, name).toMatchObject({ type: "string", default: "start" });
    }
    expect(Object.keys(decl("lnet-nids"))).toEqual(["lnetConfiguredAt"]);
  });

  it("kernel-modules: modules replaces the required list", () => {
    const km = loadPlugin("kernel-modules");
    const src = { "proc.modules": okSource(fixture("modules/loaded.txt"), { exitCode: null }) };
    expectResult(km.check(withConfig(src, { modules: ["lnet", "lustre", "ko2iblnd"] })), { status: "fail", reason: "ModulesMissing", message: /not loaded: ko2iblnd$/ });
    expectResult(km.check(withConfig(src, { modules: ["lnet"] })), { status: "pass", reason: "ModulesLoaded", message: /module\(s\) lnet loaded/ });
    expectResult(km.check(withConfig(src, { modules: [] })), { status: "pass", reason: "NoModulesRequired" });
  });

  describe("lnet-nets", () => {
    const nets = loadPlugin("lnet-nets");
    const run = (file: string, config: Record<string, unknown>) => nets.check(withConfig({ "lnetctl.net_show": okSource(fixture(file)) }, config));
    const defaults = { optionalNets: [], requiredNets: [], minUpPerNet: 0, ignoreNids: [] };

    it("with the defaults behaves as without configuration", () => {
      expectResult(run("net_show/ni-down.yaml", defaults), { status: "fail", reason: "NiDown", message: /10\.1\.0\.4@tcp \(down\)/ });
      expectResult(run("net_show/multi-net.yaml", defaults), { status: "pass", reason: "NetsUp" });
    });
    it("optionalNets: NIs down there warn instead of failing", () => {
      expectResult(run("net_show/ni-down.yaml", { ...defaults, optionalNets: ["tcp"] }), {
        status: "warn", reason: "NiDegraded", message: /10\.1\.0\.4@tcp \(down\) \(optional net tcp\)/, facts: { "lnet.interfaces": "eth0" },
      });
      expectResult(run("net_show/ni-down.yaml", { ...defaults, optionalNets: ["tcp1"] }), { status: "fail", reason: "NiDown" });
    });
    it("minUpPerNet: enough NIs up on a multi-rail net warns for the rest; too few fails", () => {
      expectResult(run("net_show/multi-rail-one-down.yaml", { ...defaults, minUpPerNet: 1 }), { status: "warn", reason: "NiDegraded", message: /172\.16\.1\.12@o2ib \(down\) \(1 of 2 NIs of o2ib up\)/ });
      expectResult(run("net_show/multi-rail-one-down.yaml", { ...defaults, minUpPerNet: 2 }), { status: "fail", reason: "NiDown" });
      expectResult(run("net_show/ni-down.yaml", { ...defaults, minUpPerNet: 1 }), { status: "fail", reason: "NiDown" });
    });
    it("requiredNets: a missing net fails", () => {
      expectResult(run("net_show/multi-net.yaml", { ...defaults, requiredNets: ["tcp", "o2ib3"] }), { status: "pass", reason: "NetsUp" });
      expectResult(run("net_show/multi-net.yaml", { ...defaults, requiredNets: ["o2ib", "tcp"] }), { status: "fail", reason: "RequiredNetMissing", message: /not configured: o2ib$/ });
    });
    it("ignoreNids: an ignored NI is neither counted nor judged", () => {
      expectResult(run("net_show/multi-rail-one-down.yaml", { ...defaults, ignoreNids: ["172.16.1.12@o2ib"] }), { status: "pass", reason: "NetsUp", message: /^1 non-loopback NI\(s\) up; 1 NI\(s\) ignored by configuration$/ });
      expectResult(run("net_show/ni-down.yaml", { ...defaults, ignoreNids: ["10.1.0.4@tcp"] }), { status: "fail", reason: "NoNonLoopbackNet", message: /1 NI\(s\) ignored by configuration/ });
    });
  });

  it("net-interfaces: ignoreInterfaces are not judged", () => {
    const ni = loadPlugin("net-interfaces");
    const run = (text: string, ignoreInterfaces: string[]) => ni.check(withConfig({ "sys.net.operstate": okSource(text, { exitCode: null }) }, { ignoreInterfaces }));
    expectResult(run("eth0 up\neth1 down\n", ["eth1"]), { status: "pass", reason: "InterfacesUp", message: /eth0.*ignored by configuration: eth1/ });
    expectResult(run("eth0 up\neth1 down\n", []), { status: "fail", reason: "InterfaceDown", message: /eth1 \(down\)/ });
    expectResult(run("eth1 down\n", ["eth1"]), { status: "pass", reason: "InterfacesIgnored" });
  });
});
