// Mount-table fields as the kernel writes them (/proc/*/mounts), shared by
// the volume checks and by anything that reads paths the host escaped the
// same way (the volume.statfs source's lines).
import { fields, splitLines } from "./strings";

function isOctal(c: i32): bool {
  return c >= 48 && c <= 55;
}

/** The kernel writes space, tab, newline and backslash in mount fields as \ooo. */
export function unescapeMountField(s: string): string {
  if (s.indexOf("\\") < 0) return s;
  const n = s.length;
  const codes = new Array<i32>();
  let i = 0;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (c == 92 && i + 3 < n && isOctal(s.charCodeAt(i + 1)) && isOctal(s.charCodeAt(i + 2)) && isOctal(s.charCodeAt(i + 3))) {
      codes.push((s.charCodeAt(i + 1) - 48) * 64 + (s.charCodeAt(i + 2) - 48) * 8 + (s.charCodeAt(i + 3) - 48));
      i += 4;
    } else {
      codes.push(c);
      i++;
    }
  }
  return String.fromCharCodes(codes);
}

/** "/a/b/" and "/a/b" name the same mount point; "/" stays "/". */
export function normalizeMountPath(p: string): string {
  let end = p.length;
  while (end > 1 && p.charCodeAt(end - 1) == 47) end--;
  return p.substring(0, end);
}

/** One line of a mount table: `device mountpoint fstype options dump pass`. */
export class MountEntry {
  device: string;
  mountPoint: string;
  fsType: string;
  readOnly: bool;
  constructor(device: string, mountPoint: string, fsType: string, readOnly: bool) {
    this.device = device;
    this.mountPoint = mountPoint;
    this.fsType = fsType;
    this.readOnly = readOnly;
  }
}

/**
 * The entries of a mount table, fields unescaped and mount points normalized;
 * null when the text does not look like one (no entry, or more junk lines
 * than entries).
 */
export function parseMountTable(text: string): Array<MountEntry> | null {
  const entries = new Array<MountEntry>();
  let junk = 0;
  const lines = splitLines(text);
  for (let i = 0; i < lines.length; i++) {
    const f = fields(lines[i]);
    if (f.length == 0) continue;
    if (f.length < 4 || f[1].charCodeAt(0) != 47) {
      junk++;
      continue;
    }
    const ro = f[3] == "ro" || f[3].startsWith("ro,");
    entries.push(new MountEntry(unescapeMountField(f[0]), normalizeMountPath(unescapeMountField(f[1])), f[2], ro));
  }
  return entries.length == 0 || junk > entries.length ? null : entries;
}

/** The entry mounted last at `path` (later mounts hide earlier ones), or null. */
export function mountAt(entries: Array<MountEntry>, path: string): MountEntry | null {
  for (let i = entries.length - 1; i >= 0; i--) {
    if (entries[i].mountPoint == path) return entries[i];
  }
  return null;
}
