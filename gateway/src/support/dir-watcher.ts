// Watching a directory that a ConfigMap may swap under us (`..data` symlink
// swaps, the directory itself replaced): a debounced fs.watch backed by a poll.
// Shared by the plugin directories and the --sources file's directory.

import { watch, type FSWatcher } from "node:fs";
import { stat } from "node:fs/promises";
import type { Logger } from "../observability/logger.js";

const UNWATCHED_POLL_MS = 2_000;
const WATCHED_POLL_MS = 60_000;

export interface DirWatcherOptions {
  debounceMs?: number;
  /** The safety-net poll; given, it applies whether or not inotify is watching (tests). */
  pollMs?: number;
  logger?: Logger;
}

/**
 * Calls `onChange` (debounced) after any fs event in DIR, and on a poll
 * regardless: inotify misses some cases (the directory itself replaced, NFS,
 * events during re-watch), and the caller compares content hashes, so a
 * spurious rescan costs a few stats. The directory is re-watched when its
 * inode changes or it appears after being absent. The poll runs every 2 s
 * while nothing watches (directory absent, watch refused) and every 60 s
 * while inotify does: it is only the net under inotify, and each poll wakes
 * an otherwise idle gateway (bench/README.md, "idle").
 */
export class DirWatcher {
  private watcher: FSWatcher | null = null;
  private watchedIno: number | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private poll: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly dir: string,
    private readonly onChange: () => void,
    private readonly opts: DirWatcherOptions = {},
  ) {}

  async start(): Promise<void> {
    await this.ensureWatch();
    this.schedulePoll();
  }

  private schedulePoll(): void {
    if (this.stopped) return;
    const ms = this.opts.pollMs ?? (this.watcher ? WATCHED_POLL_MS : UNWATCHED_POLL_MS);
    this.poll = setTimeout(() => {
      void this.ensureWatch().finally(() => this.schedulePoll());
      this.onChange();
    }, ms);
    this.poll.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.poll) clearTimeout(this.poll);
    if (this.debounce) clearTimeout(this.debounce);
    this.closeWatcher();
  }

  private trigger = (): void => {
    if (this.stopped) return;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.ensureWatch();
      this.onChange();
    }, this.opts.debounceMs ?? 150);
    this.debounce.unref();
  };

  private closeWatcher(): void {
    this.watcher?.close();
    this.watcher = null;
    this.watchedIno = null;
  }

  private async ensureWatch(): Promise<void> {
    let ino: number | null = null;
    try {
      const st = await stat(this.dir);
      ino = st.isDirectory() ? st.ino : null;
    } catch {
      ino = null;
    }
    if (this.stopped) return;
    if (ino === null) {
      if (this.watcher) this.opts.logger?.warn({ dir: this.dir }, "watched directory disappeared; polling for it");
      this.closeWatcher();
      return;
    }
    if (this.watcher && this.watchedIno === ino) return;
    this.closeWatcher();
    try {
      const w = watch(this.dir, { persistent: false }, this.trigger);
      w.on("error", () => {
        // The directory was removed or replaced: drop the watch; the next
        // poll re-establishes it.
        if (this.watcher === w) this.closeWatcher();
        this.trigger();
      });
      this.watcher = w;
      this.watchedIno = ino;
    } catch (e) {
      this.opts.logger?.warn({ dir: this.dir, err: (e as Error).message }, "cannot watch directory; relying on polling");
    }
  }
}
