import { Code } from "@connectrpc/connect";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ProbeRequestSchema, ProbeResponseSchema } from "../../gen/csi/v1/csi_pb.js";
import type { Logger } from "../observability/logger.js";
import type { ProbeAnswer, ProbeSource } from "../services/probe-source.js";
import { unavailableMessage, type UpstreamConnection } from "./connection.js";
import { GRPC_OK, statusName } from "../transport/grpc-wire.js";
import { PROBE_PATH } from "./methods.js";
import type { UpstreamMetrics } from "./metrics.js";
import type { UpstreamStatus } from "./status.js";
import { unaryCall } from "../rawcall/client.js";

const PROBE_REQUEST = toBinary(ProbeRequestSchema, create(ProbeRequestSchema));

type UpstreamVerdict =
  | { kind: "ok"; ready: boolean }
  | { kind: "error"; code: Code; message: string }
  | { kind: "unreachable"; message: string };

export interface UpstreamProbeOptions {
  conn: UpstreamConnection;
  /** Shared start-up state: until the driver has answered once it is still starting. */
  status: UpstreamStatus;
  local: ProbeSource;
  metrics: UpstreamMetrics;
  logger: Logger;
  /** Bound on one upstream Probe call. */
  timeoutMs?: number;
  /** How long an upstream answer is reused; Probe is polled often and must stay cheap. */
  cacheMs?: number;
}

/**
 * Probe in gateway mode: the driver's own Probe combined with the local checks.
 * Driver error → that error; driver ready:false → ready:false; otherwise the
 * local verdict (which --probe-ready shapes: by default only liveness checks
 * count). Before the driver has answered anything, unreachable → ready:false. Upstream calls are single-flight and cached briefly, so a
 * burst of pollers costs one upstream call; a cached answer returns synchronously.
 */
export class UpstreamProbeSource implements ProbeSource {
  private cached: { verdict: UpstreamVerdict; at: number } | undefined;
  private inflight: Promise<UpstreamVerdict> | undefined;
  private readonly timeoutMs: number;
  private readonly cacheMs: number;

  constructor(private readonly opts: UpstreamProbeOptions) {
    this.timeoutMs = opts.timeoutMs ?? 3000;
    this.cacheMs = opts.cacheMs ?? 1000;
    // A cached "unreachable" from before the driver's first answer meant "starting"; after it, it would mean "dead".
    opts.status.subscribe(() => (this.cached = undefined));
  }

  answer(): ProbeAnswer | Promise<ProbeAnswer> {
    const c = this.cached;
    if (c && performance.now() - c.at < this.cacheMs) return this.combine(c.verdict);
    return this.refresh().then((v) => this.combine(v));
  }

  private combine(v: UpstreamVerdict): ProbeAnswer | Promise<ProbeAnswer> {
    switch (v.kind) {
      case "error":
        return { kind: "error", code: v.code, message: v.message };
      case "unreachable":
        // Still starting (the Azure Lustre driver installs its client for minutes): initializing, not broken.
        if (!this.opts.status.answeredOnce) return { kind: "ok", ready: false };
        return { kind: "error", code: Code.Unavailable, message: v.message };
      case "ok":
        return v.ready ? this.opts.local.answer() : { kind: "ok", ready: false };
    }
  }

  private refresh(): Promise<UpstreamVerdict> {
    if (!this.inflight) {
      this.inflight = this.callUpstream().then((verdict) => {
        this.cached = { verdict, at: performance.now() };
        this.inflight = undefined;
        return verdict;
      });
    }
    return this.inflight;
  }

  private async callUpstream(): Promise<UpstreamVerdict> {
    const { conn, metrics, logger } = this.opts;
    const r = await unaryCall(conn, PROBE_PATH, PROBE_REQUEST, this.timeoutMs);
    if (r.kind === "unreachable") {
      metrics.probes.inc({ result: "unreachable" });
      logger.debug({ err: r.error, upstream: conn.display }, "upstream Probe unreachable");
      return { kind: "unreachable", message: unavailableMessage(conn.display, r.error) };
    }
    this.opts.status.markAnswered();
    if (r.status !== GRPC_OK) {
      metrics.probes.inc({ result: "error" });
      return {
        kind: "error",
        code: (r.status >= 1 && r.status <= 16 ? r.status : Code.Unknown) as Code,
        message: `upstream CSI driver Probe failed: ${statusName(r.status)}: ${r.message}`,
      };
    }
    let ready = true;
    try {
      // An absent ready field means ready (CSI spec).
      ready = fromBinary(ProbeResponseSchema, r.body ?? new Uint8Array()).ready ?? true;
    } catch (err) {
      metrics.probes.inc({ result: "error" });
      return { kind: "error", code: Code.Internal, message: `upstream CSI driver sent an undecodable ProbeResponse: ${(err as Error).message}` };
    }
    metrics.probes.inc({ result: ready ? "ready" : "not_ready" });
    return { kind: "ok", ready };
  }
}
