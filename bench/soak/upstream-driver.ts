// The fake upstream CSI driver for gateway mode, as its own process so the
// soak can SIGKILL it: a @grpc/grpc-js server (gateway/test/helpers'
// FakeCsiDriver) on a unix socket. Node calls answer after a random delay:
// mostly quick, sometimes slow, now and then far past any caller's deadline.
//   node dist/bench/soak/upstream-driver.js '{"socket":"/tmp/x/driver.sock","seed":1}'
import { create, toBinary } from "@bufbuild/protobuf";
import { NodeGetVolumeStatsResponseSchema, ProbeResponseSchema, VolumeUsage_Unit } from "../../gateway/gen/csi/v1/csi_pb.js";
import { FakeCsiDriver, type ScriptedReply } from "../../gateway/test/helpers/fake-csi-driver.js";
import { isMain } from "../lib/main.js";
import { Rng } from "./rng.js";

export const SLOW_MS = 20_000;

async function main(params: { socket: string; seed: number }): Promise<void> {
  const rng = new Rng(params.seed);
  const delay = () => (rng.chance(0.02) ? SLOW_MS : rng.chance(0.1) ? rng.between(100, 800) : rng.between(0, 30));
  const driver = new FakeCsiDriver(params.socket, ["Identity", "Node"]);
  const ready = toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: true }));
  const stats = toBinary(
    NodeGetVolumeStatsResponseSchema,
    create(NodeGetVolumeStatsResponseSchema, { usage: [{ unit: VolumeUsage_Unit.BYTES, total: 1n << 40n, used: 1n << 30n, available: (1n << 40n) - (1n << 30n) }] }),
  );
  const timed = (message?: Uint8Array) => (): ScriptedReply => ({ message, delayMs: delay() });
  driver.script("/csi.v1.Identity/Probe", { message: ready });
  for (const m of ["NodePublishVolume", "NodeUnpublishVolume", "NodeStageVolume", "NodeUnstageVolume"]) driver.script(`/csi.v1.Node/${m}`, timed());
  driver.script("/csi.v1.Node/NodeGetVolumeStats", timed(stats));
  await driver.start();
  // Recorded calls would grow for the whole run.
  setInterval(() => driver.calls.splice(0), 5_000).unref();
  process.stdout.write("READY\n");
  process.on("SIGTERM", () => void driver.stop().then(() => process.exit(0)));
}

if (isMain(import.meta.url)) {
  main(JSON.parse(process.argv[2]!)).catch((e) => {
    process.stderr.write(String(e?.stack ?? e) + "\n");
    process.exit(1);
  });
}
