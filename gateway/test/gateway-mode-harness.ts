// Shared set-up for gateway-mode tests: probegate's real gateway (startGateway,
// the lead's transport) with the upstream route, a fake driver, a grpc-js client.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import type * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary, create } from "@bufbuild/protobuf";
import { GetPluginInfoResponseSchema, ProbeRequestSchema, ProbeResponseSchema } from "../gen/csi/v1/csi_pb.js";
import type { Condition, ReadinessSnapshot, ReadinessProvider } from "../src/engine/readiness.js";
import type { StorageHealthView, VolumeRegistry } from "../src/storage-health/view.js";
import { startGateway, type Gateway } from "../src/gateway.js";
import { Metrics } from "../src/observability/metrics.js";
import { LocalProbeSource } from "../src/services/probe-source.js";
import { parseEndpoint } from "../src/transport/endpoint.js";
import { createUpstreamGateway, type UpstreamGateway } from "../src/upstream/index.js";
import type { CallObserver } from "../src/rawcall/route.js";
import type { GateName } from "../src/upstream/methods.js";
import { FakeCsiDriver, rawCall, unixClient, type ServiceName } from "./helpers/fake-csi-driver.js";

/** A readiness provider the test flips by hand, standing in for the check engine. */
export class ScriptedReadiness implements ReadinessProvider {
  private snap: ReadinessSnapshot = { phase: "ready", ready: true, live: true, conditions: [], refusals: [], generation: 1 };
  private listeners = new Set<(s: ReadinessSnapshot) => void>();
  snapshot(): ReadinessSnapshot {
    return this.snap;
  }
  subscribe(l: (s: ReadinessSnapshot) => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  set(next: Partial<ReadinessSnapshot>): void {
    this.snap = { ...this.snap, ...next, generation: this.snap.generation + 1 };
    for (const l of this.listeners) l(this.snap);
  }
  failReadiness(name: string, reason: string, message: string): void {
    const now = new Date().toISOString();
    const c: Condition = {
      name,
      probe: "readiness",
      severity: "required",
      status: "fail",
      reason,
      message,
      lastTransitionTime: now,
      lastRunTime: now,
      durationMs: 1,
      plugin: { name, version: "1.0.0", sha256: "0".repeat(64), file: `${name}.wasm` },
      fault: false,
    };
    this.set({ phase: "not-ready", ready: false, conditions: [c] });
  }
  pass(): void {
    this.set({ phase: "ready", ready: true, live: true, conditions: [] });
  }
}

export class LogCapture {
  readonly lines: string[] = [];
  readonly logger: pino.Logger;
  constructor(level: pino.LevelWithSilent = "trace") {
    const sink = new Writable({
      write: (chunk, _enc, cb) => {
        this.lines.push(String(chunk));
        cb();
      },
    });
    // Deliberately without pino's redact paths: the tests must prove gateway
    // mode itself never hands a secret to the logger.
    this.logger = pino({ level }, sink);
  }
  get text(): string {
    return this.lines.join("");
  }
}

/** The fake driver answers GetPluginInfo with the name probegate is configured with (tests may re-script it). */
function withName(d: FakeCsiDriver): FakeCsiDriver {
  return d.script("/csi.v1.Identity/GetPluginInfo", {
    message: toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: "probegate.test" })),
  });
}

export interface Harness {
  dir: string;
  csiSocket: string;
  driverSocket: string;
  driver: FakeCsiDriver;
  readiness: ScriptedReadiness;
  metrics: Metrics;
  logs: LogCapture;
  upstream: UpstreamGateway;
  gateway: Gateway;
  client: grpc.Client;
  /** Starts (or restarts) the fake driver on the private socket. */
  startDriver(services?: readonly ServiceName[], configure?: (d: FakeCsiDriver) => void): Promise<FakeCsiDriver>;
  close(): Promise<void>;
}

export async function startHarness(opts: {
  driver?: boolean;
  services?: readonly ServiceName[];
  gate?: GateName[];
  /** The engine's storage/volume health (the real one, or a test implementation of its interfaces). */
  health?: { view: StorageHealthView; registry: VolumeRegistry };
  timeoutCapMs?: number;
  probeCacheMs?: number;
  probeTimeoutMs?: number;
  logLevel?: pino.LevelWithSilent;
  /** Told of every forwarded call (the raw-call core's observer). */
  observe?: CallObserver;
  /** The registry the gateway's metrics go to (default: a new one). */
  metrics?: Metrics;
} = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "pg-gw-"));
  const csiSocket = join(dir, "csi.sock");
  const driverSocket = join(dir, "driver.sock");
  const readiness = new ScriptedReadiness();
  const metrics = opts.metrics ?? new Metrics({ processMetrics: false });
  const logs = new LogCapture(opts.logLevel ?? "trace");
  const upstream = createUpstreamGateway({
    upstream: `unix://${driverSocket}`,
    driverName: "probegate.test",
    gate: new Set(opts.gate ?? ["node-stage", "node-publish"]),
    readiness,
    localProbe: new LocalProbeSource(readiness),
    health: opts.health,
    logger: logs.logger,
    metrics,
    timeoutCapMs: opts.timeoutCapMs,
    probeCacheMs: opts.probeCacheMs ?? 0,
    probeTimeoutMs: opts.probeTimeoutMs,
    observe: opts.observe,
  });
  const gateway = await startGateway({
    csiEndpoint: parseEndpoint(`unix://${csiSocket}`),
    identity: { driverName: "probegate.test", vendorVersion: "0.0.0", manifest: {}, capabilities: [] },
    readiness,
    probe: upstream.probe,
    csiOnlyRoutes: [upstream.route],
    health: opts.health,
    healthAnsweredUpstream: true,
    logger: logs.logger,
    metrics,
  });
  const h: Harness = {
    dir,
    csiSocket,
    driverSocket,
    driver: withName(new FakeCsiDriver(driverSocket, opts.services)),
    readiness,
    metrics,
    logs,
    upstream,
    gateway,
    client: unixClient(csiSocket),
    async startDriver(services, configure) {
      h.driver = withName(new FakeCsiDriver(driverSocket, services ?? opts.services));
      configure?.(h.driver);
      return h.driver.start();
    },
    async close() {
      h.client.close();
      await gateway.close(100);
      await upstream.close();
      await h.driver.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (opts.driver !== false) {
    await h.driver.start();
    // Forwarding tests start from a driver probegate already knows; its own
    // GetPluginInfo poll is not one of the calls they count.
    const named = (opts.services ?? ["Identity"]).includes("Identity");
    await eventually(
      async () => h.upstream.status,
      (st) => st.answeredOnce && (!named || st.upstreamDriverName !== undefined),
      "upstream identity",
    );
    h.driver.calls.length = 0;
  }
  return h;
}

export type ProbeOutcome = { ready: boolean } | { code: number; details: string };

export async function probe(client: grpc.Client): Promise<ProbeOutcome> {
  const r = await rawCall(client, "/csi.v1.Identity/Probe", toBinary(ProbeRequestSchema, create(ProbeRequestSchema)));
  // Probe errors come from the Connect stack, which percent-encodes grpc-message
  // with encodeURIComponent while grpc-js decodes with decodeURI, leaving
  // "%2F" and "%3A" in place (reported to the lead); undo the rest here.
  if (r.error) return { code: r.error.code, details: safeDecode(r.error.details) };
  return { ready: fromBinary(ProbeResponseSchema, r.response!).ready ?? true };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** Polls until the predicate holds; the tests assert states, never durations. */
export async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string, limitMs = 15_000): Promise<T> {
  const start = Date.now();
  let last: T = await fn();
  while (!ok(last)) {
    if (Date.now() - start > limitMs) throw new Error(`${what}: still ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 25));
    last = await fn();
  }
  return last;
}
