// The stand-in driver's NodeUnpublishVolume as the Lustre drivers run it:
// `umount PATH` under a per-volume lock, so a retry while one runs is ABORTED
// ("an operation with the given volume ID already exists"), and a path no
// longer mounted is done at once (the retry after someone else unmounted it).
// Used by the stuck-operation tests and by the soak's upstream driver process.

import { execFile } from "node:child_process";
import * as grpc from "@grpc/grpc-js";
import { fromBinary } from "@bufbuild/protobuf";
import { NodeUnpublishVolumeRequestSchema } from "../../gen/csi/v1/csi_pb.js";
import type { ScriptedReply } from "./fake-csi-driver.js";

/** What the driver needs of the node: the environment its umount runs in (the fake's on PATH) and the mount table. */
export interface UnmountNode {
  env: NodeJS.ProcessEnv;
  mounts(): string;
}

/** A NodeUnpublishVolume script; `locked` holds the volumes whose umount is running. */
export function unmountUnderLock(node: UnmountNode, locked = new Set<string>()): (request: Buffer) => ScriptedReply | Promise<ScriptedReply> {
  return (request) => {
    const req = fromBinary(NodeUnpublishVolumeRequestSchema, request);
    if (locked.has(req.volumeId)) {
      return { error: { code: grpc.status.ABORTED, details: `an operation with the given volume ID ${req.volumeId} already exists` } };
    }
    if (!node.mounts().split("\n").some((l) => l.split(" ")[1] === req.targetPath.replace(/ /g, "\\040"))) return {};
    locked.add(req.volumeId);
    return new Promise((resolve) =>
      execFile("umount", [req.targetPath], { env: node.env }, (err, _out, stderr) => {
        locked.delete(req.volumeId);
        resolve(err ? { error: { code: grpc.status.INTERNAL, details: `umount failed: ${stderr}` } } : {});
      }),
    );
  };
}
