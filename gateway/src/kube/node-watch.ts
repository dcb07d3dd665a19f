// What the node reporter sees of its Node: a read (a list after a 410 Gone),
// then a watch from that resourceVersion with bookmarks, restarted with
// backoff when it ends; while it is down, the Node is read again every resync
// period. Each change goes to the reconcile loop (reporter.ts), which owns
// every write: nothing here writes.
import { Backoff } from "./backoff.js";
import { KubeError, type Identity, type KubeApi, type WatchEvent, type WatchHandle } from "./client/api.js";
import type { FailureLog } from "./failure-log.js";
import { viewOf, type NodeView } from "./node-view.js";

export interface NodeWatchOptions {
  api: KubeApi;
  as: Identity;
  nodeName: string;
  resyncMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  now: () => number;
  failures: FailureLog;
  /** The Node as the reconcile loop holds it; undefined when it is to be read again. */
  current(): NodeView | undefined;
  /** The Node as seen now (undefined: read it again); `reconcile`: run the loop now. */
  seen(view: NodeView | undefined, reconcile: boolean): void;
}

export class NodeWatch {
  private handle: WatchHandle | null = null;
  private wanted = false;
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  private readonly backoff: Backoff;
  /** Where the next watch starts: the last resourceVersion seen (read, list, event or bookmark). */
  private from = "";
  /** After a 410 the Node is listed, not read: a watch must start from the list's resourceVersion. */
  private relist = false;

  constructor(private readonly o: NodeWatchOptions) {
    this.backoff = new Backoff(o.backoffBaseMs, o.backoffCapMs);
  }

  start(): void {
    this.wanted = true;
    // The bounded re-read: while the watch is down, the Node is read again every resync period.
    this.resyncTimer = setInterval(() => {
      if (!this.handle) this.o.seen(undefined, true);
    }, this.o.resyncMs);
    this.resyncTimer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    this.handle?.stop();
    this.handle = null;
  }

  /** Reads the Node (lists it after a 410) and notes where the next watch starts. */
  async read(): Promise<NodeView> {
    if (this.relist) {
      const list = await this.o.api.listNode(this.o.as);
      if (!list.item) throw new KubeError(`nodes "${this.o.nodeName}" not found`, 404, "http");
      const view = viewOf(list.item);
      this.from = list.resourceVersion;
      this.relist = false;
      return view;
    }
    const view = viewOf(await this.o.api.readNode(this.o.as));
    this.from = view.resourceVersion;
    return view;
  }

  /** Starts the watch unless it runs, waits to restart, or there is no Node read yet to start from. */
  ensure(): void {
    const view = this.o.current();
    if (!this.wanted || this.handle || this.timer || this.stopped || !view) return;
    // read() always sets `from`, but to "" when a list answer carries no resourceVersion.
    const rv = this.from || view.resourceVersion;
    const timeoutSeconds = Math.max(1, Math.round(this.o.resyncMs / 1000));
    let ended = false;
    const startedAt = this.o.now();
    const onEvent = ({ type, object, resourceVersion }: WatchEvent) => {
      if (this.stopped || ended) return;
      this.backoff.reset();
      this.o.failures.succeeded("watch node");
      if (resourceVersion) this.from = resourceVersion;
      if (type === "DELETED") this.o.seen(undefined, true);
      else if (object && (type === "MODIFIED" || type === "ADDED")) this.o.seen(viewOf(object), true);
    };
    const onDone = (err: KubeError | null) => {
      if (ended) return;
      ended = true;
      if (this.handle === handle) this.handle = null;
      if (this.stopped) return;
      if (err?.status === 410) {
        this.o.seen(undefined, false);
        this.relist = true;
      }
      // A watch the server ends at once, again and again, must not turn into a hot loop.
      const wait = err || this.o.now() - startedAt < 1000 ? this.backoff.next() : 0;
      if (err) this.o.failures.failed("watch node", err);
      else this.o.failures.succeeded("watch node");
      this.timer = setTimeout(() => {
        this.timer = null;
        if (!this.o.current()) this.o.seen(undefined, true);
        else this.ensure();
      }, wait);
      this.timer.unref();
    };
    // onDone never runs before watchNode returns (it reads handle, which would not exist yet).
    const handle = this.o.api.watchNode(this.o.as, rv, timeoutSeconds, onEvent, onDone);
    this.handle = handle;
  }
}
