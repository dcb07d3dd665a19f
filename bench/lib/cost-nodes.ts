// The fake nodes the nodecost section measures a round on (issue #43), all
// answered by the compiled fake tools (fixtures/fake-lnet.c, which log each
// call to <scenario>/calls.log):
//   lnet      the demo's healthy node with nothing Lustre mounted: LNet up
//             (`lnet` and `lustre` loaded), a mount table without a `lustre`
//             line, and no import listing to print (lctl would answer "no
//             such parameter", as on such a node);
//   lustre-N  a Lustre client with N volumes, each its own mount of a file
//             system of 64 OSTs (as kubelet mounts every PersistentVolume),
//             every import FULL, the volumes under a kubelet directory the
//             gateway rediscovers (bench/health.ts's fake node).
import fs from "node:fs";
import path from "node:path";
import { fakeNode } from "../health.js";
import type { CostNodeId } from "../node-cost.js";
import { COST_NODE_OSTS, COST_NODES } from "../node-cost.js";
import type { FakeNodeDirs } from "../targets.js";

export async function costNode(id: CostNodeId, fakeBin: string): Promise<FakeNodeDirs> {
  const spec = COST_NODES.find((n) => n.id === id)!;
  const node = await fakeNode(spec.volumes, COST_NODE_OSTS, { mountPerVolume: true });
  if (id === "lnet") {
    for (const f of ["proc/1/mounts", "proc/1/mountinfo"]) {
      const file = path.join(node.dir, f);
      const kept = fs.readFileSync(file, "utf8").split("\n").filter((l) => !/ lustre /.test(l));
      fs.writeFileSync(file, kept.join("\n"));
    }
    for (const f of ["imports.out", "import_states.out", "getname.out"]) fs.rmSync(path.join(node.dir, f), { force: true });
  }
  fs.rmSync(path.join(node.dir, "calls.log"), { force: true });
  return { bin: fakeBin, scenario: node.dir, ...(spec.volumes > 0 ? { kubeletDir: node.kubeletDir } : {}) };
}
