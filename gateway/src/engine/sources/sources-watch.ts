// Watches the --sources file for edits. The directory is watched, not the
// file: a ConfigMap replaces the file by swapping a `..data` symlink, which a
// watch on the old file never sees. A poll backs the watch up (inotify misses
// some cases), and the content hash decides whether anything changed, so
// spurious events cost one read.

import { createHash } from "node:crypto";
import { watch, type FSWatcher } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { Logger } from "../../observability/logger.js";

export interface SourcesWatchOptions {
  pollMs?: number;
  debounceMs?: number;
  logger?: Logger;
}

export class SourcesFileWatcher {
  private last: string | null = null;
  private watcher: FSWatcher | null = null;
  private poll: NodeJS.Timeout | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly file: string,
    private readonly onChange: (sha256: string) => Promise<void>,
    private readonly opts: SourcesWatchOptions = {},
  ) {}

  async start(): Promise<void> {
    this.last = await this.hash();
    this.rewatch();
    this.poll = setInterval(() => {
      if (!this.watcher) this.rewatch();
      this.check();
    }, this.opts.pollMs ?? 2000);
    this.poll.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.poll) clearInterval(this.poll);
    if (this.debounce) clearTimeout(this.debounce);
    this.watcher?.close();
    this.watcher = null;
  }

  private rewatch(): void {
    try {
      const w = watch(dirname(this.file), { persistent: false }, () => this.trigger());
      w.on("error", () => {
        if (this.watcher === w) this.watcher = null;
        w.close();
      });
      this.watcher = w;
    } catch {
      this.watcher = null; // the directory is missing; the poll retries
    }
  }

  private trigger(): void {
    if (this.stopped) return;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => this.check(), this.opts.debounceMs ?? 150);
    this.debounce.unref();
  }

  /** One check at a time; an event during a check runs one more. */
  private check(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      try {
        const sha = await this.hash();
        if (sha !== this.last && !this.stopped) {
          this.last = sha;
          await this.onChange(sha);
        }
      } catch (err) {
        this.opts.logger?.error({ err: (err as Error).message, file: this.file }, "sources file check failed");
      } finally {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.check();
        }
      }
    })();
  }

  /** Content hash, or a marker for a file that cannot be read (so its return is noticed). */
  private async hash(): Promise<string> {
    try {
      return createHash("sha256").update(await readFile(this.file)).digest("hex");
    } catch (err) {
      return `unreadable:${(err as NodeJS.ErrnoException).code ?? "EIO"}`;
    }
  }
}
