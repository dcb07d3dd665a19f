// Bounded reads of procfs/sysfs files. stat() sizes are useless there
// (/proc/modules reports 0 bytes), so read in chunks until EOF or the cap.

import { close, closeSync, constants, open, openSync, read, readSync } from "node:fs";
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
      const got = new Collected(maxBytes);
      const finish = (err: NodeJS.ErrnoException | null) => {
        close(fd, () => resolve(err ? fileError(err, path) : got.result()));
      };
      const next = () => {
        if (got.full()) return finish(null);
        const buf = got.nextBuffer();
        read(fd, buf, 0, buf.length, null, (err, bytesRead) => {
          if (err) return finish(err);
          if (bytesRead === 0) return finish(null);
          got.add(buf, bytesRead);
          next();
        });
      };
      next();
    });
  });
}

/**
 * readCapped on the event loop's own thread, for the kernel's small generated
 * files a round reads every time: the release, the module list, a mount
 * table, an interface's operstate, a module's parameters. Each thread-pool
 * step of readCapped (open, read, the read that sees EOF, close) costs a
 * hand-off and a wake-up; for these files that is 5 to 10 times the read
 * itself (bench/crossing-cost.ts: ~150–300 µs of process CPU a file against
 * 13–70 µs). Their kernel handlers generate the text from memory and take
 * no lock a stuck mount or a process in D state holds, as libuv's own
 * /proc/self reads (process.memoryUsage) rely on. Never for a file on a disk
 * (/etc, /lib/modules, the kubelet directory), an operator's --sources
 * globs, Lustre's own parameter files, or another process's memory
 * (/proc/PID/cmdline waits for its mmap lock): those stay on readCapped.
 */
export function readKernelFile(path: string, maxBytes: number): FileRead {
  let fd: number;
  try {
    // Non-blocking: a FIFO put where a kernel file should be cannot hold the
    // event loop in open() or read() (regular and generated files ignore it).
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    return fileError(err, path);
  }
  const got = new Collected(maxBytes);
  try {
    while (!got.full()) {
      const buf = got.nextBuffer();
      const bytesRead = readSync(fd, buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      got.add(buf, bytesRead);
    }
  } catch (err) {
    return fileError(err, path);
  } finally {
    try {
      closeSync(fd);
    } catch {
      // EINTR/EIO on close: the descriptor is released either way.
    }
  }
  return got.result();
}

/** What the chunked reads of one file gathered, up to one byte past the cap. */
class Collected {
  private readonly chunks: Buffer[] = [];
  private total = 0;

  constructor(private readonly maxBytes: number) {}

  /** One byte past the cap tells "exactly at the cap" from "cut". */
  full(): boolean {
    return this.total > this.maxBytes;
  }

  nextBuffer(): Buffer {
    return Buffer.allocUnsafe(Math.min(this.total === 0 ? FIRST_CHUNK : CHUNK, this.maxBytes + 1 - this.total));
  }

  add(buf: Buffer, bytesRead: number): void {
    this.chunks.push(buf.subarray(0, bytesRead));
    this.total += bytesRead;
  }

  result(): FileRead & { ok: true } {
    const truncated = this.total > this.maxBytes;
    const data = Buffer.concat(this.chunks).subarray(0, Math.min(this.total, this.maxBytes));
    return { ok: true, text: decodeUtf8(data, truncated), truncated };
  }
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
