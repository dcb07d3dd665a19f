// Whether a file is the one last read, from its stat alone: any write, rename
// over, chmod or ConfigMap swap changes its inode, size or change times (ns).
// The kernel stamps inodes from a coarse clock (one tick is several ms), so a
// same-size rewrite within a tick of the last change keeps every field: a file
// changed less than RACY_MS ago must be read every time and never remembered.
// Shared by the plugin directories and modprobe.d, which both skip re-reading
// unchanged files.
import type { BigIntStats } from "node:fs";

export const RACY_MS = 2_000;

export interface FileIdentity {
  /** Equal for two stats of the same, unchanged file. */
  id: string;
  /** Changed long enough ago that `id` can be trusted to tell a later change. */
  settled: boolean;
}

export function fileIdentity(st: BigIntStats, now = Date.now()): FileIdentity {
  return {
    id: `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`,
    settled: now - Number(st.ctimeMs) >= RACY_MS && now - Number(st.mtimeMs) >= RACY_MS,
  };
}
