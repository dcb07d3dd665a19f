// A reproducible POSIX ustar writer: regular files and directories only, every
// entry owned by 0:0 with no owner names, mtime 0 and a fixed mode, in the
// order given. The same entries give the same bytes on any machine, which is
// what makes an image layer's digest a function of its files alone.

export interface TarEntry {
  /** A relative path, '/'-separated; a directory ends with '/'. */
  name: string;
  /** Absent for a directory. */
  bytes?: Uint8Array;
}

const BLOCK = 512;

function octal(n: number, width: number): string {
  // width-1 octal digits and a NUL, as ustar fields are.
  return `${n.toString(8).padStart(width - 1, "0")}\0`;
}

function header(name: string, size: number, dir: boolean): Uint8Array {
  if (name === "" || name.startsWith("/") || name.split("/").includes("..")) throw new Error(`tar: unsafe entry name ${JSON.stringify(name)}`);
  const nameBytes = Buffer.from(name, "utf8");
  if (nameBytes.length > 100) throw new Error(`tar: entry name ${JSON.stringify(name)} is longer than 100 bytes`);
  const h = Buffer.alloc(BLOCK);
  nameBytes.copy(h, 0);
  h.write(octal(dir ? 0o755 : 0o644, 8), 100, "ascii");
  h.write(octal(0, 8), 108, "ascii");
  h.write(octal(0, 8), 116, "ascii");
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(0, 12), 136, "ascii");
  h.write(" ".repeat(8), 148, "ascii");
  h.write(dir ? "5" : "0", 156, "ascii");
  h.write("ustar\0", 257, "ascii");
  h.write("00", 263, "ascii");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return h;
}

/** The archive's bytes: each entry's header and content padded to 512, then two zero blocks. */
export function writeTar(entries: readonly TarEntry[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const e of entries) {
    const dir = e.bytes === undefined;
    const size = e.bytes?.length ?? 0;
    parts.push(header(e.name, size, dir));
    if (e.bytes) {
      parts.push(e.bytes);
      const pad = (BLOCK - (size % BLOCK)) % BLOCK;
      if (pad) parts.push(new Uint8Array(pad));
    }
  }
  parts.push(new Uint8Array(BLOCK * 2));
  return Buffer.concat(parts);
}
