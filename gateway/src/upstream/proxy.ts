import { Code } from "@connectrpc/connect";
import http2 from "node:http2";
import type { ReadinessProvider } from "../engine/readiness.js";
import type { Logger } from "../observability/logger.js";
import type { StreamRoute } from "../transport/stream-route.js";
import { unavailableMessage, type UpstreamConnection } from "./connection.js";
import { gatedPaths, notReadyReason } from "./gating.js";
import { GRPC_OK, statusName } from "../transport/grpc-wire.js";
import { budgetMs, callerTimeoutMs, isGrpcCall } from "../rawcall/request.js";
import { UnaryRelay, type RelayConfig } from "../rawcall/relay.js";
import type { CallObserver } from "../rawcall/route.js";
import type { StorageHealthView, VolumeRegistry } from "../storage-health/view.js";
import type { UpstreamDriverHealth } from "./driver-health.js";
import { mountedVolumeRef, releasedVolume, volumeRefFromRequest, withHealthCapabilities, withVolumeCondition } from "./intercept.js";
import {
  GET_PLUGIN_INFO_PATH,
  isForwardedPath,
  methodInfo,
  NODE_GET_CAPABILITIES_PATH,
  NODE_GET_VOLUME_STATS_PATH,
  NODE_PUBLISH_PATH,
  NODE_STAGE_PATH,
  NODE_UNPUBLISH_PATH,
  NODE_UNSTAGE_PATH,
  type GateName,
  type MethodInfo,
} from "./methods.js";
import type { UpstreamMetrics } from "./metrics.js";
import { redactedJson } from "./redact.js";
import type { UpstreamStatus } from "./status.js";
import type { LegacyVolumeCondition } from "../storage-health/volume-condition.js";

export interface ProxyDeps {
  conn: UpstreamConnection;
  status: UpstreamStatus;
  gates: ReadonlySet<GateName>;
  readiness: ReadinessProvider;
  /**
   * The engine's storage and volume health: the legacy volume_condition is
   * read from it (never run per call), NodeGetCapabilities advertises what it
   * checks, and the mount calls forwarded tell its registry which volumes exist.
   */
  health?: { view: StorageHealthView; registry: VolumeRegistry };
  /** Learns the driver's own health capabilities from the NodeGetCapabilities replies relayed. */
  driverHealth?: UpstreamDriverHealth;
  logger: Logger;
  metrics: UpstreamMetrics;
  /** Upper bound for the deadline passed upstream, and the deadline when the caller set none. */
  timeoutCapMs: number;
  /** Largest request message forwarded (--max-request-bytes); larger calls get RESOURCE_EXHAUSTED. */
  maxRequestBytes: number;
  /** Told of every forwarded call's request message and final status (the request decoded up to 64 KiB). */
  observe?: CallObserver;
}

/**
 * Request copies (for the debug log and the volume check) are decoded only up
 * to this size: CSI requests name a volume and a few paths, and decoding is
 * what turns a hostile message into many objects. Larger requests are still
 * forwarded, just not looked into.
 */
const MAX_DECODED_REQUEST_BYTES = 64 * 1024;

export function createProxyRoute(deps: ProxyDeps): StreamRoute {
  const gated = gatedPaths(deps.gates);
  const relay: RelayConfig = {
    opener: deps.conn,
    logger: deps.logger,
    maxRequestBytes: deps.maxRequestBytes,
    limitName: " (--max-request-bytes)",
    keepRequestBytes: MAX_DECODED_REQUEST_BYTES,
    unavailable: (err) => unavailableMessage(deps.conn.display, err),
  };
  return (stream, headers) => {
    const path = headers[":path"];
    // Only real gRPC (not gRPC-Web, not Connect) can be relayed frame for frame to a gRPC driver.
    if (typeof path !== "string" || !isForwardedPath(path) || !isGrpcCall(headers)) return false;
    // Until the driver has told us its name, probegate answers GetPluginInfo itself (from --driver-name).
    if (path === GET_PLUGIN_INFO_PATH && deps.status.upstreamDriverName === undefined) return false;
    new ForwardedCall(deps, relay, stream, headers, path, gated.has(path)).start();
    return true;
  };
}

type Rewrite = "capabilities" | "volume-stats" | undefined;
/** Forwarded calls whose request tells the volume registry about a volume. */
type Track = "stage" | "publish" | "unstage" | "unpublish" | undefined;

const TRACKED: Record<string, Track> = {
  [NODE_STAGE_PATH]: "stage",
  [NODE_PUBLISH_PATH]: "publish",
  [NODE_UNSTAGE_PATH]: "unstage",
  [NODE_UNPUBLISH_PATH]: "unpublish",
};

/**
 * One forwarded call's policy: gating, holding calls while the driver starts,
 * which replies are rewritten and how, the volumes its requests tell of, the
 * metrics, the debug log and the observer. The relaying itself is the core's.
 */
class ForwardedCall extends UnaryRelay {
  private readonly info: MethodInfo;
  private readonly t0 = process.hrtime.bigint();
  private readonly rewrite: Rewrite;
  private readonly track: Track;

  constructor(
    private readonly deps: ProxyDeps,
    relay: RelayConfig,
    stream: http2.ServerHttp2Stream,
    headers: http2.IncomingHttpHeaders,
    path: string,
    private readonly gated: boolean,
  ) {
    const info = methodInfo(path);
    super(relay, stream, headers, path, info.label);
    this.info = info;
    const health = deps.health;
    this.track = health ? TRACKED[path] : undefined;
    // Capabilities are always looked at: they say which health RPCs the driver answers itself.
    this.rewrite = !health
      ? undefined
      : path === NODE_GET_CAPABILITIES_PATH
        ? "capabilities"
        : path === NODE_GET_VOLUME_STATS_PATH && health.view.hasVolumeChecks()
          ? "volume-stats"
          : undefined;
  }

  start(): void {
    const { deps, stream } = this;
    deps.metrics.requests.inc({ method: this.info.label });
    this.watchCaller();

    if (this.gated) {
      const reason = notReadyReason(deps.readiness.snapshot());
      if (reason) {
        deps.metrics.gated.inc({ method: this.info.label });
        this.fail(Code.Unavailable, reason);
        return;
      }
    }

    const timeoutMs = budgetMs(callerTimeoutMs(this.headers), deps.timeoutCapMs, false);
    if (timeoutMs <= 0) {
      this.fail(Code.DeadlineExceeded, "deadline exceeded before the call was forwarded");
      return;
    }
    if (!deps.status.answeredOnce) {
      // The driver is still starting: hold the call (within its deadline) rather
      // than fail it, so kubelet's NodeGetInfo at registration does not make the
      // registrar exit. The request body waits in the stream's buffer meanwhile.
      stream.pause();
      const t0 = performance.now();
      void deps.status.waitForAnswer(timeoutMs).then((answered) => {
        if (this.finished) return;
        if (!answered) {
          this.fail(Code.Unavailable, `upstream CSI driver at ${deps.conn.display} has not started answering yet`);
          return;
        }
        // forward() pipes the stream, which resumes it.
        this.send(Math.max(1, timeoutMs - Math.round(performance.now() - t0)));
      });
      return;
    }
    this.send(timeoutMs);
  }

  private send(timeoutMs: number): void {
    // The request is kept only when a debug log, a rewrite, the registry or an observer reads it.
    const keep = this.rewrite === "volume-stats" || this.track !== undefined || this.deps.observe !== undefined || this.deps.logger.isLevelEnabled("debug");
    this.forward(timeoutMs, this.rewrite !== undefined, keep);
  }

  protected override requestRead(): void {
    // CSI lets the CO ask for the health of a volume it only attempted to mount: remember on the attempt.
    if (this.track === "stage" || this.track === "publish") this.rememberVolume(this.track);
  }

  protected override rewriteReply(message: Buffer): Uint8Array | undefined {
    if (this.rewrite === "capabilities") return this.rewriteCapabilities(message);
    const verdict = this.rememberedCondition();
    if (!verdict) {
      this.deps.metrics.volumeConditions.inc({ result: "skipped" });
      return undefined;
    }
    const r = withVolumeCondition(message, verdict);
    this.deps.metrics.volumeConditions.inc({ result: r.outcome });
    return r.bytes;
  }

  private rewriteCapabilities(message: Uint8Array): Uint8Array {
    const view = this.deps.health!.view;
    const volume = view.hasVolumeChecks();
    const r = withHealthCapabilities(message, { volumeCondition: volume, volumeHealth: volume, storageHealth: view.hasStorageChecks() });
    this.deps.driverHealth?.observe(r.driver);
    return r.bytes;
  }

  private rememberVolume(kind: "stage" | "publish"): void {
    const message = this.requestMessage();
    if (!message || !this.deps.health) return;
    try {
      const ref = mountedVolumeRef(kind, message);
      if (ref) this.deps.health.registry.remember(ref);
    } catch (err) {
      // The driver gets the call regardless and will say what it makes of it.
      this.deps.logger.debug({ err, method: this.info.label }, "mount request not understood; volume not remembered");
    }
  }

  private forgetVolume(kind: "unstage" | "unpublish", message: Buffer | undefined): void {
    if (!message || !this.deps.health) return;
    try {
      const released = releasedVolume(kind, message);
      if (released) this.deps.health.registry.forget(released.volumeId, released.path);
    } catch (err) {
      this.deps.logger.debug({ err, method: this.info.label }, "unmount request not understood; volume kept");
    }
  }

  /**
   * The legacy volume_condition from the last background evaluation. A volume
   * not evaluated yet leaves the reply unchanged and is evaluated from now on
   * (a kubelet asking for stats after probegate restarted, say).
   */
  private rememberedCondition(): LegacyVolumeCondition | undefined {
    const health = this.deps.health!;
    const message = this.requestMessage();
    if (!message) return undefined;
    let ref;
    try {
      ref = volumeRefFromRequest(message);
    } catch {
      return undefined;
    }
    if (!ref) return undefined;
    const condition = health.view.volumeCondition(ref.id);
    if (condition) return condition;
    try {
      health.registry.request({
        volumeId: ref.id,
        ...(ref.path ? { targetPath: ref.path } : {}),
        ...(ref.stagingPath ? { stagingPath: ref.stagingPath } : {}),
        origin: "request",
      });
    } catch (err) {
      // Hostile paths: the stats call is the driver's; only the condition is left out.
      this.deps.logger.debug({ err: (err as Error).message, method: this.info.label }, "volume not evaluated");
    }
    return undefined;
  }

  protected ended(code: number): void {
    const { deps, info } = this;
    const seconds = Number(process.hrtime.bigint() - this.t0) / 1e9;
    const codeName = Number.isNaN(code) ? "UNKNOWN" : statusName(code);
    deps.metrics.duration.observe({ method: info.label }, seconds);
    const forgets = code === GRPC_OK && (this.track === "unstage" || this.track === "unpublish") ? this.track : undefined;
    const observe = deps.observe;
    const debug = deps.logger.isLevelEnabled("debug");
    // Unframed (and inflated) once for all who read it.
    const message = forgets || observe || debug ? this.requestMessage() : undefined;
    if (forgets) this.forgetVolume(forgets, message);
    if (code !== GRPC_OK) deps.metrics.errors.inc({ method: info.label, code: codeName });
    if (!observe && !debug) return;
    observe?.({ path: this.path, request: message, status: code, durationMs: seconds * 1e3 });
    if (debug) {
      deps.logger.debug(
        {
          method: info.label,
          code: codeName,
          durationMs: Math.round(seconds * 1e6) / 1e3,
          // Decoded with every csi_secret field replaced; never the raw bytes.
          request: message && info.input ? redactedJson(info.input, message) : undefined,
        },
        "upstream call",
      );
    }
  }
}
