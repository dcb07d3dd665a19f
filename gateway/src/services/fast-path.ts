import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { once } from "node:events";
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { ProbeRequestSchema, ProbeResponseSchema } from "../../gen/csi/v1/csi_pb.js";
import {
  HealthCheckRequestSchema,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import type { ReadinessProvider } from "../engine/readiness.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { clampDeadlineHeaders, parseGrpcTimeout } from "../transport/grpc-timeout.js";
import { encodeFrame, GRPC_OK, singleMessage, statusTrailers } from "../transport/grpc-wire.js";
import { resetUnreadRequest, type StreamContext, type StreamRoute } from "../transport/stream-route.js";
import { healthStatus, unknownServiceMessage } from "./grpc-health.js";
import { ProbeCounts } from "./probe-metrics.js";
import type { ProbeAnswer, ProbeSource } from "./probe-source.js";
import { ACCEPT_COMPRESSION, contextValuesFor, transportOf, type RpcStack } from "./router.js";

const PROBE = "/csi.v1.Identity/Probe";
const CHECK = "/grpc.health.v1.Health/Check";
const SUPPORTED = new Set(ACCEPT_COMPRESSION.map((c) => c.name));

// Encoded once with the same library Connect uses, so the bytes match its answers.
const PROBE_READY = encodeFrame(toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: true })));
const PROBE_NOT_READY = encodeFrame(toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: false })));
const CHECK_FRAMES = new Map<Status, Buffer>(
  [Status.SERVING, Status.NOT_SERVING].map((s) => [s, encodeFrame(toBinary(HealthCheckResponseSchema, create(HealthCheckResponseSchema, { status: s })))]),
);
const OK_TRAILERS: OutgoingHttpHeaders = { "grpc-status": String(GRPC_OK) };
/** Shared listeners, so the ordinary answer allocates no closures for them. */
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}
function ignore(): void {}
/** As Connect decodes (see router.ts): unknown fields are skipped, not kept. */
const READ_OPTIONS = { readUnknownFields: false } as const;

/** Connect answers with the first encoding the client accepts that it supports; so do we. */
function responseEncoding(accept: string | string[] | undefined): string | undefined {
  if (accept === undefined || accept === "") return undefined;
  for (const name of String(accept).split(",")) {
    const n = name.trim();
    if (SUPPORTED.has(n)) return n;
  }
  return undefined;
}

export interface FastPathOptions {
  stack: RpcStack;
  probe: ProbeSource;
  readiness: ReadinessProvider;
  metrics: Metrics;
  logger: Logger;
  readMaxBytes: number;
}

/**
 * Answers the hottest calls — Probe and Health/Check over plain gRPC — straight
 * from the latest state on the raw HTTP/2 stream, skipping Connect's per-call
 * machinery. It takes only the ordinary case (identity encoding, one
 * uncompressed well-formed message, a synchronous answer); anything else is
 * handed, with the bytes already read, to the very Connect handler that would
 * have served it, so semantics and errors stay Connect's. Its answers are
 * byte-identical to Connect's; the interop tests run both paths.
 */
export function createFastPath(opts: FastPathOptions): StreamRoute {
  const probeHandler = opts.stack.handlers.get(PROBE);
  const checkHandler = opts.stack.handlers.get(CHECK);
  if (!probeHandler || !checkHandler) throw new Error("fast path needs the Identity and Health handlers");
  const { metrics } = opts;

  const counts = ProbeCounts.for(metrics);
  const transport = (ctx: StreamContext) => transportOf("application/grpc", ctx);
  // Pre-labelled counts (CounterCells): no label hashing per request.
  const fastCells = (method: string) => ({
    answered: metrics.hotCells.cell(metrics.fastPath, { method, result: "answered" }),
    connect: metrics.hotCells.cell(metrics.fastPath, { method, result: "connect" }),
  });
  const fastPathCells = { [PROBE]: fastCells("Probe"), [CHECK]: fastCells("Health.Check") } as Record<string, ReturnType<typeof fastCells>>;

  const reply = (stream: ServerHttp2Stream, encoding: string | undefined, body: Buffer | undefined, trailers: OutgoingHttpHeaders) => {
    if (stream.destroyed) return;
    const headers: OutgoingHttpHeaders = { ":status": 200, "content-type": "application/grpc+proto" };
    if (encoding) headers["grpc-encoding"] = encoding;
    stream.respond(headers, { waitForTrailers: true });
    stream.once("wantTrailers", trailers === OK_TRAILERS ? sendOkTrailers : () => stream.sendTrailers(trailers));
    stream.end(body);
  };

  /** Returns false when the ordinary case does not apply and Connect must answer. */
  const answerProbe = (stream: ServerHttp2Stream, msg: Buffer, encoding: string | undefined, ctx: StreamContext): boolean => {
    if (msg.length > 0) {
      try {
        fromBinary(ProbeRequestSchema, msg, READ_OPTIONS);
      } catch {
        return false;
      }
    }
    let answer: ProbeAnswer | Promise<ProbeAnswer>;
    try {
      answer = opts.probe.answer();
    } catch {
      return false;
    }
    if (answer instanceof Promise) {
      // Deadlines and cancellation of a pending answer are Connect's job.
      answer.catch(() => {});
      return false;
    }
    counts.probe(transport(ctx), answer);
    if (answer.kind === "error") {
      reply(stream, encoding, undefined, statusTrailers(answer.code, answer.message));
    } else {
      reply(stream, encoding, answer.ready ? PROBE_READY : PROBE_NOT_READY, OK_TRAILERS);
    }
    return true;
  };

  const answerCheck = (stream: ServerHttp2Stream, msg: Buffer, encoding: string | undefined, ctx: StreamContext): boolean => {
    let service: string;
    try {
      service = fromBinary(HealthCheckRequestSchema, msg, READ_OPTIONS).service;
    } catch {
      return false;
    }
    const status = healthStatus(service, opts.readiness.snapshot());
    counts.check(transport(ctx), status);
    if (status === undefined) {
      reply(stream, encoding, undefined, statusTrailers(Code.NotFound, unknownServiceMessage(service)));
    } else {
      reply(stream, encoding, CHECK_FRAMES.get(status), OK_TRAILERS);
    }
    return true;
  };

  const viaConnect = (
    stream: ServerHttp2Stream,
    headers: IncomingHttpHeaders,
    handler: UniversalHandler,
    read: Buffer[],
    rest: AsyncIterable<Buffer> | undefined,
    ctx: StreamContext,
  ) => {
    const abort = new AbortController();
    stream.once("close", () => abort.abort());
    resetUnreadRequest(stream);
    clampDeadlineHeaders(headers);
    const header = new Headers();
    for (const [k, v] of Object.entries(headers)) {
      if (k.startsWith(":") || v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [String(v)]) header.append(k, one);
    }
    async function* body() {
      yield* read;
      if (rest) yield* rest;
    }
    const ct = String(headers["content-type"]);
    opts.stack
      .invoke(handler, {
        httpVersion: "2.0",
        method: "POST",
        url: `http://${headers[":authority"] ?? "localhost"}${headers[":path"]}`,
        header,
        body: body(),
        signal: abort.signal,
        contextValues: contextValuesFor(ct, ctx),
      })
      .then((res) => writeUniversal(stream, res))
      .catch((err) => {
        opts.logger.debug({ err, path: headers[":path"] }, "fast path fallback failed");
        if (!stream.destroyed) stream.close();
      });
  };

  return (stream, headers, ctx) => {
    const path = headers[":path"];
    const handler = path === PROBE ? probeHandler : path === CHECK ? checkHandler : undefined;
    if (!handler || headers[":method"] !== "POST") return false;
    const ct = headers["content-type"];
    if (ct !== "application/grpc" && ct !== "application/grpc+proto") return false;
    const enc = headers["grpc-encoding"];
    if (enc !== undefined && enc !== "identity") return false;
    const timeout = headers["grpc-timeout"];
    // A malformed deadline is Connect's to refuse, in its own words.
    if (timeout !== undefined && parseGrpcTimeout(timeout) === undefined) return false;
    const encoding = responseEncoding(headers["grpc-accept-encoding"]);
    const seen = fastPathCells[path === PROBE ? PROBE : CHECK]!;

    stream.on("error", ignore);
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > opts.readMaxBytes + 5) {
        // Too big for the ordinary case: Connect enforces the limit and says so.
        stream.removeListener("data", onData);
        stream.removeListener("end", onEnd);
        stream.pause();
        seen.connect.n++;
        viaConnect(stream, headers, handler, chunks, stream, ctx);
      }
    };
    const onEnd = () => {
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      const msg = singleMessage(body);
      const done =
        msg !== undefined &&
        (path === PROBE ? answerProbe(stream, msg, encoding, ctx) : answerCheck(stream, msg, encoding, ctx));
      seen[done ? "answered" : "connect"].n++;
      if (!done) viaConnect(stream, headers, handler, [body], undefined, ctx);
    };
    stream.on("data", onData);
    stream.once("end", onEnd);
    return true;
  };
}

/** Writes a Connect universal response onto a raw HTTP/2 stream. */
async function writeUniversal(stream: ServerHttp2Stream, res: UniversalServerResponse): Promise<void> {
  if (stream.destroyed) return;
  const headers: OutgoingHttpHeaders = { ":status": res.status };
  res.header?.forEach((v, k) => (headers[k] = v));
  const trailers: OutgoingHttpHeaders = {};
  let hasTrailers = false;
  res.trailer?.forEach((v, k) => {
    trailers[k] = v;
    hasTrailers = true;
  });
  stream.respond(headers, { waitForTrailers: hasTrailers, endStream: !res.body && !hasTrailers });
  if (hasTrailers) stream.once("wantTrailers", () => stream.sendTrailers(trailers));
  if (res.body) {
    for await (const chunk of res.body) {
      if (stream.destroyed) return;
      if (!stream.write(chunk)) await once(stream, "drain");
    }
  }
  if (res.body || hasTrailers) stream.end();
}
