import { Code } from "@connectrpc/connect";
import http2 from "node:http2";
import type { ReadinessProvider } from "../engine/readiness.js";
import type { Logger } from "../observability/logger.js";
import type { StreamRoute } from "../transport/stream-route.js";
import { unavailableMessage, type UpstreamConnection } from "./connection.js";
import { gatedPaths, notReadyReason } from "./gating.js";
import { formatGrpcTimeout } from "../transport/grpc-timeout.js";
import { encodeFrame, GRPC_OK, respondTrailersOnly, singleMessage, statusForRstCode, statusName, statusOf, statusTrailers } from "../transport/grpc-wire.js";
import { budgetMs, callerTimeoutMs, isGrpcCall, RequestBody, requestEncoding, tooLargeMessage } from "../rawcall/request.js";
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

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM } = http2.constants;

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

/** Hop-by-hop and transport headers that must not cross the proxy. */
const DROP_REQUEST = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "http2-settings", "grpc-timeout", "content-length"]);
const DROP_RESPONSE = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]);

/** Replies we buffer to rewrite stay small; CSI messages are tiny. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
/**
 * Request copies (for the debug log and the volume check) are decoded only up
 * to this size: CSI requests name a volume and a few paths, and decoding is
 * what turns a hostile message into many objects. Larger requests are still
 * forwarded, just not looked into.
 */
const MAX_DECODED_REQUEST_BYTES = 64 * 1024;

function copyHeaders(src: http2.IncomingHttpHeaders, drop: Set<string>, keepStatus: boolean): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const key of Object.keys(src)) {
    if (key.startsWith(":") ? !(keepStatus && key === ":status") : drop.has(key)) continue;
    out[key] = src[key];
  }
  return out;
}

export function createProxyRoute(deps: ProxyDeps): StreamRoute {
  const gated = gatedPaths(deps.gates);
  return (stream, headers) => {
    const path = headers[":path"];
    // Only real gRPC (not gRPC-Web, not Connect) can be relayed frame for frame to a gRPC driver.
    if (typeof path !== "string" || !isForwardedPath(path) || !isGrpcCall(headers)) return false;
    // Until the driver has told us its name, probegate answers GetPluginInfo itself (from --driver-name).
    if (path === GET_PLUGIN_INFO_PATH && deps.status.upstreamDriverName === undefined) return false;
    new ForwardedCall(deps, stream, headers, path, gated.has(path)).start();
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

/** One forwarded call: lives from the caller's stream arriving to its final status. */
class ForwardedCall {
  private readonly info: MethodInfo;
  private readonly t0 = process.hrtime.bigint();
  private up: http2.ClientHttp2Stream | undefined;
  private timer: NodeJS.Timeout | undefined;
  private finished = false;
  /** A status is on its way in trailers; later failures must not replace it. */
  private ending = false;
  /** The status to send when the caller's stream asks for trailers. */
  private trailers: http2.OutgoingHttpHeaders | undefined;
  private readonly rewrite: Rewrite;
  private readonly track: Track;
  /** The request's DATA frames, counted against --max-request-bytes; kept only when a debug log, a rewrite or an observer needs them. */
  private body: RequestBody | undefined;

  constructor(
    private readonly deps: ProxyDeps,
    private readonly stream: http2.ServerHttp2Stream,
    private readonly headers: http2.IncomingHttpHeaders,
    private readonly path: string,
    private readonly gated: boolean,
  ) {
    this.info = methodInfo(path);
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
    stream.on("error", (err) => deps.logger.debug({ err, method: this.info.label }, "caller stream error"));
    // The caller went away (cancelled, deadline, connection lost): stop the upstream work too.
    stream.once("close", () => {
      if (!this.finished) {
        this.up?.close(NGHTTP2_CANCEL);
        this.finish(Code.Canceled);
      }
    });

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
        this.forward(Math.max(1, timeoutMs - Math.round(performance.now() - t0)));
      });
      return;
    }
    this.forward(timeoutMs);
  }

  private forward(timeoutMs: number): void {
    const { deps, stream } = this;

    const out: http2.OutgoingHttpHeaders = {
      ":method": "POST",
      ":scheme": "http",
      ":path": this.path,
      ":authority": typeof this.headers[":authority"] === "string" ? this.headers[":authority"] : "localhost",
      ...copyHeaders(this.headers, DROP_REQUEST, false),
      "grpc-timeout": formatGrpcTimeout(timeoutMs),
    };
    // A reply we rewrite must arrive uncompressed.
    if (this.rewrite) out["grpc-accept-encoding"] = "identity";

    let up: http2.ClientHttp2Stream;
    try {
      up = deps.conn.request(out);
    } catch (err) {
      this.fail(Code.Unavailable, unavailableMessage(deps.conn.display, err));
      return;
    }
    this.up = up;
    this.timer = setTimeout(() => {
      up.close(NGHTTP2_CANCEL);
      this.fail(Code.DeadlineExceeded, `upstream did not answer within ${timeoutMs} ms`);
    }, timeoutMs);

    // CSI calls are unary: one message, so the body is one frame header and the message.
    const body = (this.body = new RequestBody(deps.maxRequestBytes, MAX_DECODED_REQUEST_BYTES));
    if (!(this.rewrite === "volume-stats" || this.track || deps.observe || deps.logger.isLevelEnabled("debug"))) body.chunks = undefined;
    stream.on("data", (chunk: Buffer) => {
      if (body.add(chunk)) return;
      body.chunks = undefined;
      stream.unpipe(up);
      this.fail(Code.ResourceExhausted, tooLargeMessage(deps.maxRequestBytes, " (--max-request-bytes)"));
      // The rest of the body is not wanted: RST_STREAM(NO_ERROR) after the status, as gRPC servers do.
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_NO_ERROR);
    });
    stream.once("end", () => {
      // CSI lets the CO ask for the health of a volume it only attempted to mount: remember on the attempt.
      if (this.track === "stage" || this.track === "publish") this.rememberVolume(this.track);
    });
    stream.pipe(up);

    up.once("response", (h, flags) => this.onResponse(up, h, flags));
    up.once("trailers", (t) => {
      if (!this.trailers) this.trailers = copyHeaders(t, DROP_RESPONSE, false);
    });
    up.on("error", (err) => {
      deps.logger.debug({ err, method: this.info.label }, "upstream stream error");
      this.fail(Code.Unavailable, unavailableMessage(deps.conn.display, err));
    });
    up.once("close", () => {
      // Normal completion: trailers arrived (or the call already ended).
      if (this.finished || this.trailers) return;
      // Reset without a status: map it like a gRPC client would.
      const code = statusForRstCode(up.rstCode);
      this.fail(code, code === Code.Unavailable ? unavailableMessage(deps.conn.display, new Error("stream refused")) : `upstream reset the stream (HTTP/2 error ${up.rstCode})`);
    });
  }

  private onResponse(up: http2.ClientHttp2Stream, h: http2.IncomingHttpHeaders, flags: number): void {
    if (this.finished) return;
    const headers = copyHeaders(h, DROP_RESPONSE, true);
    if (flags & NGHTTP2_FLAG_END_STREAM) {
      // Trailers-only reply (how gRPC sends most errors): relay in one HEADERS frame.
      this.stream.respond(headers, { endStream: true });
      this.finish(statusOf(h));
      return;
    }
    if (this.rewrite) {
      this.bufferAndRewrite(up, headers);
      return;
    }
    this.respondStreaming(headers);
    up.pipe(this.stream);
  }

  private respondStreaming(headers: http2.OutgoingHttpHeaders): void {
    const { stream } = this;
    stream.respond(headers, { waitForTrailers: true });
    stream.once("wantTrailers", () => {
      const t = this.trailers ?? statusTrailers(Code.Internal, "upstream ended the call without a status");
      stream.sendTrailers(t);
      this.finish(Number(t["grpc-status"]));
    });
  }

  private bufferAndRewrite(up: http2.ClientHttp2Stream, headers: http2.OutgoingHttpHeaders): void {
    const chunks: Buffer[] = [];
    let size = 0;
    let passthrough = false;
    const onData = (c: Buffer) => {
      size += c.length;
      chunks.push(c);
      if (size > MAX_BUFFERED_BYTES) {
        // Too big to be a CSI reply we understand: relay it untouched.
        passthrough = true;
        up.removeListener("data", onData);
        up.removeListener("end", onEnd);
        this.respondStreaming(headers);
        for (const b of chunks) this.stream.write(b);
        up.pipe(this.stream);
      }
    };
    const onEnd = () => {
      if (passthrough || this.finished) return;
      void this.sendRewritten(headers, Buffer.concat(chunks));
    };
    up.on("data", onData);
    up.once("end", onEnd);
  }

  private async sendRewritten(headers: http2.OutgoingHttpHeaders, body: Buffer): Promise<void> {
    let out: Uint8Array = body;
    const ok = statusOf(this.trailers as http2.IncomingHttpHeaders) === GRPC_OK;
    const message = ok ? singleMessage(body) : undefined;
    if (message) {
      try {
        if (this.rewrite === "capabilities") {
          out = encodeFrame(this.rewriteCapabilities(message));
        } else {
          const verdict = this.rememberedCondition();
          if (verdict) {
            const r = withVolumeCondition(message, verdict);
            this.deps.metrics.volumeConditions.inc({ result: r.outcome });
            out = encodeFrame(r.bytes);
          } else {
            this.deps.metrics.volumeConditions.inc({ result: "skipped" });
          }
        }
      } catch (err) {
        this.deps.logger.warn({ err, method: this.info.label }, "could not rewrite upstream reply; relaying it unchanged");
        out = body;
      }
    }
    if (this.finished || this.stream.destroyed) return;
    delete headers["content-length"];
    this.respondStreaming(headers);
    this.stream.end(out);
  }

  private rewriteCapabilities(message: Uint8Array): Uint8Array {
    const view = this.deps.health!.view;
    const volume = view.hasVolumeChecks();
    const r = withHealthCapabilities(message, { volumeCondition: volume, volumeHealth: volume, storageHealth: view.hasStorageChecks() });
    this.deps.driverHealth?.observe(r.driver);
    return r.bytes;
  }

  /** The request message, when it was kept and is one (gzip inflated within the decode cap). */
  private requestMessage(): Buffer | undefined {
    return this.body?.message(requestEncoding(this.headers) ?? "identity");
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

  private forgetVolume(kind: "unstage" | "unpublish"): void {
    const message = this.requestMessage();
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

  /** Ends the call with a status, however far the reply has got. */
  private fail(code: Code, message: string): void {
    if (this.finished || this.ending) return;
    const { stream } = this;
    if (this.up) {
      this.up.unpipe(stream);
      if (!this.up.closed) this.up.close(NGHTTP2_CANCEL);
    }
    if (!stream.headersSent) {
      respondTrailersOnly(stream, code, message);
      this.finish(code);
      return;
    }
    // Headers are out and respondStreaming waits for trailers: they carry the status.
    this.ending = true;
    this.trailers = statusTrailers(code, message);
    if (!stream.writableEnded) stream.end();
  }

  private finish(code: number): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    const { deps, info } = this;
    const seconds = Number(process.hrtime.bigint() - this.t0) / 1e9;
    const codeName = Number.isNaN(code) ? "UNKNOWN" : statusName(code);
    deps.metrics.duration.observe({ method: info.label }, seconds);
    if (code === GRPC_OK && (this.track === "unstage" || this.track === "unpublish")) this.forgetVolume(this.track);
    if (code !== GRPC_OK) deps.metrics.errors.inc({ method: info.label, code: codeName });
    const observe = deps.observe;
    const debug = deps.logger.isLevelEnabled("debug");
    if (!observe && !debug) return;
    const message = this.requestMessage();
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
