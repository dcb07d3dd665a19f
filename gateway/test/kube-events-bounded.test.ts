// The node reporter's memory of written Events stays bounded: readiness notes
// carry the failing checks' messages, so a node whose messages vary (a
// duration, a changing interface list) produces a new note per transition, and
// each was remembered for ever. And what is recorded while a write is on the
// wire is written too. Driven through NodeEvents against the fake API server
// over HTTP with probegate's own client, as the reporter drives it.
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createKubeApi } from "../src/kube/client/api.js";
import { loadClientConfig } from "../src/kube/client/kubeconfig.js";
import { MAX_REMEMBERED_EVENTS, NodeEvents } from "../src/kube/events.js";
import { FakeKubeApi } from "./helpers/fake-kube-api.js";
import { tempDir } from "./helpers/gateway-process.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const HOUR = 60 * 60 * 1000;

async function setup() {
  const api = await new FakeKubeApi({ tokens: { "token-a": "node-a" } }).start();
  cleanups.push(() => api.close());
  api.addNode("node-a");
  const file = path.join(tempDir("probegate-events-bounded-"), "kubeconfig");
  fs.writeFileSync(file, api.kubeconfig("token-a"));
  const client = createKubeApi({ nodeName: "node-a", config: loadClientConfig({ files: [file], env: {} }), impersonateNode: false, requestTimeoutMs: 5000, userAgent: "test" });
  cleanups.push(() => client.close());
  const events = new NodeEvents("node-a");
  const flush = async (nowMs: number) => {
    while (events.pending) await events.writeOne(client, nowMs);
  };
  return { api, events, flush, client };
}

const notReady = (i: number) => `probegate: node not ready: lnet-self-ping: PingFailed (no reply within ${1000 + i} ms)`;

describe("NodeEvents memory", () => {
  it("remembers at most MAX_REMEMBERED_EVENTS written Events; the most recent still aggregate", async () => {
    const { api, events, flush } = await setup();
    const t0 = Date.now();
    const n = MAX_REMEMBERED_EVENTS + 40;
    for (let i = 0; i < n; i++) {
      events.record("Warning", "NodeNotReady", notReady(i), t0 + i);
      await flush(t0 + i);
    }
    expect([...api.eventsV1.values()].filter((e) => e.reason === "NodeNotReady")).toHaveLength(n);
    expect(events.remembered).toBe(MAX_REMEMBERED_EVENTS);

    // The newest is still remembered: its repeat joins it (a patch, no new Event).
    events.record("Warning", "NodeNotReady", notReady(n - 1), t0 + n);
    await flush(t0 + n);
    expect(api.eventsV1.size).toBe(n);
    const newest = [...api.eventsV1.values()].find((e) => e.note === notReady(n - 1));
    expect(newest?.series?.count).toBe(2);
    // The oldest was forgotten: its repeat is a new Event, as after an hour.
    events.record("Warning", "NodeNotReady", notReady(0), t0 + n + 1);
    await flush(t0 + n + 1);
    expect(api.eventsV1.size).toBe(n + 1);
    expect(events.remembered).toBe(MAX_REMEMBERED_EVENTS);
  });

  it("forgets Events last written more than an hour ago", async () => {
    const { api, events, flush } = await setup();
    const t0 = Date.now();
    for (let i = 0; i < 50; i++) {
      events.record("Warning", "NodeNotReady", notReady(i), t0 + i);
      await flush(t0 + i);
    }
    expect(events.remembered).toBe(50);
    const later = t0 + HOUR + 100;
    events.record("Normal", "NodeReady", "probegate: node ready (7 checks passed)", later);
    await flush(later);
    expect(events.remembered).toBe(1);
    expect(api.eventsV1.size).toBe(51);
  });
});

describe("NodeEvents writes in flight", () => {
  it("repeats recorded while an Event's write is on the wire are written after it, not lost", async () => {
    const { api, events, flush, client } = await setup();
    const t0 = Date.now();
    events.record("Warning", "StorageUnreachable", "lustrefs: MDT0000 DISCONN", t0);
    const writing = events.writeOne(client, t0);
    // The create is on the wire: two more of the same join the queued entry.
    events.record("Warning", "StorageUnreachable", "lustrefs: MDT0000 DISCONN", t0 + 1);
    events.record("Warning", "StorageUnreachable", "lustrefs: MDT0000 DISCONN", t0 + 2);
    await writing;
    expect(events.pending).toBe(true);
    await flush(t0 + 3);
    const written = [...api.eventsV1.values()];
    expect(written).toHaveLength(1);
    expect(written[0]!.series?.count).toBe(3);
  });

  it("an Event a storm dropped from the queue while it was written costs no other Event its write", async () => {
    const { api, events, flush, client } = await setup();
    const t0 = Date.now();
    events.record("Warning", "NodeNotReady", notReady(0), t0);
    const writing = events.writeOne(client, t0);
    for (let i = 1; i <= 64; i++) events.record("Warning", "NodeNotReady", notReady(i), t0 + i);
    await writing;
    await flush(t0 + 100);
    const notes = new Set([...api.eventsV1.values()].map((e) => e.note));
    for (let i = 0; i <= 64; i++) expect(notes.has(notReady(i))).toBe(true);
  });
});

