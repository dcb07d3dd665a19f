// Issue 30, round cost: a volume check whose verdict is marked `stable` is not
// called again while what it reads is unchanged. On a fake Lustre client, with
// the real catalog (fake lctl/lfs/stat, a fake mount table), plugin runtime,
// engine, storage health evaluator and a running gateway answering
// NodeGetVolumeHealth on its socket. Besides the bundled volume-lustre-health,
// a test plugin counts its own calls (its module instance lives across calls)
// and says so in its entry's message: a message that does not move is a call
// that was not made.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { NodeGetVolumeHealthRequestSchema, NodeGetVolumeHealthResponseSchema } from "../gen/csi/v1/csi_pb.js";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { startGateway } from "../src/gateway.js";
import { LocalProbeSource } from "../src/services/probe-source.js";
import { parseEndpoint } from "../src/transport/endpoint.js";
import { rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { fakeLustre, type FakeFilesystem, type FakeLustreState } from "./helpers/fake-lustre.js";
import { ROOT } from "./helpers/gateway-process.js";
import { callsIn, COUNTING_PLUGIN_PRELUDE, metricValue, startChecks } from "./helpers/checks-harness.js";
import { compileAs } from "./hostile/build.js";
import { silentLogger, waitFor } from "./hostile/harness.js";
import { fakeStatScript } from "./helpers/fake-stat.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const FAKE_STAT = fakeStatScript();
const KUBELET = "/var/lib/kubelet";
const target = (pv: string) => `${KUBELET}/pods/p-${pv}/volumes/kubernetes.io~csi/${pv}/mount`;
const now = Math.floor(Date.now() / 1000);
const INSTANCES = ["ffff8f0a3b5c9000", "ffff8f0a3b5ca800", "ffff8f0a3b5cb000"];

/**
 * probe:"volume" over the volume's (scoped) imports. Message `TAG mark=M
 * calls=N`, N its calls so far (all volumes), also as a DEGRADED "Counted"
 * entry. Stable unless the volume id starts with "moving" or an import of its
 * mount is DISCONN; a volume id starting with "noisy" adds an event (so it is
 * never reused, stable or not); one starting with "broken" gets bad output.
 */
function counterPlugin(tag: string): Promise<Uint8Array> {
  const manifest = JSON.stringify({
    abi: 1,
    name: "counter",
    version: "1.0.0",
    description: "test: counts its calls",
    sources: ["lctl.imports", "lctl.import_states", "lfs.getname"],
    modes: ["node"],
    probe: "volume",
    severity: "required",
    config: { mark: { type: "string", default: "a", description: "echoed" } },
  });
  return compileAs(`${COUNTING_PLUGIN_PRELUDE}export function manifest(): string {
  return ${JSON.stringify(manifest)};
}
export function check(input: string): string {
  calls++;
  if (input.includes('"volume.id":"broken')) return "not json";
  const msg = ${JSON.stringify(tag)} + " mark=" + between(input, '"mark":"', '"') + " calls=" + calls.toString();
  let out = '{"status":"warn","reason":"Counted","message":"' + msg + '","facts":{},"health":[{"status":"DEGRADED","reason":"Counted","message":"' + msg + '"}]';
  if (input.includes('"volume.id":"noisy')) out += ',"events":[{"reason":"Remounted","fs":"lustrefs"}]';
  if (!input.includes('"volume.id":"moving') && !input.includes("DISCONN")) out += ',"stable":true';
  return out + "}";
}
`);
}

let counterV1: Uint8Array;
let counterV2: Uint8Array;
beforeAll(async () => {
  [counterV1, counterV2] = await Promise.all([counterPlugin("v1"), counterPlugin("v2")]);
}, 120_000);

function lustre(pvs: string[], down: Record<string, FakeFilesystem["states"]> = {}): FakeLustreState {
  return {
    version: "2.15",
    mgsNid: "10.0.0.2@tcp",
    since: now - 3600,
    filesystems: pvs.map((pv, i) => {
      const states = down[pv];
      const history = states ? Object.fromEntries(Object.keys(states).map((t) => [t, [[now - 300, "DISCONN"]] as Array<[number, "DISCONN"]>])) : undefined;
      return { name: "lustrefs", instance: INSTANCES[i]!, mountpoint: target(pv), mdts: 1, osts: 8, ...(states ? { states, history } : {}) };
    }),
  };
}

async function setup(pvs: string[]) {
  const n = fakeLustre({ base: "healthy", lustre: lustre(pvs) });
  cleanups.push(() => n.cleanup());
  writeFileSync(join(n.procfs, "1", "mounts"), `/dev/sda1 / ext4 rw 0 0\n${pvs.map((pv) => `10.0.0.2@tcp:/lustrefs ${target(pv)} lustre rw,flock 0 0\n`).join("")}`);
  writeFileSync(join(n.bin, "stat"), FAKE_STAT);
  chmodSync(join(n.bin, "stat"), 0o755);
  const pluginsDir = join(n.dir, "health-plugins");
  mkdirSync(pluginsDir);
  copyFileSync(join(ROOT, "dist/plugins/volume-lustre-health.wasm"), join(pluginsDir, "volume-lustre-health.wasm"));
  writeFileSync(join(pluginsDir, "counter.wasm"), counterV1);
  const catalog = await SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silentLogger, statfsBoundMs: 2000, statfsIntervalMs: 0 });
  const { metrics, runtime, engine, health } = await startChecks(catalog, pluginsDir, cleanups);
  const socket = join(n.dir, "csi.sock");
  const gw = await startGateway({
    csiEndpoint: parseEndpoint(`unix://${socket}`),
    identity: { driverName: "probegate.test", vendorVersion: "0.0.0", manifest: {}, capabilities: [] },
    readiness: engine,
    probe: new LocalProbeSource(engine, "readiness"),
    logger: silentLogger,
    metrics,
    health: { view: health.view, registry: health.registry },
  });
  const client = unixClient(socket);
  cleanups.push(async () => {
    client.close();
    await gw.close(1000);
  });
  for (const pv of pvs) health.registry.remember({ volumeId: pv, targetPath: target(pv), readOnly: false, origin: "publish" });
  await waitFor(() => pvs.every((pv) => health.view.volume(pv)?.some((e) => e.check === "counter")), "volumes evaluated");
  return {
    n,
    health,
    runtime,
    pluginsDir,
    /** Past the catalog's command cache (2 s): every round reads the fake tools anew (new results, same text). */
    round: async () => {
      await new Promise((r) => setTimeout(r, 2100));
      await engine.refresh();
      await health.refreshVolumes();
    },
    counted: (pv: string) => health.view.volume(pv)!.find((e) => e.check === "counter")!,
    lustreEntries: (pv: string) => health.view.volume(pv)!.filter((e) => e.check === "volume-lustre-health"),
    checks: async () => ({
      run: await metricValue(metrics, "probegate_volume_checks_total", { result: "run" }),
      reused: await metricValue(metrics, "probegate_volume_checks_total", { result: "reused" }),
    }),
    events: (reason: string) => metricValue(metrics, "probegate_storage_events_total", { check: "counter", reason }),
    volumeHealth: async (pv: string) => {
      const r = await rawCall(client, "/csi.v1.Node/NodeGetVolumeHealth", toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId: pv, volumePublishPath: target(pv) })));
      if (!r.response) throw new Error(`NodeGetVolumeHealth: ${r.error?.details}`);
      return Buffer.from(r.response);
    },
  };
}

describe("volume checks with a stable verdict", () => {
  it("are not called again while their inputs are equal; a changed import is; unstable ones and ones with events are called every round", async () => {
    const s = await setup(["pv1", "moving", "noisy"]);
    const first = s.counted("pv1");
    expect(first.message).toMatch(/^v1 mark=a calls=\d+$/);
    expect(s.lustreEntries("pv1")).toEqual([]);
    const answer = await s.volumeHealth("pv1");
    const before = await s.checks();
    const movingBefore = callsIn(s.counted("moving").message);
    const noisyBefore = callsIn(s.counted("noisy").message);
    // The counter's calls so far, all volumes (the last call made carries it).
    const totalBefore = Math.max(...["pv1", "moving", "noisy"].map((pv) => callsIn(s.counted(pv).message)));

    for (let i = 0; i < 3; i++) await s.round();
    // pv1: neither plugin called (its entry still carries the count of its
    // only call), its entries and their `since` untouched, the same answer on the socket.
    expect(s.counted("pv1")).toEqual(first);
    expect(await s.volumeHealth("pv1")).toEqual(answer);
    // Not stable: called in every round (and rounds the engine's round started).
    expect(callsIn(s.counted("moving").message)).toBeGreaterThanOrEqual(movingBefore + 3);
    // Stable but with an event: called every round, its event counted each time.
    expect(callsIn(s.counted("noisy").message)).toBeGreaterThanOrEqual(noisyBefore + 3);
    const after = await s.checks();
    // Every call made was one of the counter's (for moving and noisy): no volume-lustre-health call at all.
    const totalAfter = Math.max(callsIn(s.counted("moving").message), callsIn(s.counted("noisy").message));
    expect(after.run - before.run).toBe(totalAfter - totalBefore);
    expect(after.run - before.run).toBeGreaterThanOrEqual(6);
    // pv1's two checks and the other volumes' volume-lustre-health: reused.
    expect(after.reused - before.reused).toBeGreaterThanOrEqual(3 * 4);
    expect(await s.events("Remounted")).toBeGreaterThanOrEqual(4);

    // An OST of pv1's mount goes DISCONN: both checks are called again, the
    // new entry appears, the counter's entry keeps its `since`.
    s.n.setLustre(lustre(["pv1", "moving", "noisy"], { pv1: { OST0003: "DISCONN" } }));
    await s.round();
    expect(s.lustreEntries("pv1")).toMatchObject([{ status: "DEGRADED", reason: "OstUnreachable", fs: "lustrefs" }]);
    expect(s.lustreEntries("pv1")[0]!.message).toContain("OST0003 (DISCONN for");
    const rerun = s.counted("pv1");
    expect(callsIn(rerun.message)).toBeGreaterThan(callsIn(first.message));
    expect(rerun.since).toBe(first.since);
    expect(await s.volumeHealth("pv1")).not.toEqual(answer);
    // The other volumes' mounts did not change: their volume-lustre-health verdicts still stand.
    expect(s.lustreEntries("moving")).toEqual([]);

    // Back to FULL: called again (new text), stable again, then reused.
    s.n.setLustre(lustre(["pv1", "moving", "noisy"]));
    await s.round();
    expect(s.lustreEntries("pv1")).toEqual([]);
    const healed = s.counted("pv1");
    expect(callsIn(healed.message)).toBeGreaterThan(callsIn(rerun.message));
    await s.round();
    expect(s.counted("pv1")).toEqual(healed);
  }, 60_000);

  it("an entry whose message changes under the same (status, reason) is answered with the new message, not the first one's", async () => {
    const s = await setup(["moving"]);
    const messages: string[] = [];
    for (let i = 0; i < 3; i++) {
      await s.round();
      const answer = fromBinary(NodeGetVolumeHealthResponseSchema, await s.volumeHealth("moving"));
      const counted = answer.volumeHealth!.healthStatuses.find((e) => e.reason === "Counted")!;
      // What the socket says is the evaluation's latest message (calls=N moves every round)...
      expect(counted.message).toBe(s.counted("moving").message);
      messages.push(counted.message);
    }
    // ...and it did move, under a (status, reason) and since that did not.
    expect(new Set(messages).size).toBe(3);
  }, 60_000);

  it("are called again after a new configuration, a new module, or the volume being forgotten", async () => {
    const s = await setup(["pv1"]);
    const first = s.counted("pv1");
    await s.round();
    expect(s.counted("pv1")).toEqual(first);

    writeFileSync(join(s.pluginsDir, "counter.yaml"), "mark: b\n");
    await s.runtime.rescan();
    await s.round();
    const configured = s.counted("pv1");
    expect(configured.message).toMatch(/^v1 mark=b calls=\d+$/);
    expect(configured.since).toBe(first.since);
    await s.round();
    expect(s.counted("pv1")).toEqual(configured);

    writeFileSync(join(s.pluginsDir, "counter.wasm"), counterV2);
    await s.runtime.rescan();
    await s.round();
    // A new module instance: its count starts again.
    expect(s.counted("pv1").message).toBe("v2 mark=b calls=1");
    await s.round();
    expect(s.counted("pv1").message).toBe("v2 mark=b calls=1");

    s.health.registry.forget("pv1", { targetPath: target("pv1") });
    await waitFor(() => s.health.view.volume("pv1") === undefined, "pv1 forgotten");
    s.health.registry.remember({ volumeId: "pv1", targetPath: target("pv1"), readOnly: false, origin: "publish" });
    await waitFor(() => s.health.view.volume("pv1")?.some((e) => e.check === "counter"), "pv1 evaluated again");
    expect(s.counted("pv1").message).toBe("v2 mark=b calls=2");
  }, 60_000);

  it("are not reused while the plugin is quarantined for faulting on another volume", async () => {
    const s = await setup(["pv1", "broken"]);
    const first = s.counted("pv1");
    expect(s.health.view.volume("broken")).toMatchObject([{ reason: "HealthCheckFailed", check: "counter" }]);
    // broken's bad output gets the plugin quarantined (3 faults); pv1's verdict
    // then stands no longer: its calls fault, and past the grace it reads as failed.
    await waitFor(async () => {
      await s.round();
      return s.counted("pv1").reason === "HealthCheckFailed";
    }, "pv1's stable verdict dropped", 45_000);
    expect(s.counted("pv1").message).toContain("PluginQuarantined");
    expect(s.counted("pv1").since).not.toBe(first.since);
  }, 60_000);
});
