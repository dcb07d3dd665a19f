// Issue 43, a round's crossings: bundled checks that mark their verdict
// stable, so a quiet node's rounds call no plugin. Through a real gateway
// process on a fake LNet node (fake lnetctl for lnet-nets' interface list, a
// fake sysfs for operstate, a fake procfs mount table), counted from /metrics
// as an operator would see it:
// - net-interfaces (readiness): reused round after round, judged in the round
//   after an interface goes down, and again when it comes back;
// - lnet-servers (storage) on a node with no Lustre mount: nothing to ping,
//   reused storage round after storage round; a Lustre mount appearing makes
//   the next round call it.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fakeLnet, netShowOver } from "./helpers/fake-lnet.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";
import { checkEvaluations, readyzConditions } from "./helpers/readyz.js";
import { gatewayTestScope } from "./helpers/test-scope.js";
import { waitFor } from "./hostile/harness.js";

const scope = gatewayTestScope();

async function condition(gw: GatewayProcess, name: string) {
  return (await readyzConditions(gw)).find((c) => c.name === name);
}

/** Waits for `pred`, 30 s at most (rounds are slow on a loaded machine). */
const until = (pred: () => Promise<boolean>, what: string) => waitFor(pred, what, 30_000);

/** Once `check` answers `reason`, three more rounds reuse its verdict and none calls it; its counts then. */
async function reusedWhileQuiet(gw: GatewayProcess, check: string, reason: string): Promise<{ run: number; reused: number }> {
  await until(async () => (await condition(gw, check))?.reason === reason, `${check} to answer ${reason}`);
  const first = await checkEvaluations(gw, check);
  await until(async () => (await checkEvaluations(gw, check)).reused >= first.reused + 3, `three rounds that reuse ${check}'s verdict`);
  expect((await checkEvaluations(gw, check)).run).toBe(first.run);
  return first;
}

describe("net-interfaces' stable verdict", () => {
  it("is reused while operstate is unchanged, and judged again in the round after an interface changes", async () => {
    const node = fakeLnet({ netShow: { out: netShowOver(["eth0", "ib0"]) }, operstate: { eth0: "up\n", ib0: "up\n" } });
    scope.nodes.push(node);
    const plugins = join(scope.path(), "plugins");
    mkdirSync(plugins);
    for (const name of ["lnet-nets", "net-interfaces"]) copyFileSync(join(ROOT, "dist", "plugins", `${name}.wasm`), join(plugins, `${name}.wasm`));
    const gw = await startGatewayProcess([`--path.sysfs=${node.sysfs}`, `--path.procfs=${node.procfs}`, "--check-interval=1s", `--plugins-dir=${plugins}`], { env: node.env });
    scope.running.push(gw);

    // Rounds go on; the sandbox is not called for it again.
    const first = await reusedWhileQuiet(gw, "net-interfaces", "InterfacesUp");
    expect(await condition(gw, "net-interfaces")).toMatchObject({ status: "pass", reason: "InterfacesUp" });

    // ib0 loses its link: the next round reads another operstate, so the plugin is called.
    writeFileSync(join(node.sysfs, "class", "net", "ib0", "operstate"), "down\n");
    await until(async () => (await condition(gw, "net-interfaces"))?.reason === "InterfaceDown", "net-interfaces to see ib0 down");
    expect((await condition(gw, "net-interfaces"))?.message).toContain("ib0 (down)");
    const down = await checkEvaluations(gw, "net-interfaces");
    expect(down.run).toBe(first.run + 1);
    // A failing verdict is as stable: reused while ib0 stays down.
    await until(async () => (await checkEvaluations(gw, "net-interfaces")).reused >= down.reused + 2, "the failing verdict reused");
    expect((await checkEvaluations(gw, "net-interfaces")).run).toBe(down.run);

    writeFileSync(join(node.sysfs, "class", "net", "ib0", "operstate"), "up\n");
    await until(async () => (await condition(gw, "net-interfaces"))?.reason === "InterfacesUp", "net-interfaces to pass again");
    expect((await checkEvaluations(gw, "net-interfaces")).run).toBe(down.run + 1);
  }, 90_000);
});

describe("lnet-servers' stable verdict on a node with no Lustre mount", () => {
  it("is reused storage round after storage round, and the round after a Lustre mount appears calls it", async () => {
    const node = fakeLnet({ netShow: { out: netShowOver(["eth0"]) } });
    scope.nodes.push(node);
    const mounts = join(node.procfs, "1", "mounts");
    mkdirSync(join(node.procfs, "1"), { recursive: true });
    writeFileSync(mounts, "/dev/sda1 / ext4 rw 0 0\n");
    const plugins = join(scope.path(), "plugins-servers");
    mkdirSync(plugins);
    copyFileSync(join(ROOT, "dist", "plugins", "lnet-servers.wasm"), join(plugins, "lnet-servers.wasm"));
    const gw = await startGatewayProcess(
      [`--path.sysfs=${node.sysfs}`, `--path.procfs=${node.procfs}`, "--check-interval=1s", "--health-interval=1s", `--plugins-dir=${plugins}`],
      { env: node.env },
    );
    scope.running.push(gw);

    const first = await reusedWhileQuiet(gw, "lnet-servers", "NoLustreServers");

    // A Lustre mount: the source now reads the servers (or fails to), so the plugin is called.
    writeFileSync(mounts, "/dev/sda1 / ext4 rw 0 0\n10.0.0.2@tcp:/lustrefs /mnt/lustre lustre rw,flock 0 0\n");
    await until(async () => (await checkEvaluations(gw, "lnet-servers")).run > first.run, "lnet-servers called after the mount appeared");
    expect((await condition(gw, "lnet-servers"))?.reason).not.toBe("NoLustreServers");
  }, 90_000);
});
