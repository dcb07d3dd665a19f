// Issue #11: limits never fail a healthy node. A node with 1,024 NIs (64 nets
// of 16, each NI on its own interface) through the real gateway and the
// bundled plugins: every check passes and the node is ready, although the
// lnet.interfaces fact alone is several KiB. And a plugin that runs into its
// memory cap says so in /readyz, then is quarantined as before.
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { listNids, netShow, nid, ping, procModules, iface } from "../../bench/lib/lnet-inputs.js";
import { fakeLnet, type FakeLnet } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { compileHostile } from "./hostile/build.js";
import { untilReadyz } from "./helpers/readyz.js";

const BUNDLED = path.join(ROOT, "dist", "plugins");
const NODE_PLUGINS = ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping", "net-interfaces"];
const NIS = 1024;

const running: GatewayProcess[] = [];
const nodes: FakeLnet[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
  for (const n of nodes.splice(0)) n.cleanup();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

const until = (gw: GatewayProcess, pred: (r: { status: number; text: string }) => boolean, what: string) => untilReadyz(gw, pred, what, 40_000);

describe("a healthy node with 1,024 NIs", () => {
  it("is ready with every bundled check passing, and the interface fact carries every interface", async () => {
    const operstate: Record<string, string> = {};
    for (let i = 0; i < NIS; i++) operstate[iface(i)] = "up\n";
    const node = fakeLnet({
      netShow: { out: netShow(NIS) },
      listNids: { out: listNids(NIS) },
      ping: { out: ping(NIS), expectNid: nid(0) },
      modules: procModules(),
      operstate,
    });
    nodes.push(node);
    const gw = await startGatewayProcess(
      [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", "--log-level=info", `--plugins-dir=${BUNDLED}`],
      { env: node.env },
    );
    running.push(gw);
    const r = await until(gw, (x) => x.status === 200, "ready");
    for (const n of NODE_PLUGINS) expect(r.text).toContain(`[+]${n} ok`);

    const json = await (await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } })).json();
    const nets = json.conditions.find((c: { name: string }) => c.name === "lnet-nets");
    expect(nets.status).toBe("pass");
    expect(json.conditions.find((c: { name: string }) => c.name === "net-interfaces").status).toBe("pass");

    // The whole fact arrived and every interface is read: the last one going down is seen.
    node.update({ operstate: { [iface(NIS - 1)]: "down\n" } });
    const down = await until(gw, (x) => x.status === 503, "not ready with the last interface down");
    expect(down.text).toContain(`[-]net-interfaces failed: InterfaceDown: interface(s) not up: ${iface(NIS - 1)} (down)`);
  });
});

describe("a plugin that runs into its memory cap, through the gateway", () => {
  it("fails readiness with PluginMemoryLimit naming the cap, then is quarantined", async () => {
    const dir = tempDir("pg-memhog-");
    dirs.push(dir);
    fs.writeFileSync(path.join(dir, "memhog.wasm"), await compileHostile("memhog"));
    const gw = await startGatewayProcess([`--plugins-dir=${dir}`, "--check-interval=1s", "--plugin-memory=8", "--log-level=info"]);
    running.push(gw);
    const first = await until(gw, (x) => x.text.includes("PluginMemoryLimit"), "memory-limit fault");
    expect(first.status).toBe(503);
    expect(first.text).toMatch(/cap of 8 MiB/);
    expect(first.text).toContain("--plugin-memory");
    await until(gw, (x) => x.text.includes("PluginQuarantined"), "quarantine");
  });
});
