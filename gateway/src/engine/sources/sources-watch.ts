// Watches the --sources file for edits. The directory is watched, not the
// file: a ConfigMap replaces the file by swapping a `..data` symlink, which a
// watch on the old file never sees. The shared DirWatcher backs the watch with
// a poll (inotify misses some cases), and the content hash decides whether
// anything changed, so spurious events cost one read.

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { DirWatcher, type DirWatcherOptions } from "../../support/dir-watcher.js";

/** Passed on to the DirWatcher as they are (its logger also reports failed checks). */
export type SourcesWatchOptions = DirWatcherOptions;

export class SourcesFileWatcher {
  private last: string | null = null;
  private dir: DirWatcher | null = null;
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
    this.dir = new DirWatcher(dirname(this.file), () => this.check(), this.opts);
    await this.dir.start();
  }

  stop(): void {
    this.stopped = true;
    this.dir?.stop();
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
