// The bundled storage checks in a running gateway on a fake Lustre client:
// the fake lctl/lfs answer from a scenario rewritten between rounds (an
// eviction, its recovery, a hanging lctl, lctl missing), and the checks'
// verdicts follow in /readyz JSON while readiness (Probe) is untouched: a
// storage check never counts towards it.
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fakeLustre, type FakeLustre, type FakeLustreState } from "./helpers/fake-lustre.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";

const BUNDLED = path.join(ROOT, "dist", "plugins");
const running: GatewayProcess[] = [];
const nodes: FakeLustre[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
  for (const n of nodes.splice(0)) n.cleanup();
});

interface Condition {
  name: string;
  probe: string;
  status: string;
  reason: string;
  message: string;
}

async function conditions(gw: GatewayProcess): Promise<{ status: number; conditions: Condition[] }> {
  const res = await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } });
  const json = (await res.json()) as { conditions: Condition[] };
  return { status: res.status, conditions: json.conditions };
}

async function until(gw: GatewayProcess, name: string, pred: (c: Condition) => boolean, what: string, timeoutMs = 30_000): Promise<{ status: number; c: Condition }> {
  const start = Date.now();
  let last: Condition | undefined;
  while (Date.now() - start < timeoutMs) {
    const r = await conditions(gw);
    last = r.conditions.find((c) => c.name === name);
    if (last && pred(last)) return { status: r.status, c: last };
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${what}; last ${name}: ${JSON.stringify(last)}`);
}

const FS = { name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: "/mnt/lustre", mdts: 1, osts: 4 };

async function gatewayOn(lustre: FakeLustreState) {
  const node = fakeLustre({ base: "healthy", lustre });
  nodes.push(node);
  const gw = await startGatewayProcess(
    [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, "--check-interval=1s", "--health-interval=1s", `--plugins-dir=${BUNDLED}`, "--log-level=info"],
    { env: node.env },
  );
  running.push(gw);
  return { node, gw };
}

describe("storage checks on a fake Lustre client", () => {
  it("follow an eviction and its recovery written between rounds; readiness stays as it was", async () => {
    const now = Math.floor(Date.now() / 1000);
    const { node, gw } = await gatewayOn({ version: "2.16", since: now - 3600, filesystems: [FS] });
    const healthy = await until(gw, "lustre-imports", (c) => c.reason === "ImportsHealthy", "healthy imports");
    expect(healthy.c).toMatchObject({ probe: "storage", status: "pass" });
    expect(healthy.status).toBe(200);

    node.setLustre({ version: "2.16", since: now - 3600, filesystems: [{ ...FS, states: { OST0002: "EVICTED" }, history: { OST0002: [[now - 3600, "FULL"], [now, "DISCONN"], [now, "EVICTED"]] } }] });
    const evicted = await until(gw, "lustre-imports", (c) => c.reason === "Evicted", "the eviction");
    expect(evicted.c.status).toBe("warn");
    expect(evicted.c.message).toContain("lustrefs at /mnt/lustre: evicted by OST0002");
    // A storage check is not readiness.
    expect(evicted.status).toBe(200);

    node.setLustre({ version: "2.16", since: now - 3600, filesystems: [FS] });
    await until(gw, "lustre-imports", (c) => c.reason === "ImportsHealthy", "the recovery");
  }, 90_000);

  it("an MDT down beyond the grace is unreachable; lctl hanging or missing is 'cannot tell', never healthy", async () => {
    const now = Math.floor(Date.now() / 1000);
    const { node, gw } = await gatewayOn({ version: "2.12", since: now - 3600, filesystems: [{ ...FS, states: { MDT0000: "DISCONN" } }] });
    const down = await until(gw, "lustre-imports", (c) => c.reason === "MdtUnreachable", "MDT down");
    expect(down.c.status).toBe("fail");
    expect(down.c.message).toMatch(/every MDT unreachable: MDT0000 \(DISCONN for \d+ s\)/);
    expect(down.status).toBe(200);

    node.hang("import_states");
    const hung = await until(gw, "lustre-imports", (c) => c.reason === "SourceFailed", "lctl hanging", 40_000);
    expect(hung.c.message).toMatch(/ETIMEDOUT: lctl get_param \*\.state timed out/);
    node.unhang("import_states");
    node.missing("lctl");
    const missing = await until(gw, "lustre-imports", (c) => c.message.includes("ENOENT: lctl not found"), "lctl missing", 40_000);
    expect(missing.c.status).toBe("fail");
    await until(gw, "lustre-health-check", (c) => c.message.includes("ENOENT: lctl not found"), "health_check without lctl");
  }, 120_000);

  it("nothing mounted and health_check LBUG", async () => {
    const { node, gw } = await gatewayOn({ filesystems: [] });
    await until(gw, "lustre-imports", (c) => c.reason === "NoLustreMounts" && c.status === "pass", "no mounts");
    node.setHealthCheck("LBUG\n");
    const lbug = await until(gw, "lustre-health-check", (c) => c.reason === "ClientLbug", "LBUG");
    expect(lbug.c).toMatchObject({ probe: "storage", status: "fail" });
  }, 90_000);
});
