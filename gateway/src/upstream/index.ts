import type { ReadinessProvider } from "../engine/readiness.js";
import type { StorageHealthView, VolumeRegistry } from "../storage-health/view.js";
import { createNodeHealthRoute } from "../services/node-health-route.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { ProbeSource } from "../services/probe-source.js";
import { parseEndpoint } from "../transport/endpoint.js";
import type { StreamRoute } from "../transport/stream-route.js";
import type { UnaryServer } from "../rawcall/server.js";
import type { CallObserver } from "../rawcall/route.js";
import { UpstreamConnection } from "./connection.js";
import { UpstreamDriverHealth } from "./driver-health.js";
import { IdentityWatch } from "./identity.js";
import type { GateName } from "./methods.js";
import { UpstreamMetrics } from "./metrics.js";
import { UpstreamProbeSource } from "./probe.js";
import { createProxyRoute } from "./proxy.js";
import { UpstreamStatus, type UpstreamStatusView } from "./status.js";

export { GATE_NAMES, type GateName } from "./methods.js";
export { UpstreamProbeSource } from "./probe.js";
export { UpstreamStatus, type UpstreamStatusView } from "./status.js";
export { redactedJson, REDACTED } from "./redact.js";

export const DEFAULT_TIMEOUT_CAP_MS = 120_000;

export interface UpstreamGatewayOptions {
  /** `unix:///csi/driver.sock` or `tcp://host:port` (parsed like --csi-endpoint). */
  upstream: string;
  /** --driver-name: what GetPluginInfo says until the driver answers it. */
  driverName: string;
  /** Calls refused while the node is not ready; gateway mode defaults to both. */
  gate: ReadonlySet<GateName>;
  readiness: ReadinessProvider;
  /** The local checks' Probe verdict, combined with the driver's. */
  localProbe: ProbeSource;
  /**
   * The engine's storage and volume health (evaluated in the background):
   * NodeGetStorageHealth/NodeGetVolumeHealth are answered from it, the legacy
   * volume_condition read from it, and forwarded mount calls feed its registry.
   */
  health?: { view: StorageHealthView; registry: VolumeRegistry };
  logger: Logger;
  metrics: Metrics;
  /** Cap on the deadline passed to the driver (and the deadline when the caller set none). */
  timeoutCapMs?: number;
  /** Bound on one upstream Probe call (default 3 s). */
  probeTimeoutMs?: number;
  /** How long an upstream Probe answer is reused (default 1 s). */
  probeCacheMs?: number;
  /** Largest request message forwarded (default 4 MiB). */
  maxRequestBytes?: number;
  /** Told of every forwarded call: its path, request message (decoded up to 64 KiB) and final status. */
  observe?: CallObserver;
}

export interface UpstreamGateway {
  /** Give to the CSI endpoint's listener only: it carries the mount API, which never goes on the network port. */
  route: UnaryServer;
  /** Give to the Identity service (and any Probe fast path). */
  probe: ProbeSource;
  /** Display form of the upstream endpoint, for logs. */
  upstream: string;
  /** The driver's start-up state and name (for reporters that need the driver name). */
  status: UpstreamStatusView;
  /** Extra lines for /readyz?verbose (e.g. a driver name mismatch). */
  healthNotes(): string[];
  close(): Promise<void>;
}

export function createUpstreamGateway(opts: UpstreamGatewayOptions): UpstreamGateway {
  const endpoint = parseEndpoint(opts.upstream);
  const metrics = UpstreamMetrics.for(opts.metrics);
  const conn = new UpstreamConnection(endpoint, opts.logger, (up) => {
    metrics.connected.set(up ? 1 : 0);
    opts.logger.info({ upstream: endpoint.display }, up ? "connected to upstream CSI driver" : "lost connection to upstream CSI driver");
  });
  const status = new UpstreamStatus(opts.driverName);
  const identity = new IdentityWatch({ conn, status, metrics, logger: opts.logger });
  identity.start();
  const driverHealth = opts.health ? new UpstreamDriverHealth(conn, status, metrics, opts.logger) : undefined;
  driverHealth?.start();
  const proxy = createProxyRoute({
    conn,
    status,
    gates: opts.gate,
    readiness: opts.readiness,
    health: opts.health,
    driverHealth,
    logger: opts.logger,
    metrics,
    timeoutCapMs: opts.timeoutCapMs ?? DEFAULT_TIMEOUT_CAP_MS,
    maxRequestBytes: opts.maxRequestBytes ?? 4 * 1024 * 1024,
    observe: opts.observe,
  });
  // The two health RPCs are answered first (from memory, merged with the
  // driver's when it has its own); everything else goes to the proxy.
  const healthRoute =
    opts.health &&
    createNodeHealthRoute({
      view: opts.health.view,
      registry: opts.health.registry,
      mode: "gateway",
      driver: driverHealth,
      driverTimeoutCapMs: Math.min(opts.timeoutCapMs ?? DEFAULT_TIMEOUT_CAP_MS, 10_000),
      logger: opts.logger,
    });
  const either: StreamRoute = healthRoute ? (stream, headers, ctx) => healthRoute(stream, headers, ctx) || proxy(stream, headers, ctx) : proxy;
  // The health routes travel with it, so the gateway serves them over Connect and gRPC-Web too.
  const route = Object.assign(either, { routes: healthRoute?.routes ?? [] });
  const probe = new UpstreamProbeSource({
    conn,
    status,
    local: opts.localProbe,
    metrics,
    logger: opts.logger,
    timeoutMs: opts.probeTimeoutMs,
    cacheMs: opts.probeCacheMs,
  });
  const healthNotes = () =>
    status.nameMismatch
      ? [`[!]upstream driver name ${JSON.stringify(status.upstreamDriverName)} differs from --driver-name ${JSON.stringify(status.configuredDriverName)}; GetPluginInfo forwards the upstream's`]
      : status.answeredOnce
        ? []
        : [`[!]upstream driver at ${endpoint.display} has not answered yet; GetPluginInfo answered from --driver-name`];
  return {
    route,
    probe,
    upstream: endpoint.display,
    status,
    healthNotes,
    close: () => {
      identity.stop();
      driverHealth?.stop();
      healthRoute?.close();
      return conn.close();
    },
  };
}
