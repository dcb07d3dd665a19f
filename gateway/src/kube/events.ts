// Events on the Node, one per readiness transition. A transition that repeats
// (a flapping check) updates the first Event's count instead of creating a new
// object each time, as the API server's own event correlation does.
import type { KubeApi } from "./client/api.js";
import { KubeError } from "./client/api.js";

export interface PendingEvent {
  type: "Normal" | "Warning";
  reason: string;
  note: string;
  count: number;
  firstMs: number;
  lastMs: number;
}

interface Written {
  name: string;
  count: number;
  api: "events.k8s.io/v1" | "v1";
}

/** Repeats within this window join the first Event (the API server keeps Events for an hour by default). */
const AGGREGATE_MS = 60 * 60 * 1000;
const QUEUE_LIMIT = 16;
export const EVENT_NAMESPACE = "default";
export const REPORTING_CONTROLLER = "probegate.csi.io/node-reporter";

export class NodeEvents {
  private queue: PendingEvent[] = [];
  private written = new Map<string, Written & { lastMs: number }>();
  private api: "events.k8s.io/v1" | "v1" = "events.k8s.io/v1";

  constructor(private readonly nodeName: string) {}

  get pending(): boolean {
    return this.queue.length > 0;
  }

  record(type: PendingEvent["type"], reason: string, note: string, nowMs: number): void {
    const same = this.queue.find((e) => e.type === type && e.reason === reason && e.note === note);
    if (same) {
      same.count++;
      same.lastMs = nowMs;
      return;
    }
    this.queue.push({ type, reason, note, count: 1, firstMs: nowMs, lastMs: nowMs });
    // A storm faster than the write rate: the oldest distinct transitions are dropped, the newest kept.
    if (this.queue.length > QUEUE_LIMIT) this.queue.shift();
  }

  /** Writes the oldest pending Event; throws KubeError (the Event stays queued). */
  async writeOne(api: KubeApi, nowMs: number): Promise<void> {
    const ev = this.queue[0];
    if (!ev) return;
    const key = `${ev.type}\u0000${ev.reason}\u0000${ev.note}`;
    const prev = this.written.get(key);
    try {
      if (prev && nowMs - prev.lastMs < AGGREGATE_MS) {
        const count = prev.count + ev.count;
        await api.patchEvent(prev.api, EVENT_NAMESPACE, prev.name, this.repeatBody(prev.api, count, ev.lastMs));
        this.written.set(key, { ...prev, count, lastMs: ev.lastMs });
      } else {
        const name = `${this.nodeName}.${(BigInt(ev.firstMs) * 1_000_000n).toString(16)}`;
        await this.create(api, name, ev);
        this.written.set(key, { name, count: ev.count, api: this.api, lastMs: ev.lastMs });
      }
      this.queue.shift();
    } catch (err) {
      // The Event may have expired (404 on patch): start a new one next time.
      if (err instanceof KubeError && err.status === 404 && prev) this.written.delete(key);
      throw err;
    }
  }

  private async create(api: KubeApi, name: string, ev: PendingEvent): Promise<void> {
    if (this.api === "events.k8s.io/v1") {
      try {
        await api.createEvent("events.k8s.io/v1", EVENT_NAMESPACE, {
          metadata: { name, namespace: EVENT_NAMESPACE },
          eventTime: new Date(ev.firstMs),
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: `${REPORTING_CONTROLLER}-${this.nodeName}`.slice(0, 128),
          action: "CheckNode",
          reason: ev.reason,
          note: ev.note,
          type: ev.type,
          regarding: { apiVersion: "v1", kind: "Node", name: this.nodeName, uid: this.nodeName },
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
      involvedObject: { apiVersion: "v1", kind: "Node", name: this.nodeName, uid: this.nodeName },
      reason: ev.reason,
      message: ev.note,
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
