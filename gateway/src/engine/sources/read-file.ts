// Bounded reads of procfs/sysfs files. stat() sizes are useless there
// (/proc/modules reports 0 bytes), so read in chunks until EOF or the cap.

import { open } from "node:fs/promises";
import { decodeUtf8 } from "../../support/decode.js";

export type FileRead =
  | { ok: true; text: string; truncated: boolean }
  | { ok: false; code: string; error: string };

/**
 * Most files read here are a few hundred bytes (operstate, vol_data.json, a
 * module's parameters): the first read takes a slice of Node's shared 8 KiB
 * buffer pool (it serves requests under 4 KiB) instead of a buffer of its own
 * from the C heap. A 64 KiB first read made each of them a 64 KiB calloc; with
 * 16 in flight glibc's main heap grew by a MiB it kept (docs/performance.md,
 * "Memory"). Longer files continue in 64 KiB reads.
 */
const FIRST_CHUNK = 4095;
const CHUNK = 64 * 1024;

export async function readCapped(path: string, maxBytes: number): Promise<FileRead> {
  let handle;
  try {
    handle = await open(path, "r");
  } catch (err) {
    return fileError(err, path);
  }
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    // One byte past the cap tells "exactly at the cap" from "cut".
    while (total <= maxBytes) {
      const buf = Buffer.allocUnsafe(Math.min(total === 0 ? FIRST_CHUNK : CHUNK, maxBytes + 1 - total));
      const { bytesRead } = await handle.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      chunks.push(buf.subarray(0, bytesRead));
      total += bytesRead;
    }
    const truncated = total > maxBytes;
    const data = Buffer.concat(chunks).subarray(0, Math.min(total, maxBytes));
    return { ok: true, text: decodeUtf8(data, truncated), truncated };
  } catch (err) {
    return fileError(err, path);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** What reading a file that does not exist reports. */
export const missingFileError = (path: string): string => `ENOENT: ${path} does not exist`;

function fileError(err: unknown, path: string): FileRead {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? "EIO";
  const reason =
    code === "ENOENT" ? "does not exist" : code === "EACCES" ? "permission denied" : "cannot be read";
  return { ok: false, code, error: `${code}: ${path} ${reason}` };
}
