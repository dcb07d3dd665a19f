// #42 through a running gateway: the probegate process on a fake Lustre node
// (fake lnetctl answering pings per NID), the bundled lustre-imports and
// lnet-servers checks, NodeGetStorageHealth over the CSI socket while LNet to
// an OSS is lost with its imports FULL, then found again; the pings counted
// against their bound, and the metrics.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { NodeGetStorageHealthRequestSchema, NodeGetStorageHealthResponseSchema } from "../gen/csi/v1/csi_pb.js";
import { eventually } from "./gateway-mode-harness.js";
import { rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { fakeLustre } from "./helpers/fake-lustre.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";

const MGS = "10.0.0.2@tcp";
const MDS = "10.0.0.3@tcp";
const OSS = "10.0.0.7@tcp";

let gp: GatewayProcess | undefined;
let client: grpc.Client | undefined;
const n = fakeLustre({
  base: "healthy",
  lustre: {
    version: "2.17",
    mgsNid: MGS,
    since: Math.floor(Date.now() / 1000) - 3600,
    filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: "/mnt/lustre", mdts: 1, osts: 8, servers: { MDT0000: [MDS], ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`OST000${i}`, [OSS]])) } }],
  },
});
afterAll(async () => {
  client?.close();
  await gp?.stop();
  n.cleanup();
});

const answers = (over: Record<string, string> = {}) =>
  writeFileSync(join(n.dir, "ping_nids.json"), JSON.stringify({ [MGS]: "ok", [MDS]: "ok", [OSS]: "ok", "10.0.0.10@tcp": "ok", ...over }));

async function storage(c: grpc.Client) {
  const r = await rawCall(c, "/csi.v1.Node/NodeGetStorageHealth", toBinary(NodeGetStorageHealthRequestSchema, create(NodeGetStorageHealthRequestSchema)));
  return fromBinary(NodeGetStorageHealthResponseSchema, r.response!).backendHealth.map((b) => ({ status: b.status as number, reason: b.reason, message: b.message }));
}

const pings = (nid: string) => n.calls("ping").filter((l) => l.endsWith(` ${nid}`)).length;

describe("server reachability through the running gateway", () => {
  it("an OSS lost at the LNet level with its imports FULL: an entry of its own in NodeGetStorageHealth, gone when it answers; pings within their bound", async () => {
    writeFileSync(join(n.procfs, "1", "mounts"), `/dev/sda1 / ext4 rw 0 0\n${MGS}:/lustrefs /mnt/lustre lustre rw,flock 0 0\n`);
    answers();
    const plugins = join(n.dir, "plugins");
    mkdirSync(plugins);
    for (const p of ["lustre-imports", "lnet-servers"]) copyFileSync(join(ROOT, "dist/plugins", `${p}.wasm`), join(plugins, `${p}.wasm`));
    const started = Date.now();
    gp = await startGatewayProcess(
      [`--plugins-dir=${plugins}`, `--path.procfs=${n.procfs}`, `--path.sysfs=${n.sysfs}`, "--check-interval=1s", "--health-interval=1s", "--server-ping-interval=2s", "--command-spawner=off"],
      { env: n.env },
    );
    client = unixClient(gp.socket);
    await eventually(() => storage(client!), (s) => s.length === 0 && pings(OSS) > 0, "first pings, nothing adverse");

    answers({ [OSS]: "timeout" });
    const lost = await eventually(() => storage(client!), (s) => s.some((e) => e.reason === "LnetOssUnreachable"), "OSS entry", 30_000);
    expect(lost).toEqual([{ status: 1, reason: "LnetOssUnreachable", message: expect.stringContaining(`lustrefs: OST0000/OST0001/OST0002`) }]);
    expect(lost[0]!.message).toContain(`on ${OSS} (timeout)`);

    answers();
    await eventually(() => storage(client!), (s) => s.length === 0, "entry gone", 30_000);

    // Eight OSTs on one server: pinged as one NID (never once per target), at most once per 2 s plus the first.
    const elapsedS = (Date.now() - started) / 1000;
    expect(pings(OSS)).toBeLessThanOrEqual(Math.ceil(elapsedS / 2) + 1);

    const metrics = await (await fetch(`http://${gp.http}/metrics`)).text();
    expect(metrics).toMatch(/probegate_lnet_server_ping_duration_seconds_count\{result="ok"\} [1-9]/);
    expect(metrics).toMatch(/probegate_lnet_server_ping_duration_seconds_count\{result="timeout"\} [1-9]/);
  }, 120_000);
});
