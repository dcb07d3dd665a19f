// /proc/PID/mounts, parsed. The kernel escapes space, tab, newline and
// backslash in paths as octal (\040 \011 \012 \134), so a path with a space
// never splits a line. The file may change while it is read (a mount or an
// unmount in between two reads of the seq file): lines may then be missing or
// doubled, never half-written, except a last line cut by a size cap, which is
// dropped as malformed. Nothing here touches a mount point.

export interface MountEntry {
  device: string;
  mountPoint: string;
  fsType: string;
  options: readonly string[];
}

/** More lines than any node has (a busy node has a few thousand); past it the rest is ignored. */
export const MAX_MOUNT_LINES = 65_536;

/** Undoes the kernel's octal escapes (any \ooo; a stray backslash stays). */
export function unescapeMountField(s: string): string {
  if (!s.includes("\\")) return s;
  return s.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(Number.parseInt(oct, 8) & 0xff));
}

/** Escapes a path the way the kernel writes it in a mount table (and the volume.statfs source prints it). */
export function escapeMountField(s: string): string {
  return s.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);
}

export function parseMountTable(text: string, maxLines = MAX_MOUNT_LINES): MountEntry[] {
  const out: MountEntry[] = [];
  let start = 0;
  for (let n = 0; n < maxLines && start < text.length; n++) {
    let end = text.indexOf("\n", start);
    // A last line without its newline was cut (a size cap): dropped.
    if (end < 0) break;
    const line = text.slice(start, end);
    start = end + 1;
    const f = line.split(" ");
    if (f.length < 4 || !f[0] || !f[1] || !f[2]) continue;
    const mountPoint = unescapeMountField(f[1]);
    if (!mountPoint.startsWith("/")) continue;
    out.push({ device: unescapeMountField(f[0]), mountPoint, fsType: f[2], options: (f[3] ?? "").split(",") });
  }
  return out;
}

/**
 * The mount that holds `path`: the longest mount point that is the path or
 * one of its parent directories, the last listed winning (a later mount on
 * the same point covers the earlier one).
 */
export function mountHolding(entries: readonly MountEntry[], path: string): MountEntry | undefined {
  let best: MountEntry | undefined;
  for (const e of entries) {
    const mp = e.mountPoint;
    const covers = mp === path || mp === "/" || (path.startsWith(mp) && path.charCodeAt(mp.length) === 47 /* / */);
    if (covers && (!best || mp.length >= best.mountPoint.length)) best = e;
  }
  return best;
}
