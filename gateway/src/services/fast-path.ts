import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ProbeRequestSchema, ProbeResponseSchema } from "../../gen/csi/v1/csi_pb.js";
import {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import type { ReadinessProvider } from "../engine/readiness.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import type { Reply, UnaryRoute } from "../rawcall/route.js";
import { serveUnary, type UnaryServer } from "../rawcall/server.js";
import { encodeFrame } from "../transport/grpc-wire.js";
import type { StreamContext } from "../transport/stream-route.js";
import { healthStatus, unknownServiceMessage } from "./grpc-health.js";
import { ProbeCounts } from "./probe-metrics.js";
import type { ProbeAnswer, ProbeSource } from "./probe-source.js";
import { ACCEPT_COMPRESSION, contextValuesFor, transportOf, type RpcStack } from "./router.js";

const PROBE = "/csi.v1.Identity/Probe";
const CHECK = "/grpc.health.v1.Health/Check";
const SUPPORTED = new Set(ACCEPT_COMPRESSION.map((c) => c.name));

// Encoded once with the same library Connect uses, so the bytes match its answers.
const PROBE_READY: Reply = { frame: encodeFrame(toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: true }))) };
const PROBE_NOT_READY: Reply = { frame: encodeFrame(toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: false }))) };
const CHECK_REPLIES = new Map<Status, Reply>(
  [Status.SERVING, Status.NOT_SERVING].map((s) => [s, { frame: encodeFrame(toBinary(HealthCheckResponseSchema, create(HealthCheckResponseSchema, { status: s }))) }]),
);
/** As Connect decodes (see router.ts): unknown fields are skipped, not kept. */
const READ_OPTIONS = { readUnknownFields: false } as const;

export interface FastPathOptions {
  stack: RpcStack;
  probe: ProbeSource;
  readiness: ReadinessProvider;
  metrics: Metrics;
  logger: Logger;
  readMaxBytes: number;
}

/**
 * The hottest calls — Probe and Health/Check over plain gRPC — as two routes
 * on the raw-call core, answered straight from the latest state. Each takes
 * only the ordinary case (one well-formed message, a synchronous answer);
 * anything else goes, with the bytes already read, to the very Connect handler
 * that would have served it, so semantics and errors stay Connect's. Its
 * answers are byte-identical to Connect's; the interop tests run both paths.
 */
export function createFastPath(opts: FastPathOptions): UnaryServer {
  const probeHandler = opts.stack.handlers.get(PROBE);
  const checkHandler = opts.stack.handlers.get(CHECK);
  if (!probeHandler || !checkHandler) throw new Error("fast path needs the Identity and Health handlers");
  const { metrics } = opts;
  const counts = ProbeCounts.for(metrics);
  const transport = (ctx: StreamContext) => transportOf("application/grpc", ctx);
  // Pre-labelled counts (CounterCells): no label hashing per request.
  const cells = (method: string) => ({
    answered: metrics.hotCells.cell(metrics.fastPath, { method, result: "answered" }),
    fallback: metrics.hotCells.cell(metrics.fastPath, { method, result: "connect" }),
  });

  const probe: UnaryRoute = {
    path: PROBE,
    csiOnly: false,
    maxBytes: opts.readMaxBytes,
    fallback: probeHandler,
    counts: cells("Probe"),
    answer(msg, ctx) {
      if (msg.length > 0) {
        try {
          fromBinary(ProbeRequestSchema, msg, READ_OPTIONS);
        } catch {
          return undefined;
        }
      }
      let answer: ProbeAnswer | Promise<ProbeAnswer>;
      try {
        answer = opts.probe.answer();
      } catch {
        return undefined;
      }
      if (answer instanceof Promise) {
        // Deadlines and cancellation of a pending answer are Connect's job.
        answer.catch(() => {});
        return undefined;
      }
      counts.probe(transport(ctx), answer);
      if (answer.kind === "error") return { code: answer.code, message: answer.message };
      return answer.ready ? PROBE_READY : PROBE_NOT_READY;
    },
  };

  const check: UnaryRoute = {
    path: CHECK,
    csiOnly: false,
    maxBytes: opts.readMaxBytes,
    fallback: checkHandler,
    counts: cells("Health.Check"),
    answer(msg, ctx) {
      let service: string;
      try {
        service = fromBinary(HealthCheckRequestSchema, msg, READ_OPTIONS).service;
      } catch {
        return undefined;
      }
      const status = healthStatus(service, opts.readiness.snapshot());
      counts.check(transport(ctx), status);
      if (status === undefined) return { code: Code.NotFound, message: unknownServiceMessage(service) };
      return CHECK_REPLIES.get(status);
    },
  };

  return serveUnary([probe, check], {
    logger: opts.logger,
    connect: { invoke: opts.stack.invoke, contextValues: contextValuesFor },
    negotiate: SUPPORTED,
  });
}
