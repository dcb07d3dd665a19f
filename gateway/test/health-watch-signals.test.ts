// Health.Watch over a real gRPC client: each Watch must leave nothing tied to
// the gateway's long-lived shutdown signal once it ends (on Node 20,
// AbortSignal.any() with that signal kept one entry per Watch, for good), and
// shutdown must still end an open Watch with UNAVAILABLE.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { connectNodeAdapter, createGrpcTransport } from "@connectrpc/connect-node";
import { getEventListeners } from "node:events";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../gen/grpc/health/v1/health_pb.js";
import type { ReadinessSnapshot } from "../src/engine/readiness.js";
import { healthService } from "../src/services/grpc-health.js";
import { ScriptedReadiness } from "./gateway-mode-harness.js";

/** Node's own record of the AbortSignal.any() signals that follow `s` (0 when it keeps none). */
function dependants(s: AbortSignal): number {
  const sym = Object.getOwnPropertySymbols(s).find((x) => x.description === "kDependantSignals");
  return sym ? ((s as unknown as Record<symbol, Set<unknown>>)[sym]?.size ?? 0) : 0;
}

/** Counts live subscriptions: a Watch holds one until it has ended on the server. */
class CountingReadiness extends ScriptedReadiness {
  live = 0;
  override subscribe(l: (s: ReadinessSnapshot) => void): () => void {
    this.live++;
    const off = super.subscribe(l);
    return () => {
      this.live--;
      off();
    };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !cond(); i++) await sleep(10);
  if (!cond()) throw new Error(`timed out waiting for ${what}`);
}

describe("Health.Watch and the shutdown signal", () => {
  let server: http2.Http2Server | undefined;
  const sessions = new Set<http2.ServerHttp2Session>();
  afterEach(async () => {
    // The client keeps its connection open: cut it so close() returns.
    for (const s of sessions) s.destroy();
    sessions.clear();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  async function serve(readiness: ScriptedReadiness, shutdown: AbortSignal) {
    server = http2.createServer(connectNodeAdapter({ routes: (router) => router.service(Health, healthService(readiness, shutdown)) }));
    server.on("session", (s) => sessions.add(s));
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    return createClient(Health, createGrpcTransport({ baseUrl: `http://127.0.0.1:${port}` }));
  }

  it("keeps nothing on the shutdown signal after Watch calls end", async () => {
    // Whether this Node records AbortSignal.any() on its source where the count
    // looks (Node 20 does; Node 24 keeps it elsewhere): only then is a count of
    // 0 below a finding. The listeners are counted on every Node.
    const control = new AbortController();
    AbortSignal.any([control.signal]);
    const countable = dependants(control.signal) === 1;
    if (process.versions.node.startsWith("20.")) expect(countable).toBe(true);

    const shutdown = new AbortController();
    const readiness = new CountingReadiness();
    const client = await serve(readiness, shutdown.signal);
    for (let i = 0; i < 40; i++) {
      const ac = new AbortController();
      const seen: Status[] = [];
      const err = await (async () => {
        try {
          for await (const m of client.watch({ service: "readiness" }, { signal: ac.signal })) {
            seen.push(m.status);
            ac.abort();
          }
        } catch (e) {
          return ConnectError.from(e);
        }
      })();
      expect(seen).toEqual([Status.SERVING]);
      expect(err?.code).toBe(Code.Canceled);
    }
    await until(() => readiness.live === 0, "every Watch to end on the server");
    if (countable) expect(dependants(shutdown.signal)).toBe(0);
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  });

  it("still ends an open Watch with UNAVAILABLE at shutdown", async () => {
    const shutdown = new AbortController();
    const readiness = new CountingReadiness();
    const client = await serve(readiness, shutdown.signal);
    const seen: Status[] = [];
    const ended = (async () => {
      try {
        for await (const m of client.watch({ service: "" })) seen.push(m.status);
      } catch (e) {
        return ConnectError.from(e);
      }
    })();
    await until(() => seen.length === 1, "the first status");
    readiness.set({ live: false });
    await until(() => seen.length === 2, "the change");
    shutdown.abort();
    const err = await ended;
    expect(seen).toEqual([Status.SERVING, Status.NOT_SERVING]);
    expect(err?.code).toBe(Code.Unavailable);
    expect(readiness.live).toBe(0);
  });
});
