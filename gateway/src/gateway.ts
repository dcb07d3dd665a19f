import type { DescFile } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { getRequestListener } from "@hono/node-server";
import { setMaxListeners } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { ReadinessProvider } from "./engine/readiness.js";
import type { StorageHealthView, VolumeRegistry } from "./storage-health/view.js";
import { createNodeHealthRoute } from "./services/node-health-route.js";
import { createHttpApp, HTTP_PATHS } from "./http/app.js";
import type { Logger } from "./observability/logger.js";
import type { Metrics } from "./observability/metrics.js";
import type { IdentityConfig } from "./services/identity.js";
import { LocalProbeSource, type ProbeSource } from "./services/probe-source.js";
import { createFastPath } from "./services/fast-path.js";
import { createRpcStack } from "./services/router.js";
import type { Endpoint } from "./transport/endpoint.js";
import { startCsiListener, startHttpListener, startMetricsListener, type RunningListener } from "./transport/listeners.js";
import { Admission } from "./transport/admission.js";
import { BadClientLog } from "./transport/bad-client-log.js";
import type { Edge } from "./transport/edge.js";
import { DEFAULT_EDGE_LIMITS, EDGE_REJECTIONS, type EdgeLimits } from "./transport/edge-limits.js";
import { requestPath } from "./transport/request-path.js";
import { SELF_ANSWERED_MAX_BYTES } from "./services/limits.js";
import type { StreamRoute } from "./transport/stream-route.js";
import type { UnaryServer } from "./rawcall/server.js";

/** The mount API: the services gateway mode forwards to the driver, on the CSI endpoint only. */
export const MOUNT_API_SERVICES: readonly string[] = ["csi.v1.Controller", "csi.v1.Node", "csi.v1.GroupController"];

export interface GatewayConfig {
  csiEndpoint?: Endpoint;
  httpEndpoint?: Endpoint;
  /** A listener for /metrics only; when set, /metrics leaves the HTTP endpoint. */
  metricsEndpoint?: Endpoint;
  /** Health detail (?verbose, JSON) for remote clients too, not only loopback and the unix socket. */
  healthDetailRemote?: boolean;
  identity: IdentityConfig;
  readiness: ReadinessProvider;
  /** Defaults to the local checks' verdict. Gateway mode combines it with the upstream's. */
  probe?: ProbeSource;
  /** Extra lines /readyz?verbose and /livez?verbose show (gateway mode: the upstream's identity). */
  healthNotes?: () => string[];
  /**
   * Raw stream routes served on the CSI endpoint only (gateway mode's upstream
   * proxy): the mount API never reaches the network port. Those that are a
   * raw-call core's server (UnaryServer) are served over Connect and gRPC-Web too.
   */
  csiOnlyRoutes?: readonly StreamRoute[];
  logger: Logger;
  metrics: Metrics;
  /** Caps and timeouts of the network edge; defaults in DEFAULT_EDGE_LIMITS. */
  limits?: Partial<EdgeLimits>;
  /** Serve Probe and Health/Check over gRPC without Connect's per-call machinery (default on). */
  fastPath?: boolean;
  /** Services those routes forward, listed over reflection on the CSI endpoint only. */
  csiOnlyServices?: readonly string[];
  extraFiles?: readonly DescFile[];
  /**
   * The engine's storage and volume health. /readyz?verbose and /livez?verbose
   * show it; without an upstream (node mode) NodeGetStorageHealth,
   * NodeGetVolumeHealth and NodeGetCapabilities are answered from it on the
   * CSI endpoint only (gateway mode's upstream route answers them itself).
   */
  health?: { view: StorageHealthView; registry: VolumeRegistry };
  /** Set when csiOnlyRoutes already answer the health RPCs (gateway mode). */
  healthAnsweredUpstream?: boolean;
}

export interface Gateway {
  csi?: RunningListener;
  http?: RunningListener;
  metrics?: RunningListener;
  /** Graceful stop: in-flight calls get up to deadlineMs, the socket is removed. */
  close(deadlineMs: number): Promise<void>;
}

type AnyRequest = IncomingMessage | Http2ServerRequest;
type AnyResponse = ServerResponse | Http2ServerResponse;

export async function startGateway(cfg: GatewayConfig): Promise<Gateway> {
  const shutdown = new AbortController();
  // Connect listens on the shutdown signal once per call in flight; many concurrent
  // Probes are normal here, not a leak.
  setMaxListeners(0, shutdown.signal);
  const probe = cfg.probe ?? new LocalProbeSource(cfg.readiness);
  // Identity, Health and reflection requests hold a few short fields; a few KiB
  // bounds what one call can make the decoder allocate (unknown fields, JSON keys).
  // Fixed: --max-request-bytes is the forwarded calls' limit (the upstream proxy's), not this one.
  const readMaxBytes = SELF_ANSWERED_MAX_BYTES;
  const limits: EdgeLimits = { ...DEFAULT_EDGE_LIMITS, ...cfg.limits };
  // Every reason's series from 0, so increase() and rate() see a pod's first rejection.
  for (const reason of EDGE_REJECTIONS) cfg.metrics.edgeRejected.inc({ reason }, 0);
  const badClients = new BadClientLog(cfg.logger);
  const edge: Edge = {
    limits,
    admission: new Admission(limits.maxInflight, limits.maxWatches),
    rejected(reason, detail) {
      cfg.metrics.edgeRejected.inc({ reason });
      badClients.note(reason, detail);
    },
  };
  const nodeHealth =
    cfg.health && !cfg.healthAnsweredUpstream
      ? [createNodeHealthRoute({ view: cfg.health.view, registry: cfg.health.registry, mode: "node", logger: cfg.logger })]
      : [];
  const stack = createRpcStack({
    identity: cfg.identity,
    probe,
    readiness: cfg.readiness,
    metrics: cfg.metrics,
    logger: cfg.logger,
    shutdown: shutdown.signal,
    readMaxBytes,
    // Node mode serves three Node RPCs (the health pair and NodeGetCapabilities) on the CSI endpoint: describe the service there.
    csiOnlyServices: nodeHealth.length > 0 ? [...new Set([...(cfg.csiOnlyServices ?? []), "csi.v1.Node"])] : cfg.csiOnlyServices,
    forwardedServices: cfg.csiOnlyServices ?? (cfg.csiOnlyRoutes?.length ? MOUNT_API_SERVICES : undefined),
    extraFiles: cfg.extraFiles,
    // What the raw-call core answers from memory on the CSI endpoint is served there over Connect and gRPC-Web too.
    answered: [...nodeHealth, ...(cfg.csiOnlyRoutes ?? [])].flatMap((r) => (r as Partial<UnaryServer>).routes ?? []),
  });
  const appOptions = {
    readiness: cfg.readiness,
    metrics: cfg.metrics,
    notes: cfg.healthNotes,
    detailRemote: cfg.healthDetailRemote === true,
    storageHealth: cfg.health?.view,
  };
  const http = getRequestListener(createHttpApp({ ...appOptions, serve: cfg.metricsEndpoint ? "health" : "all" }).fetch);
  const handler = (req: AnyRequest, res: AnyResponse) => {
    const path = requestPath(req.url);
    if (HTTP_PATHS.has(path)) void http(req as IncomingMessage, res as ServerResponse);
    else stack.compat(req, res);
  };
  const shared: StreamRoute[] =
    cfg.fastPath === false
      ? []
      : [createFastPath({ stack, probe, readiness: cfg.readiness, metrics: cfg.metrics, logger: cfg.logger, readMaxBytes })];
  const csiRoutes = [...shared, ...nodeHealth, ...(cfg.csiOnlyRoutes ?? [])];
  const listeners: RunningListener[] = [];
  const gw: Gateway = {
    async close(deadlineMs) {
      shutdown.abort(new ConnectError("server is shutting down", Code.Unavailable));
      for (const r of nodeHealth) r.close();
      await Promise.all(listeners.map((l) => l.close(deadlineMs)));
    },
  };
  try {
    if (cfg.csiEndpoint) {
      gw.csi = await startCsiListener({ endpoint: cfg.csiEndpoint, routes: csiRoutes, handler, logger: cfg.logger, edge });
      listeners.push(gw.csi);
    }
    if (cfg.httpEndpoint) {
      gw.http = await startHttpListener({ endpoint: cfg.httpEndpoint, routes: shared, handler, logger: cfg.logger, edge });
      listeners.push(gw.http);
    }
    if (cfg.metricsEndpoint) {
      const scrape = getRequestListener(createHttpApp({ ...appOptions, serve: "metrics" }).fetch);
      const handler = (req: AnyRequest, res: AnyResponse) => void scrape(req as IncomingMessage, res as ServerResponse);
      gw.metrics = await startMetricsListener({ endpoint: cfg.metricsEndpoint, handler, logger: cfg.logger, edge });
      listeners.push(gw.metrics);
    }
  } catch (err) {
    await gw.close(0);
    throw err;
  }
  return gw;
}
