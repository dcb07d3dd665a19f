// Mount-table fields as the kernel writes them (/proc/*/mounts), shared by
// the volume checks and by anything that reads paths the host escaped the
// same way (the volume.statfs source's lines).

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
