// Rediscovering volumes after a restart: the kubelet mounts a CSI volume's
// publish target at <kubelet>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount
// and its staging path at <kubelet>/plugins/kubernetes.io/csi/<driver>/<hash>/globalmount
// (older kubelets: .../csi/pv/<pv>/globalmount), and writes vol_data.json
// beside each with the volume's handle (key volumeHandle), the CSI volume_id.
// Only Lustre mounts are taken. Runs in the background evaluation only.

import { dirname, join } from "node:path";
import { readCapped } from "../engine/sources/read-file.js";
import type { MountEntry } from "../engine/sources/mount-table.js";
import { volumeRefProblem } from "./registry.js";

/** vol_data.json is a handful of short keys; anything larger is not one. */
const VOL_DATA_CAP = 64 * 1024;
/** vol_data.json files read at once. */
const READ_BATCH = 16;

export interface Discovered {
  volumeId: string;
  targetPath?: string;
  stagingPath?: string;
}

/** The kubelet CSI paths among `entries` (Lustre mounts only), before their vol_data.json is read. */
export function csiMountPaths(entries: readonly MountEntry[], kubeletDir: string): Array<{ path: string; kind: "target" | "staging" }> {
  const root = kubeletDir.replace(/\/+$/, "");
  const pods = `${root}/pods/`;
  const plugins = `${root}/plugins/kubernetes.io/csi/`;
  const out: Array<{ path: string; kind: "target" | "staging" }> = [];
  const seen = new Set<string>();
  for (const e of entries) {
    if (e.fsType !== "lustre" || seen.has(e.mountPoint)) continue;
    const p = e.mountPoint;
    if (p.startsWith(pods)) {
      // <uid>/volumes/kubernetes.io~csi/<pv>/mount
      const rest = p.slice(pods.length).split("/");
      if (rest.length === 5 && rest[1] === "volumes" && rest[2] === "kubernetes.io~csi" && rest[4] === "mount" && rest[0] && rest[3]) {
        seen.add(p);
        out.push({ path: p, kind: "target" });
      }
    } else if (p.startsWith(plugins)) {
      // <driver>/<hash>/globalmount, or pv/<pv>/globalmount
      const rest = p.slice(plugins.length).split("/");
      if (rest.length === 3 && rest[2] === "globalmount" && rest[0] && rest[1]) {
        seen.add(p);
        out.push({ path: p, kind: "staging" });
      }
    }
  }
  return out;
}

async function readVolumeHandle(dir: string): Promise<string | undefined> {
  const r = await readCapped(join(dir, "vol_data.json"), VOL_DATA_CAP);
  if (!r.ok || r.truncated) return undefined;
  try {
    const data: unknown = JSON.parse(r.text);
    const handle = (data as { volumeHandle?: unknown } | null)?.volumeHandle;
    return typeof handle === "string" ? handle : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The volumes the mount table shows, with their ids from vol_data.json
 * (a path whose file is missing, unreadable or hostile is skipped). At most
 * `limit` paths are looked at, so a table with thousands of entries costs a
 * bounded number of small reads.
 */
export async function discoverVolumes(entries: readonly MountEntry[], kubeletDir: string, limit: number): Promise<Discovered[]> {
  const paths = csiMountPaths(entries, kubeletDir).slice(0, limit);
  const out: Discovered[] = [];
  for (let i = 0; i < paths.length; i += READ_BATCH) {
    const batch = paths.slice(i, i + READ_BATCH);
    const ids = await Promise.all(batch.map((p) => readVolumeHandle(dirname(p.path))));
    batch.forEach((p, j) => {
      const volumeId = ids[j];
      if (volumeId === undefined) return;
      const ref = p.kind === "target" ? { volumeId, targetPath: p.path } : { volumeId, stagingPath: p.path };
      if (volumeRefProblem(ref)) return;
      out.push(ref);
    });
  }
  return out;
}
