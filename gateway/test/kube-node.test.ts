// Kubernetes node reporting end to end: real probegate processes under the
// image's node flags (48 MiB old space), probegate's own Kubernetes client
// inside them, a fake API server that enforces the
// semantics that matter (helpers/fake-kube-api.ts), a fake LNet node going
// healthy → broken → healed.
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeKubeApi } from "./helpers/fake-kube-api.js";
import { fakeLnet, type FakeLnet } from "./helpers/fake-lnet.js";
import { IMAGE_NODE_FLAGS, ROOT, runProbegate, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";

const PLUGINS = `--plugins-dir=${path.join(ROOT, "dist", "plugins")}`;

const COND = "lustre.csi.example.com/NodeReady";
const TAINT_KEY = "lustre.csi.example.com/agent-not-ready";
const TAINT = `${TAINT_KEY}:NoSchedule`;
const DRIVER = "lustre.csi.example.com";
const OTHER_TAINT = "example.com/maintenance";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A fake tool the gateway started may still be writing its call log as the directory goes. */
async function removeNode(n: FakeLnet): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      return n.cleanup();
    } catch (err) {
      if (i >= 20) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function until<T>(what: string, f: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const start = Date.now();
  let last: unknown;
  while (Date.now() - start < timeoutMs) {
    try {
      const v = await f();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
}

interface Setup {
  api: FakeKubeApi;
  node: FakeLnet;
  gw: GatewayProcess;
}

async function setup(
  flags: string[],
  opts: { taints?: Array<Record<string, string>>; csiDrivers?: string[]; eventsV1?: boolean; kubelet?: boolean; kubeconfigFromEnv?: boolean } = {},
): Promise<Setup> {
  const api = await new FakeKubeApi({ tokens: { "token-a": "node-a" }, eventsV1: opts.eventsV1 }).start();
  cleanups.push(() => api.close());
  api.addNode("node-a", { taints: opts.taints ?? [{ key: OTHER_TAINT, effect: "NoSchedule" }] });
  api.addNode("node-b");
  if (opts.csiDrivers) api.setCSINode("node-a", opts.csiDrivers);
  if (opts.kubelet !== false) {
    api.startKubelet("node-a", 300);
    api.startNodeController("node-a", "example.com/controller-managed", 700);
  }
  const dir = tempDir("probegate-kube-");
  const kubeconfig = path.join(dir, "kubeconfig");
  fs.writeFileSync(kubeconfig, api.kubeconfig("token-a"));
  const node = fakeLnet({ base: "healthy" });
  cleanups.push(() => removeNode(node));
  const gw = await startGatewayProcess(
    [
      ...(flags.some((f) => f.startsWith("--plugins-dir")) ? [] : [PLUGINS]),
      `--path.procfs=${node.procfs}`,
      `--path.sysfs=${node.sysfs}`,
      "--check-interval=1s",
      // A loaded CI machine must not make a plugin time out and flip the verdict behind a test's back.
      "--plugin-timeout=5s",
      `--driver-name=${DRIVER}`,
      ...(opts.kubeconfigFromEnv ? [] : [`--kubeconfig=${kubeconfig}`]),
      "--node-backoff-cap=1s",
      "--node-resync=3s",
      "--node-write-interval=50ms",
      ...flags,
    ],
    { env: { ...node.env, NODE_NAME: "node-a", ...(opts.kubeconfigFromEnv ? { KUBECONFIG: kubeconfig } : {}) }, nodeArgs: IMAGE_NODE_FLAGS },
  );
  cleanups.push(async () => void (await gw.stop()));
  return { api, node, gw };
}

const breakNode = (n: FakeLnet) => n.update({ operstate: { eth0: "down\n" } });
const healNode = (n: FakeLnet) => n.update({ operstate: { eth0: "up\n" } });

async function probe(gw: GatewayProcess): Promise<{ ready?: boolean }> {
  const res = await fetch(`http://${gw.http}/csi.v1.Identity/Probe`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  return (await res.json()) as { ready?: boolean };
}

function kubeletIntact(api: FakeKubeApi): void {
  const conds = api.node("node-a").status.conditions as Array<{ type: string; status: string }>;
  expect(conds.filter((c) => !c.type.includes("/")).map((c) => `${c.type}=${c.status}`).sort()).toEqual([
    "DiskPressure=False",
    "MemoryPressure=False",
    "PIDPressure=False",
    "Ready=True",
  ]);
  expect(api.clobbered).toEqual([]);
}

const hasTaint = (api: FakeKubeApi, key = TAINT_KEY) => api.taints("node-a").some((t) => t.key === key);

describe("node condition and continuous taint", () => {
  it("follows healthy → broken → healed, waits for CSINode, keeps kubelet's conditions and others' taints", async () => {
    const { api, node, gw } = await setup(
      ["--node-condition", COND, "--node-taint", TAINT, "--node-taint-mode=continuous", "--node-heartbeat=2s"],
      { taints: [{ key: OTHER_TAINT, effect: "NoSchedule" }, { key: TAINT_KEY, effect: "NoSchedule" }], csiDrivers: ["other.csi.example.com"] },
    );
    // Ready: condition True with a summary reason; the taint stays while CSINode lacks the driver.
    const c = await until("condition True", () => api.condition("node-a", COND)?.status === "True" && api.condition("node-a", COND));
    expect(c.reason).toBe("AllChecksPassed");
    await new Promise((r) => setTimeout(r, 800));
    expect(hasTaint(api)).toBe(true);
    api.setCSINode("node-a", ["other.csi.example.com", DRIVER]);
    await until("taint removed after CSINode lists the driver", () => !hasTaint(api));
    expect(hasTaint(api, OTHER_TAINT)).toBe(true);
    const firstTransition = api.condition("node-a", COND)!.lastTransitionTime;

    // Broken: False with the failing check's reason, the taint added, a Warning Event.
    breakNode(node);
    const broken = await until("condition False", () => api.condition("node-a", COND)?.status === "False" && api.condition("node-a", COND));
    expect(broken.reason).toMatch(/^[A-Z][A-Za-z0-9]*$/);
    expect(broken.message).toContain("net-interfaces");
    expect(broken.lastTransitionTime >= firstTransition).toBe(true);
    await until("taint added", () => hasTaint(api));
    expect((await probe(gw)).ready).toBe(false);
    await until("Warning event", () => [...api.eventsV1.values()].some((e) => e.type === "Warning" && e.reason === "NodeNotReady" && String(e.note).includes("net-interfaces")));

    // Healed.
    healNode(node);
    await until("condition True again", () => api.condition("node-a", COND)?.status === "True");
    await until("taint removed again", () => !hasTaint(api));
    await until("Normal event", () => [...api.eventsV1.values()].some((e) => e.type === "Normal" && e.reason === "NodeReady"));
    const ev = [...api.eventsV1.values()].find((e) => e.reason === "NodeNotReady")!;
    expect(ev.regarding).toMatchObject({ kind: "Node", name: "node-a" });
    expect(ev.metadata.namespace).toBe("default");

    // Heartbeat: an unchanged condition is re-sent, its transition time kept.
    const t = api.condition("node-a", COND)!;
    await until("heartbeat", () => api.condition("node-a", COND)!.lastHeartbeatTime !== t.lastHeartbeatTime, 10_000);
    expect(api.condition("node-a", COND)!.lastTransitionTime).toBe(t.lastTransitionTime);

    // Every taint write was a guarded JSON patch, every condition write a strategic merge patch.
    const taintWrites = api.writes((r) => r.path === "/api/v1/nodes/node-a");
    expect(taintWrites.length).toBeGreaterThanOrEqual(3);
    for (const w of taintWrites) expect(w.contentType).toContain("application/json-patch+json");
    for (const w of api.writes((r) => r.path.endsWith("/status"))) expect(w.contentType).toContain("application/strategic-merge-patch+json");
    expect(api.node("node-b").status.conditions.some((x: { type: string }) => x.type === COND)).toBe(false);
    expect(api.denied).toEqual([]);
    kubeletIntact(api);
    // The concurrent writers made some writes conflict; all were retried to convergence.
    const metrics = await (await fetch(`http://${gw.http}/metrics`)).text();
    expect(metrics).toMatch(/probegate_kube_requests_total\{verb="patch",resource="nodes\/status",code="200"\} [1-9]/);
    expect(metrics).toMatch(/probegate_kube_condition_status\{condition="lustre.csi.example.com\/NodeReady",status="True"\} 1/);
    expect(metrics).toMatch(/probegate_kube_taint_present 0/);
  }, 90_000);

  it("lastTransitionTime survives a restart with the status unchanged", async () => {
    const { api, gw } = await setup(["--node-condition", COND], { kubelet: false });
    const c = await until("condition True", () => api.condition("node-a", COND)?.status === "True" && api.condition("node-a", COND));
    // Pretend the condition has been True for a long time.
    api.mutateNode("node-a", (n) => {
      const x = n.status.conditions.find((y: { type: string }) => y.type === COND);
      x.lastTransitionTime = "2026-02-02T02:02:02Z";
      x.lastHeartbeatTime = "2026-02-02T02:02:02Z";
    });
    await gw.stop();
    const dir = tempDir("probegate-kube-restart-");
    fs.writeFileSync(path.join(dir, "kc"), api.kubeconfig("token-a"));
    const node2 = fakeLnet({ base: "healthy" });
    cleanups.push(() => removeNode(node2));
    const gw2 = await startGatewayProcess(
      [PLUGINS, `--path.procfs=${node2.procfs}`, `--path.sysfs=${node2.sysfs}`, "--check-interval=1s", `--kubeconfig=${path.join(dir, "kc")}`, "--node-name=node-a", "--node-condition", COND],
      { env: node2.env },
    );
    cleanups.push(async () => void (await gw2.stop()));
    await until("heartbeat refreshed", () => api.condition("node-a", COND)!.lastHeartbeatTime !== "2026-02-02T02:02:02Z");
    expect(api.condition("node-a", COND)!.lastTransitionTime).toBe("2026-02-02T02:02:02Z");
    expect(api.condition("node-a", COND)!.status).toBe(c.status);
    // Never Unknown in between: no write carried a status other than True.
    expect(api.condition("node-a", COND)!.status).toBe("True");
  }, 60_000);
});

describe("bootstrap-only taint", () => {
  it("removes the taint when ready, again when re-added; never adds it; repairs a removed condition", async () => {
    const { api, node } = await setup(["--node-condition", COND, "--node-taint", TAINT, "--node-taint-wait-csinode=false"], {
      taints: [{ key: TAINT_KEY, effect: "NoSchedule" }, { key: OTHER_TAINT, effect: "NoExecute" }],
    });
    await until("taint removed", () => !hasTaint(api));
    // Something re-adds it (a node manager): removed again, within seconds, through the watch.
    api.mutateNode("node-a", (n) => n.spec.taints.push({ key: TAINT_KEY, effect: "NoSchedule" }));
    await until("re-added taint removed", () => !hasTaint(api), 10_000);
    // Someone deletes the condition: it comes back.
    api.mutateNode("node-a", (n) => (n.status.conditions = n.status.conditions.filter((c: { type: string }) => c.type !== COND)));
    await until("condition repaired", () => api.condition("node-a", COND)?.status === "True", 10_000);
    // Not ready: bootstrap-only never adds the taint.
    breakNode(node);
    await until("condition False", () => api.condition("node-a", COND)?.status === "False");
    await new Promise((r) => setTimeout(r, 1000));
    expect(hasTaint(api)).toBe(false);
    expect(hasTaint(api, OTHER_TAINT)).toBe(true);
    kubeletIntact(api);
  }, 60_000);
});

describe("robustness", () => {
  it("2,000 Probes cause zero API writes", async () => {
    // One check that reads a file and runs no command: the verdict cannot flip under load here, so any
    // write would be the Probes' doing.
    const oneCheck = tempDir("probegate-one-plugin-");
    fs.copyFileSync(path.join(ROOT, "dist", "plugins", "kernel-modules.wasm"), path.join(oneCheck, "kernel-modules.wasm"));
    const { api, gw } = await setup(["--node-condition", COND, "--node-taint", TAINT, "--node-taint-mode=continuous", "--node-taint-wait-csinode=false", `--plugins-dir=${oneCheck}`], {
      kubelet: false,
    });
    await until("converged", () => api.condition("node-a", COND)?.status === "True" && !hasTaint(api));
    await new Promise((r) => setTimeout(r, 500));
    const before = api.requests.length;
    for (let i = 0; i < 20; i++) {
      const answers = await Promise.all(Array.from({ length: 100 }, () => probe(gw)));
      for (const a of answers) expect(a.ready).toBe(true);
    }
    await new Promise((r) => setTimeout(r, 1000));
    expect(api.requests.slice(before).filter((r) => r.method !== "GET")).toEqual([]);
  }, 60_000);

  it("Probe answers at once while the API server fails; the Node converges after recovery; each failure is logged once", async () => {
    const { api, node, gw } = await setup(["--node-condition", COND, "--node-taint", TAINT, "--node-taint-mode=continuous", "--node-taint-wait-csinode=false"]);
    await until("converged", () => api.condition("node-a", COND)?.status === "True" && !hasTaint(api));

    // 500s, then connections refused, while the node breaks.
    api.failNext(1000, { status: 500 });
    breakNode(node);
    await until("probe not ready", async () => (await probe(gw)).ready === false);
    await new Promise((r) => setTimeout(r, 3000));
    api.clearFaults();
    await api.refuse();
    for (let i = 0; i < 20; i++) {
      const t0 = Date.now();
      expect((await probe(gw)).ready).toBe(false);
      expect(Date.now() - t0).toBeLessThan(2000);
    }
    await new Promise((r) => setTimeout(r, 2500));
    expect(api.condition("node-a", COND)!.status).toBe("True"); // nothing got through
    await api.accept();
    await until("False after recovery", () => api.condition("node-a", COND)?.status === "False", 15_000);
    await until("taint after recovery", () => hasTaint(api), 15_000);

    // 429 with Retry-After: the next attempt waits that long.
    api.failNext(1, { status: 429, retryAfter: "2", match: { path: "/status" } });
    healNode(node);
    await until("True after 429", () => api.condition("node-a", COND)?.status === "True", 15_000);
    const statusReqs = api.requests.filter((r) => r.path === "/api/v1/nodes/node-a/status");
    const i429 = statusReqs.findIndex((r) => r.status === 429);
    expect(i429).toBeGreaterThanOrEqual(0);
    const nextWrite = api.requests.find((r) => r.at > statusReqs[i429]!.at && r.method === "PATCH");
    expect(nextWrite!.at - statusReqs[i429]!.at).toBeGreaterThanOrEqual(1900);
    await until("taint removed", () => !hasTaint(api));

    // 409 Conflict on the status write: re-read and retried at once, not given up.
    api.failNext(2, { status: 409, match: { method: "PATCH", path: "/status" } });
    const before409 = api.requests.length;
    breakNode(node);
    await until("False after conflicts", () => api.condition("node-a", COND)?.status === "False", 15_000);
    // Both injected conflicts were answered; a real one (the fake kubelet's
    // heartbeat moving the resourceVersion) may come on top, so count only these.
    expect(api.requests.slice(before409).filter((r) => r.status === 409 && r.injected).length).toBe(2);
    healNode(node);
    await until("True after conflicts", () => api.condition("node-a", COND)?.status === "True", 15_000);

    // One warning per distinct failure, not one per retry.
    const warns = gw.logs().filter((l) => l.msg === "Kubernetes API request failed; retrying");
    const keys = warns.map((l) => `${l.step} ${l.status ?? l.error}`);
    expect(new Set(keys).size).toBe(keys.length);
    const retried = api.requests.filter((r) => r.status === 500).length;
    expect(retried).toBeGreaterThan(warns.filter((l) => l.status === 500).length);
    kubeletIntact(api);
  }, 90_000);

  it("a flapping check is rate-limited and its Events aggregated", async () => {
    const { api, node } = await setup(["--node-condition", COND, "--node-write-interval=3s"], { kubelet: false });
    await until("True", () => api.condition("node-a", COND)?.status === "True");
    const from = api.requests.length;
    const t0 = Date.now();
    // Each state held for 1.5 rounds of the 1 s check interval (its floor), so the checks see every flap.
    for (let i = 0; i < 6; i++) {
      breakNode(node);
      await new Promise((r) => setTimeout(r, 1500));
      healNode(node);
      await new Promise((r) => setTimeout(r, 1500));
    }
    const elapsed = Date.now() - t0;
    // 12 transitions in the storm; the limit allows the burst (5, one of them spent at start) and one per 3 s.
    const statusWrites = api.requests.slice(from).filter((r) => r.method === "PATCH" && r.path.endsWith("/status") && r.at - t0 <= elapsed);
    expect(statusWrites.length).toBeLessThanOrEqual(5 + Math.ceil(elapsed / 3000));
    expect(statusWrites.length).toBeLessThan(12);
    await until("True at the end", () => api.condition("node-a", COND)?.status === "True", 20_000);
    const evs = [...api.eventsV1.values()];
    const warnings = evs.filter((e) => e.reason === "NodeNotReady");
    // Repeats of the same transition join one Event (series.count), not a new object each.
    expect(warnings.map((e) => e.note), "NodeNotReady Events").toHaveLength(1);
    await until("series counted", () => ([...api.eventsV1.values()].find((e) => e.reason === "NodeNotReady")?.series?.count ?? 0) >= 2, 20_000);
    kubeletIntact(api);
  }, 90_000);

  it("falls back to core v1 Events where events.k8s.io/v1 is not served", async () => {
    const { api, node } = await setup(["--node-condition", COND], { eventsV1: false, kubelet: false });
    await until("True", () => api.condition("node-a", COND)?.status === "True");
    breakNode(node);
    await until("v1 Event", () => [...api.coreEvents.values()].some((e) => e.reason === "NodeNotReady" && e.involvedObject?.name === "node-a" && e.count === 1));
  }, 60_000);
});

describe("identities", () => {
  it("--impersonate-node writes status as system:node:<name>, taints as the service account", async () => {
    const { api } = await setup(["--node-condition", COND, "--node-taint", TAINT, "--node-taint-wait-csinode=false", "--impersonate-node"], {
      taints: [{ key: TAINT_KEY, effect: "NoSchedule" }],
    });
    await until("converged", () => api.condition("node-a", COND)?.status === "True" && !hasTaint(api));
    const status = api.writes((r) => r.path.endsWith("/status") && r.status === 200);
    expect(status.length).toBeGreaterThan(0);
    for (const w of status) expect(w.user).toBe("system:node:node-a");
    const taints = api.writes((r) => r.path === "/api/v1/nodes/node-a" && r.status === 200);
    expect(taints.length).toBeGreaterThan(0);
    for (const w of taints) expect(w.user).toMatch(/^system:serviceaccount:/);
    expect(api.denied).toEqual([]);
    kubeletIntact(api);
  }, 60_000);

  it("writes to another node are refused (403), logged once, and Probe is unaffected", async () => {
    const { api, gw } = await setup(["--node-name=node-b", "--node-condition", COND, "--impersonate-node"], { kubelet: false });
    await until("refused", () => api.denied.length > 0);
    await new Promise((r) => setTimeout(r, 2500));
    expect(api.node("node-b").status.conditions.some((c: { type: string }) => c.type === COND)).toBe(false);
    expect((await probe(gw)).ready).toBe(true);
    const warns = gw.logs().filter((l) => l.msg === "Kubernetes API request failed; retrying");
    expect(warns.length).toBe(1);
    expect(String(warns[0]!.error)).toContain("403");
  }, 60_000);
});

describe("per-check conditions", () => {
  it("adds one condition per check under the domain of --node-condition", async () => {
    const plugins = tempDir("probegate-kube-plugins-");
    for (const f of fs.readdirSync(path.join(ROOT, "dist", "plugins")).filter((f) => f.endsWith(".wasm") && !f.startsWith("volume-"))) {
      fs.copyFileSync(path.join(ROOT, "dist", "plugins", f), path.join(plugins, f));
    }
    const { api, node } = await setup(["--node-condition", COND, "--node-condition-per-check", `--plugins-dir=${plugins}`], { kubelet: false, kubeconfigFromEnv: true });
    await until("per-check conditions", () => api.condition("node-a", "lustre.csi.example.com/net-interfaces")?.status === "True");
    expect(api.condition("node-a", "lustre.csi.example.com/lnet-nets")?.status).toBe("True");
    breakNode(node);
    await until("net-interfaces False", () => api.condition("node-a", "lustre.csi.example.com/net-interfaces")?.status === "False");
    expect(api.condition("node-a", "lustre.csi.example.com/lnet-nets")?.status).toBe("True");
    expect(api.condition("node-a", COND)?.status).toBe("False");
    // A check that goes away takes its condition with it; the others stay.
    fs.rmSync(path.join(plugins, "lnet-nets.wasm"));
    await until("lnet-nets condition removed", () => api.condition("node-a", "lustre.csi.example.com/lnet-nets") === undefined, 15_000);
    expect(api.condition("node-a", "lustre.csi.example.com/net-interfaces")?.status).toBe("False");
    kubeletIntact(api);
  }, 60_000);
});

describe("flags", () => {
  it("is off without a condition or taint; bad input is one clear line and exit 2", async () => {
    const cases: Array<[string[], NodeJS.ProcessEnv, RegExp]> = [
      [["--node-condition=x.example.com/Ready"], {}, /--node-condition: needs --node-name \(or NODE_NAME\)/],
      [["--node-name=n1", "--node-condition=Ready"], {}, /--node-condition: "Ready" needs a domain prefix/],
      [["--node-name=n1", "--node-taint=a.example.com/x:NoWay"], {}, /--node-taint: effect "NoWay"/],
      [["--node-name=n1", "--node-taint=a.example.com/x:NoSchedule", "--node-taint-mode=sometimes"], {}, /--node-taint-mode: expected bootstrap-only or continuous/],
      [["--node-name=N_1", "--node-condition=x.example.com/Ready"], {}, /--node-name: "N_1" is not a valid node name/],
      [["--node-condition-per-check"], {}, /needs --node-condition/],
      [["--node-name=n1", "--node-condition=x.example.com/Ready", "--kubeconfig=/nonexistent/kubeconfig"], {}, /node reporting: .*nonexistent/],
      [["--node-name=n1", "--node-condition=x.example.com/Ready"], { KUBECONFIG: "", KUBERNETES_SERVICE_HOST: "" }, /not running in a cluster/],
      [["--node-name=n1", "--node-condition=x.example.com/Ready", "--kube-context=elsewhere"], { KUBECONFIG: "", KUBERNETES_SERVICE_HOST: "" }, /--kube-context: needs a kubeconfig/],
    ];
    const plugins = `--plugins-dir=${tempDir("probegate-no-plugins-")}`;
    for (const [args, env, message] of cases) {
      const sock = path.join(tempDir(), "csi.sock");
      const r = await runProbegate([`--csi-endpoint=unix://${sock}`, "--http-endpoint=127.0.0.1:0", plugins, ...args], { NODE_NAME: "", ...env });
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
    }
  }, 60_000);
});

describe("gateway mode", () => {
  it("waits for CSINode to list the driver's own name (from its GetPluginInfo), not --driver-name, before removing the taint", async () => {
    const { FakeCsiDriver } = await import("./helpers/fake-csi-driver.js");
    const { create, toBinary } = await import("@bufbuild/protobuf");
    const { GetPluginInfoResponseSchema } = await import("../gen/csi/v1/csi_pb.js");
    const UPSTREAM_NAME = "upstream.csi.example.com";
    const sockDir = tempDir("probegate-kube-driver-");
    const driver = new FakeCsiDriver(path.join(sockDir, "driver.sock"), ["Identity", "Node"]);
    await driver.start();
    cleanups.push(() => driver.stop());
    driver.script("/csi.v1.Identity/GetPluginInfo", {
      message: toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: UPSTREAM_NAME, vendorVersion: "v1" })),
    });
    const { api } = await setup(
      ["--node-condition", COND, "--node-taint", TAINT, `--upstream=unix://${path.join(sockDir, "driver.sock")}`, "--gate=none"],
      { taints: [{ key: TAINT_KEY, effect: "NoSchedule" }], csiDrivers: [DRIVER] },
    );
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
    await until("driver asked for its name", () => driver.callsTo("/csi.v1.Identity/GetPluginInfo").length > 0);
    // CSINode lists --driver-name only: the driver kubelet knows is not yet the one behind probegate.
    await new Promise((r) => setTimeout(r, 1000));
    expect(hasTaint(api)).toBe(true);
    api.setCSINode("node-a", [DRIVER, UPSTREAM_NAME]);
    await until("taint removed once CSINode lists the upstream's name", () => !hasTaint(api));
  }, 60_000);
});
