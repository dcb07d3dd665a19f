// The fake upstream CSI driver for gateway mode, as its own process so the
// soak can SIGKILL it: a @grpc/grpc-js server (gateway/test/helpers'
// FakeCsiDriver) on a unix socket. Node calls answer after a random delay:
// mostly quick, sometimes slow, now and then far past any caller's deadline.
// Given a fake node (gateway/test/helpers/fake-umount.ts), the unpublish of a
// volume whose id starts with "stuck-" runs that node's `umount PATH` under a
// per-volume lock as the Lustre drivers do (the stuck-unmount fault).
//   node dist/bench/soak/upstream-driver.js '{"socket":"/tmp/x/driver.sock","seed":1,"fakeNode":"/tmp/x/node"}'
import fs from "node:fs";
import path from "node:path";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { NodeGetVolumeStatsResponseSchema, NodeUnpublishVolumeRequestSchema, ProbeResponseSchema, VolumeUsage_Unit } from "../../gateway/gen/csi/v1/csi_pb.js";
import { FakeCsiDriver, type ScriptedReply } from "../../gateway/test/helpers/fake-csi-driver.js";
import { unmountUnderLock } from "../../gateway/test/helpers/unmounting-driver.js";
import { isMain } from "../lib/main.js";
import { Rng } from "./rng.js";

export const SLOW_MS = 20_000;

async function main(params: { socket: string; seed: number; fakeNode?: string }): Promise<void> {
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
  if (params.fakeNode) {
    const dir = params.fakeNode;
    const unmount = unmountUnderLock({
      env: { ...process.env, PATH: `${path.join(dir, "bin")}:${process.env.PATH ?? ""}`, FAKE_NODE_DIR: dir },
      mounts: () => fs.readFileSync(path.join(dir, "proc", "1", "mounts"), "utf8"),
    });
    const steady = timed();
    driver.script("/csi.v1.Node/NodeUnpublishVolume", (request) =>
      fromBinary(NodeUnpublishVolumeRequestSchema, request).volumeId.startsWith("stuck-") ? unmount(request) : steady(),
    );
  }
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
