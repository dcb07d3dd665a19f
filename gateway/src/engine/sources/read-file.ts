// Bounded reads of procfs/sysfs files. stat() sizes are useless there
// (/proc/modules reports 0 bytes), so read in chunks until EOF or the cap.

import { close, open, read } from "node:fs";
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

/**
 * Callbacks, not fs/promises: a FileHandle costs a promise per step and a
 * tracked handle per file, and a round reads several small files. Measured
 * on six procfs/sysfs files: ~100 against ~140 µs of process CPU per file.
 */
export function readCapped(path: string, maxBytes: number): Promise<FileRead> {
  return new Promise((resolve) => {
    open(path, "r", (openErr, fd) => {
      if (openErr) return resolve(fileError(openErr, path));
      const chunks: Buffer[] = [];
      let total = 0;
      const finish = (err: NodeJS.ErrnoException | null) => {
        close(fd, () => {
          if (err) return resolve(fileError(err, path));
          const truncated = total > maxBytes;
          const data = Buffer.concat(chunks).subarray(0, Math.min(total, maxBytes));
          resolve({ ok: true, text: decodeUtf8(data, truncated), truncated });
        });
      };
      const next = () => {
        // One byte past the cap tells "exactly at the cap" from "cut".
        if (total > maxBytes) return finish(null);
        const buf = Buffer.allocUnsafe(Math.min(total === 0 ? FIRST_CHUNK : CHUNK, maxBytes + 1 - total));
        read(fd, buf, 0, buf.length, null, (err, bytesRead) => {
          if (err) return finish(err);
          if (bytesRead === 0) return finish(null);
          chunks.push(buf.subarray(0, bytesRead));
          total += bytesRead;
          next();
        });
      };
      next();
    });
  });
}

/** What reading a file that does not exist reports. */
export const missingFileError = (path: string): string => `ENOENT: ${path} does not exist`;

/** A failed open, stat or read as a FileRead: the errno's code and the words every file source uses. */
export function fileError(err: unknown, path: string): FileRead & { ok: false } {
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? "EIO";
  const reason =
    code === "ENOENT" ? "does not exist" : code === "EACCES" ? "permission denied" : "cannot be read";
  return { ok: false, code, error: `${code}: ${path} ${reason}` };
}
