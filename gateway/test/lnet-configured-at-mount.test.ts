// Issue 23, "when LNet is configured": the bundled checks configured with
// `lnetConfiguredAt: mount`, through a real gateway process on fake nodes
// (fake lnetctl/lctl/mount.lustre on PATH; fake procfs, sysfs, modules tree
// and modprobe.d). A fresh node whose LNet the first mount will configure is
// ready; a node that cannot mount is not; once LNet is configured, the full
// checks apply.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fakeLnet, type FakeLnet, type FakeLnetSpec } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { untilReadyz } from "./helpers/readyz.js";
import { gatewayTestScope } from "./helpers/test-scope.js";

const BUNDLED = path.join(ROOT, "dist", "plugins");
const PHASED = ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping"];
const CHECKS = [...PHASED, "net-interfaces"];
const RELEASE = "6.8.0-1015-aws";
const HEALTHY = path.join(ROOT, "gateway", "demo", "scenarios", "healthy");
const healthy = (file: string) => fs.readFileSync(path.join(HEALTHY, file), "utf8");

// What `depmod` writes for a kernel with the Lustre client installed (paths as the DKMS packages use).
const MODULES_DEP = [
  "kernel/fs/ext4/ext4.ko.zst: kernel/fs/mbcache.ko.zst kernel/fs/jbd2/jbd2.ko.zst",
  "kernel/drivers/net/ethernet/amazon/ena/ena.ko.zst:",
  "updates/dkms/libcfs.ko.zst:",
  "updates/dkms/lnet.ko.zst: updates/dkms/libcfs.ko.zst",
  "updates/dkms/ksocklnd.ko.zst: updates/dkms/lnet.ko.zst updates/dkms/libcfs.ko.zst",
  "updates/dkms/lustre.ko.zst: updates/dkms/ptlrpc.ko.zst updates/dkms/lnet.ko.zst updates/dkms/libcfs.ko.zst",
  "",
].join("\n");

/** A node the driver just started on: lnet not loaded, lnetctl and lctl answering "not configured". */
const FRESH: FakeLnetSpec = {
  base: "lnet-down",
  osrelease: `${RELEASE}\n`,
  modulesDep: { [RELEASE]: MODULES_DEP },
  modprobe: { "lustre.conf": "# written by the node image\noptions lnet networks=tcp0(eth0)\n" },
};

const scope = gatewayTestScope();
const { running, nodes } = scope;

// Under the scope, so the directories go with it when the file ends.
const scratch = (prefix: string) => fs.mkdtempSync(path.join(scope.path(), prefix));

/** The bundled plugins, and a second directory with `lnetConfiguredAt: mount` for the four phased checks (and `selfPing` more for lnet-self-ping). */
function mountConfigDir(selfPing = ""): string {
  const dir = scratch("config-");
  for (const name of PHASED) fs.writeFileSync(path.join(dir, `${name}.yaml`), `lnetConfiguredAt: mount\n${name === "lnet-self-ping" ? selfPing : ""}`);
  return dir;
}

/** A gateway on a fake node; `env` replaces the node's (e.g. a PATH without some tool). */
async function gatewayOn(spec: FakeLnetSpec, env?: (node: FakeLnet) => NodeJS.ProcessEnv, selfPing = "") {
  const node = fakeLnet(spec);
  nodes.push(node);
  const gw = await startGatewayProcess(
    [
      `--path.procfs=${node.procfs}`,
      `--path.sysfs=${node.sysfs}`,
      `--path.modules=${node.modules}`,
      `--path.modprobe=${node.modprobe}`,
      "--check-interval=1s",
      `--plugins-dir=${BUNDLED}`,
      `--plugins-dir=${mountConfigDir(selfPing)}`,
    ],
    { env: env ? env(node) : node.env },
  );
  running.push(gw);
  return { node, gw };
}

interface Condition {
  name: string;
  status: string;
  reason: string;
  message: string;
}

/** Each check's verdict, passes included (the verbose text names only failures' reasons). */
async function conditions(gw: GatewayProcess): Promise<Record<string, Condition>> {
  const res = await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } });
  const json = (await res.json()) as { conditions: Condition[] };
  return Object.fromEntries(json.conditions.map((c) => [c.name, c]));
}

const evaluated = (r: { text: string }) => !r.text.includes("initializing") && CHECKS.every((n) => r.text.includes(`]${n} `));

describe("lnetConfiguredAt: mount through a running gateway", () => {
  it("a fresh node is ready before the first mount, and the full checks apply after it", async () => {
    const { gw, node } = await gatewayOn(FRESH);
    const fresh = await untilReadyz(gw, (r) => evaluated(r) && r.status === 200, "a fresh node ready");
    expect(fresh.status).toBe(200);
    const c = await conditions(gw);
    for (const name of PHASED) {
      expect(c[name]).toMatchObject({ status: "pass", reason: "LnetNotYetConfigured" });
      expect(c[name].message).toContain("LNet not yet configured (lnetConfiguredAt: mount; the lnet module is not loaded)");
    }
    expect(c["kernel-modules"].message).toContain(`kernel module(s) lnet and lustre installed for kernel ${RELEASE}`);
    expect(c["lnet-nets"].message).toContain("interface(s) eth0 named by the lnet module options (lustre.conf: networks=tcp0(eth0))");
    expect(c["lnet-nids"].message).toContain("lctl and mount.lustre present");
    // The option-named interface reached net-interfaces as lnet.interfaces.
    expect(c["net-interfaces"]).toMatchObject({ status: "pass", reason: "InterfacesUp", message: "interface(s) up: eth0" });
    // No NID yet: the gateway never ran the ping.
    expect(node.calls("ping")).toHaveLength(0);

    // The first mount: lnet and lustre loaded, LNet configured on eth0.
    node.update({
      modules: healthy("proc/modules"),
      netShow: { out: healthy("net_show.out") },
      listNids: { out: healthy("list_nids.out") },
      ping: { out: healthy("ping.out"), expectNid: healthy("ping.expect_nid").trim() },
    });
    const want = { "kernel-modules": "ModulesLoaded", "lnet-nets": "NetsUp", "lnet-nids": "NidsValid", "lnet-self-ping": "SelfPingOk" };
    const deadline = Date.now() + 20_000;
    let after = await conditions(gw);
    while (Object.entries(want).some(([n, reason]) => after[n]?.reason !== reason) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      after = await conditions(gw);
    }
    for (const [name, reason] of Object.entries(want)) expect(after[name]).toMatchObject({ status: "pass", reason });
    expect(node.calls("ping").length).toBeGreaterThan(0);

    // An NI going down now fails readiness: mount mode is no free pass once LNet exists.
    node.update({ netShow: { out: fs.readFileSync(path.join(ROOT, "gateway", "demo", "scenarios", "ni-down", "net_show.out"), "utf8") } });
    const down = await untilReadyz(gw, (r) => r.status === 503 && /\[-\]lnet-nets/.test(r.text), "an NI down failing readiness");
    expect(down.text).toMatch(/\[-\]lnet-nets failed: NiDown: /);
  });

  it("options that name no interface (networks=tcp, as on FSx): ready before the first mount, the NIs' interfaces judged after it", async () => {
    const { gw, node } = await gatewayOn({ ...FRESH, modprobe: { "lustre.conf": "options lnet networks=tcp\n" } });
    const fresh = await untilReadyz(gw, (r) => evaluated(r) && r.status === 200, "a fresh node ready although no interface is named");
    expect(fresh.status).toBe(200);
    const c = await conditions(gw);
    expect(c["lnet-nets"]).toMatchObject({ status: "pass", reason: "LnetNotYetConfigured" });
    expect(c["lnet-nets"].message).toContain("name no interface");
    // Without the empty list net-interfaces would fail (no lnet.interfaces) and gate the very mount that configures LNet.
    expect(c["net-interfaces"]).toMatchObject({ status: "pass", reason: "NoInterfacesNamed" });

    node.update({
      modules: healthy("proc/modules"),
      netShow: { out: healthy("net_show.out") },
      listNids: { out: healthy("list_nids.out") },
      ping: { out: healthy("ping.out"), expectNid: healthy("ping.expect_nid").trim() },
      operstate: { eth0: "down\n" },
    });
    const down = await untilReadyz(gw, (r) => r.status === 503 && /\[-\]net-interfaces/.test(r.text), "the configured NI's interface judged");
    expect(down.text).toMatch(/\[-\]net-interfaces failed: InterfaceDown: interface\(s\) not up: eth0 \(down\)/);
  });

  it("modules missing for the running kernel: not ready, naming the kernel release", async () => {
    const { gw, node } = await gatewayOn(FRESH);
    await untilReadyz(gw, (r) => evaluated(r) && r.status === 200, "a fresh node ready");
    // The node rebooted into a kernel the Lustre client was never built for.
    node.update({ osrelease: "6.8.0-1016-aws\n" });
    const r = await untilReadyz(gw, (x) => x.status === 503 && /kernel-modules failed/.test(x.text), "kernel-modules failing");
    expect(r.text).toMatch(/\[-\]kernel-modules failed: ModulesNotInstalled: LNet not yet configured .*no modules installed for kernel 6\.8\.0-1016-aws: ENOENT: .*6\.8\.0-1016-aws\/modules\.dep does not exist/);
    // Built for it, but without Lustre.
    node.update({ modulesDep: { "6.8.0-1016-aws": "kernel/fs/ext4/ext4.ko.zst:\n" } });
    const r2 = await untilReadyz(gw, (x) => x.status === 503 && /not installed for kernel/.test(x.text), "lustre not installed");
    expect(r2.text).toMatch(/\[-\]kernel-modules failed: ModulesNotInstalled: .*lnet and lustre not installed for kernel 6\.8\.0-1016-aws/);
  });

  it("an interface the module options name is down: not ready; a missing mount.lustre: not ready", async () => {
    const { gw } = await gatewayOn({ ...FRESH, operstate: { eth0: "down\n" } });
    const r = await untilReadyz(gw, (x) => evaluated(x) && x.status === 503, "not ready");
    expect(r.text).toMatch(/\[-\]net-interfaces failed: InterfaceDown: interface\(s\) not up: eth0 \(down\)/);
    expect((await conditions(gw))["lnet-nets"]).toMatchObject({ status: "pass", reason: "LnetNotYetConfigured" });

    // The same node without mount.lustre: PATH holds only lnetctl and lctl.
    const bin = scratch("bin-");
    for (const tool of ["lnetctl", "lctl"]) fs.symlinkSync(path.join(ROOT, "gateway", "demo", "bin", tool), path.join(bin, tool));
    const { gw: gw2 } = await gatewayOn(FRESH, (node) => ({ ...node.env, PATH: bin }));
    const r2 = await untilReadyz(gw2, (x) => evaluated(x) && x.status === 503, "not ready without mount.lustre");
    expect(r2.text).toMatch(/\[-\]lnet-nids failed: ToolsMissing: LNet not yet configured .*mount\.lustre \(ENOENT: mount\.lustre not found on PATH\)/);
  });
});

describe("lnetConfiguredAt: mount with peers: (issue 42)", () => {
  const MGS = ["10.0.0.2@tcp", "10.0.0.12@tcp"];
  const pingsOf = (node: FakeLnet, nid: string) => node.calls("ping").filter((l) => l.endsWith(` ${nid}`)).length;
  const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("no peer is pinged before LNet is configured (lnet not loaded, then loaded without a net); once it is, the peers decide", async () => {
    const { gw, node } = await gatewayOn(FRESH, undefined, `peers: [${MGS.join(", ")}]\n`);
    fs.writeFileSync(path.join(node.dir, "ping_nids.json"), JSON.stringify({ [MGS[0]!]: "ok", [MGS[1]!]: "ok" }));
    await untilReadyz(gw, (r) => evaluated(r) && r.status === 200, "a fresh node ready");
    expect((await conditions(gw))["lnet-self-ping"]).toMatchObject({ status: "pass", reason: "LnetNotYetConfigured" });
    await settle(3_500); // three more rounds at --check-interval=1s
    expect(node.calls("ping")).toEqual([]);

    // lnet loaded by the driver, LNet not configured yet: lnetctl answers "Network is down".
    node.update({ modules: "lnet 1 0 - Live 0x0\nlibcfs 1 1 lnet, Live 0x0\n" });
    const deadline = Date.now() + 20_000;
    while (!(await conditions(gw))["lnet-self-ping"]?.message.includes("lnet is loaded") && Date.now() < deadline) await settle(100);
    expect((await conditions(gw))["lnet-self-ping"]).toMatchObject({ status: "pass", reason: "LnetNotYetConfigured" });
    await settle(3_500);
    expect(node.calls("ping")).toEqual([]);

    // The first mount configures LNet: the peers are pinged and decide readiness.
    node.update({ modules: healthy("proc/modules"), netShow: { out: healthy("net_show.out") }, listNids: { out: healthy("list_nids.out") } });
    fs.writeFileSync(path.join(node.dir, "ping_nids.json"), JSON.stringify({ "10.0.0.10@tcp": "ok", [MGS[0]!]: "ok", [MGS[1]!]: "timeout" }));
    const after = Date.now() + 20_000;
    let c = await conditions(gw);
    while (c["lnet-self-ping"]?.reason !== "PeersReachable" && Date.now() < after) {
      await settle(100);
      c = await conditions(gw);
    }
    expect(c["lnet-self-ping"]).toMatchObject({ status: "pass", reason: "PeersReachable" });
    expect(c["lnet-self-ping"].message).toContain(`1 of 2 peer(s) answer; no answer from ${MGS[1]} (timeout)`);
    expect(pingsOf(node, MGS[0]!)).toBeGreaterThan(0);
    expect(pingsOf(node, MGS[1]!)).toBeGreaterThan(0);
  });
});

describe("lnetConfiguredAt: mount, options from the running module (issue 31)", () => {
  it("lnet loaded with networks= on modprobe's command line (GKE), modprobe.d silent: the interface named there is judged", async () => {
    const spec: FakeLnetSpec = {
      ...FRESH,
      modules: "lnet 1 0 - Live 0x0\nlibcfs 1 1 lnet, Live 0x0\n",
      modprobe: { "lustre.conf": "# the installer passes the options on modprobe's command line\n" },
      operstate: { eth0: "up\n", eth1: "down\n" },
    };
    const { gw, node } = await gatewayOnWith(spec, (n) => {
      const params = path.join(n.sysfs, "module", "lnet", "parameters");
      fs.mkdirSync(params, { recursive: true });
      fs.writeFileSync(path.join(params, "networks"), "tcp(eth1)\n");
      fs.writeFileSync(path.join(params, "ip2nets"), "(null)\n");
    });
    const r = await untilReadyz(gw, (x) => evaluated(x) && x.status === 503, "not ready: eth1 is down");
    expect(r.text).toMatch(/\[-\]net-interfaces failed: InterfaceDown: interface\(s\) not up: eth1 \(down\)/);
    const c = await conditions(gw);
    expect(c["lnet-nets"]).toMatchObject({ status: "pass", reason: "LnetNotYetConfigured" });
    expect(c["lnet-nets"].message).toContain(`interface(s) eth1 named by the lnet module options (${path.join(node.sysfs, "module", "lnet", "parameters")}: networks="tcp(eth1)")`);

    // The interface comes up: ready.
    node.update({ operstate: { eth1: "up\n" } });
    const ok = await untilReadyz(gw, (x) => evaluated(x) && x.status === 200, "ready once eth1 is up");
    expect(ok.status).toBe(200);
  });

  it("a module without networks= or ip2nets= leaves modprobe.d's word (no interface named: ready before the first mount)", async () => {
    const spec: FakeLnetSpec = {
      ...FRESH,
      modules: "lnet 1 0 - Live 0x0\nlibcfs 1 1 lnet, Live 0x0\n",
      modprobe: { "lustre.conf": "options lnet networks=tcp\n" },
      operstate: { eth1: "down\n" },
    };
    const { gw } = await gatewayOnWith(spec, (n) => {
      const params = path.join(n.sysfs, "module", "lnet", "parameters");
      fs.mkdirSync(params, { recursive: true });
      fs.writeFileSync(path.join(params, "networks"), "(null)\n");
      fs.writeFileSync(path.join(params, "ip2nets"), "(null)\n");
    });
    await untilReadyz(gw, (x) => evaluated(x) && x.status === 200, "ready");
    expect((await conditions(gw))["net-interfaces"]).toMatchObject({ status: "pass", reason: "NoInterfacesNamed" });
  });
});

/** gatewayOn, with a hook that changes the fake node before the gateway starts. */
async function gatewayOnWith(spec: FakeLnetSpec, prepare: (node: FakeLnet) => void) {
  const node = fakeLnet(spec);
  nodes.push(node);
  prepare(node);
  const gw = await startGatewayProcess(
    [
      `--path.procfs=${node.procfs}`,
      `--path.sysfs=${node.sysfs}`,
      `--path.modules=${node.modules}`,
      `--path.modprobe=${node.modprobe}`,
      "--check-interval=1s",
      `--plugins-dir=${BUNDLED}`,
      `--plugins-dir=${mountConfigDir()}`,
    ],
    { env: node.env },
  );
  running.push(gw);
  return { node, gw };
}
