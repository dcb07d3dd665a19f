// Events on the Node (readiness and storage health transitions) and on
// PersistentVolumes (volume health transitions). A transition that repeats (a
// flapping check) updates the first Event's count instead of creating a new
// object each time, as the API server's own event correlation does.
import type { KubeApi } from "./client/api.js";
import { KubeError } from "./client/api.js";

/** What an Event is about: the own Node, or a cluster-scoped PersistentVolume. */
export interface EventObject {
  kind: "Node" | "PersistentVolume";
  name: string;
}

export interface PendingEvent {
  type: "Normal" | "Warning";
  reason: string;
  note: string;
  count: number;
  firstMs: number;
  lastMs: number;
  about: EventObject;
  /** Repeats with the same object, type, reason and key join one Event (the note is the first one's). */
  key: string;
  action: string;
}

interface Written {
  name: string;
  count: number;
  api: "events.k8s.io/v1" | "v1";
}

/** Repeats within this window join the first Event (the API server keeps Events for an hour by default). */
const AGGREGATE_MS = 60 * 60 * 1000;
/** Distinct transitions waiting for the write budget; enough for every volume of a node changing at once in common cases. */
const QUEUE_LIMIT = 64;
/**
 * Written Events remembered for aggregation. Past an hour an entry is of no
 * use (a repeat then starts a new Event) and is dropped; past this many the
 * least recently written go. Notes carry check messages, so without both a
 * node whose messages vary keeps one entry per distinct note for ever.
 */
export const MAX_REMEMBERED_EVENTS = 1024;
export const EVENT_NAMESPACE = "default";
export const REPORTING_CONTROLLER = "probegate.csi.io/node-reporter";

export class NodeEvents {
  private queue: PendingEvent[] = [];
  private written = new Map<string, Written & { lastMs: number }>();
  private api: "events.k8s.io/v1" | "v1" = "events.k8s.io/v1";
  /** Names are <object>.<nanoseconds, hex> like kubelet's; bumped so two Events of one millisecond differ. */
  private lastNameNs = 0n;

  constructor(private readonly nodeName: string) {}

  get pending(): boolean {
    return this.queue.length > 0;
  }

  /** Written Events still remembered for aggregation (bounded; for tests and soaks). */
  get remembered(): number {
    return this.written.size;
  }

  record(
    type: PendingEvent["type"],
    reason: string,
    note: string,
    nowMs: number,
    opts: { about?: EventObject; key?: string; action?: string } = {},
  ): void {
    const about = opts.about ?? { kind: "Node", name: this.nodeName };
    const key = opts.key ?? note;
    const same = this.queue.find((e) => e.type === type && e.reason === reason && e.key === key && sameObject(e.about, about));
    if (same) {
      same.count++;
      same.lastMs = nowMs;
      return;
    }
    this.queue.push({ type, reason, note, count: 1, firstMs: nowMs, lastMs: nowMs, about, key, action: opts.action ?? "CheckNode" });
    // A storm faster than the write rate: the oldest distinct transitions are dropped, the newest kept.
    if (this.queue.length > QUEUE_LIMIT) this.queue.shift();
  }

  /**
   * Writes the oldest pending Event; throws KubeError (the Event stays queued).
   * Repeats recorded while the write is on the wire join the queued entry
   * (record()) after this write built its body: they stay queued for the next
   * write, so the Event's count in the API never loses them.
   */
  async writeOne(api: KubeApi, nowMs: number): Promise<void> {
    const ev = this.queue[0];
    if (!ev) return;
    const { count, lastMs } = ev;
    const key = `${ev.about.kind}\u0000${ev.about.name}\u0000${ev.type}\u0000${ev.reason}\u0000${ev.key}`;
    const prev = this.written.get(key);
    try {
      if (prev && nowMs - prev.lastMs < AGGREGATE_MS) {
        const total = prev.count + count;
        await api.patchEvent(prev.api, EVENT_NAMESPACE, prev.name, this.repeatBody(prev.api, total, lastMs));
        this.remember(key, { ...prev, count: total, lastMs }, nowMs);
      } else {
        let ns = BigInt(ev.firstMs) * 1_000_000n;
        if (ns <= this.lastNameNs) ns = this.lastNameNs + 1n;
        this.lastNameNs = ns;
        const name = `${ev.about.name}.${ns.toString(16)}`;
        await this.create(api, name, { ...ev, count, lastMs });
        this.remember(key, { name, count, api: this.api, lastMs }, nowMs);
      }
      // A storm may have dropped it from the queue meanwhile (record()); then nothing is left to write.
      const at = this.queue.indexOf(ev);
      if (at >= 0 && ev.count === count) this.queue.splice(at, 1);
      else if (at >= 0) ev.count -= count;
    } catch (err) {
      // The Event may have expired (404 on patch): start a new one next time.
      if (err instanceof KubeError && err.status === 404 && prev) this.written.delete(key);
      throw err;
    }
  }

  /** Re-inserted, so the map's order is the order of last writes (the oldest first). */
  private remember(key: string, w: Written & { lastMs: number }, nowMs: number): void {
    this.written.delete(key);
    this.written.set(key, w);
    for (const [k, v] of this.written) {
      if (this.written.size > MAX_REMEMBERED_EVENTS || nowMs - v.lastMs >= AGGREGATE_MS) this.written.delete(k);
      else break;
    }
  }

  private async create(api: KubeApi, name: string, ev: PendingEvent): Promise<void> {
    // A Node's uid is its name in kubelet's own Events; a PV's uid is not known
    // from the mount path, and the API server does not require one.
    const ref = { apiVersion: "v1", kind: ev.about.kind, name: ev.about.name, ...(ev.about.kind === "Node" ? { uid: ev.about.name } : {}) };
    if (this.api === "events.k8s.io/v1") {
      try {
        await api.createEvent("events.k8s.io/v1", EVENT_NAMESPACE, {
          metadata: { name, namespace: EVENT_NAMESPACE },
          eventTime: new Date(ev.firstMs),
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: `${REPORTING_CONTROLLER}-${this.nodeName}`.slice(0, 128),
          action: ev.action,
          reason: ev.reason,
          note: boundNote(ev.note),
          type: ev.type,
          regarding: ref,
          ...(ev.count > 1 ? { series: { count: ev.count, lastObservedTime: new Date(ev.lastMs) } } : {}),
        });
        return;
      } catch (err) {
        // A cluster without events.k8s.io/v1 (before 1.19): the core API, from now on.
        if (!(err instanceof KubeError && err.status === 404)) throw err;
        this.api = "v1";
      }
    }
    await api.createEvent("v1", EVENT_NAMESPACE, {
      metadata: { name, namespace: EVENT_NAMESPACE },
      involvedObject: ref,
      reason: ev.reason,
      message: boundNote(ev.note),
      type: ev.type,
      source: { component: "probegate", host: this.nodeName },
      reportingComponent: REPORTING_CONTROLLER,
      reportingInstance: `${REPORTING_CONTROLLER}-${this.nodeName}`.slice(0, 128),
      firstTimestamp: new Date(ev.firstMs),
      lastTimestamp: new Date(ev.lastMs),
      count: ev.count,
    });
  }

  private repeatBody(api: Written["api"], count: number, lastMs: number): object {
    const at = new Date(lastMs).toISOString();
    return api === "v1" ? { count, lastTimestamp: at } : { series: { count, lastObservedTime: at.replace("Z", "000Z") } };
  }
}

function sameObject(a: EventObject, b: EventObject): boolean {
  return a.kind === b.kind && a.name === b.name;
}

/** The API server refuses an events.k8s.io note over 1024 bytes (not characters): cut on a character boundary, marked. */
export function boundNote(s: string): string {
  if (Buffer.byteLength(s) <= 1024) return s;
  let out = s.slice(0, 1021);
  while (Buffer.byteLength(out) > 1021) out = out.slice(0, -1);
  // A lone high surrogate at the cut would not survive JSON encoding as UTF-8.
  if (/[\uD800-\uDBFF]$/.test(out)) out = out.slice(0, -1);
  return `${out}…`;
}
