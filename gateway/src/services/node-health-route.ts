// NodeGetStorageHealth and NodeGetVolumeHealth (CSI v1.13) on the CSI endpoint.
// They are Node RPCs, so like the rest of the Node service they are routed on
// the CSI endpoint only, never the network port. Answers come from memory (the
// last background evaluation); the only thing that can wait is the driver's
// own answer in gateway mode, when the driver advertises the RPC itself.

import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { gunzipSync } from "node:zlib";
import { NodeGetStorageHealthRequestSchema, NodeGetVolumeHealthRequestSchema } from "../../gen/csi/v1/csi_pb.js";
import type { StorageHealthView, VolumeRegistry } from "../storage-health/view.js";
import type { Logger } from "../observability/logger.js";
import { parseGrpcTimeout } from "../transport/grpc-timeout.js";
import { encodeFrame, GRPC_OK, respondTrailersOnly, statusTrailers } from "../transport/grpc-wire.js";
import { resetUnreadRequest, type StreamRoute } from "../transport/stream-route.js";
import { echo } from "./limits.js";
import { HealthAnswers, healthCapabilitiesReply, mergeStorageReply, mergeVolumeReply } from "./node-health.js";

export const NODE_GET_STORAGE_HEALTH_PATH = "/csi.v1.Node/NodeGetStorageHealth";
export const NODE_GET_VOLUME_HEALTH_PATH = "/csi.v1.Node/NodeGetVolumeHealth";
const NODE_GET_CAPABILITIES_PATH = "/csi.v1.Node/NodeGetCapabilities";

/**
 * A volume id, two paths of at most 4096 bytes and a secrets map fit many
 * times over; anything larger is refused unread rather than decoded.
 */
export const HEALTH_REQUEST_MAX_BYTES = 64 * 1024;

const READ_OPTIONS = { readUnknownFields: false } as const;
const OK_TRAILERS: OutgoingHttpHeaders = { "grpc-status": String(GRPC_OK) };

export type DriverHealthMethod = "NodeGetStorageHealth" | "NodeGetVolumeHealth";

/** Gateway mode: the upstream driver, as far as its own health answers go. */
export interface DriverHealth {
  /** What the driver's last NodeGetCapabilities advertised; undefined until it has been seen (taken as neither). */
  advertises(): { volume: boolean; storage: boolean } | undefined;
  /** One unary call to the driver; resolves (never rejects) with its reply message or why there is none. */
  call(path: string, request: Uint8Array, timeoutMs: number): Promise<{ ok: true; message: Uint8Array } | { ok: false; reason: string }>;
  /** Counts and logs a driver failure that cost its entries. */
  failed(method: DriverHealthMethod, reason: string): void;
}

export interface NodeHealthRouteOptions {
  view: StorageHealthView;
  registry: VolumeRegistry;
  /**
   * node: probegate is the only answerer (and answers NodeGetCapabilities with
   * the health RPCs). gateway: the driver's socket is behind; calls probegate
   * has no checks for are left to the proxy, and a driver that advertises an
   * RPC is asked too.
   */
  mode: "node" | "gateway";
  driver?: DriverHealth;
  /** Cap on the time given to the driver's own answer (gateway mode). */
  driverTimeoutCapMs?: number;
  logger: Logger;
}

function isGrpc(headers: IncomingHttpHeaders): boolean {
  const ct = headers["content-type"];
  return headers[":method"] === "POST" && typeof ct === "string" && /^application\/grpc(\+proto)?(;|$)/.test(ct);
}

function reply(stream: ServerHttp2Stream, frame: Buffer): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
  stream.once("wantTrailers", () => stream.sendTrailers(OK_TRAILERS));
  stream.end(frame);
  resetUnreadRequest(stream);
}

function refuse(stream: ServerHttp2Stream, code: Code, message: string): void {
  if (respondTrailersOnly(stream, code, message)) resetUnreadRequest(stream);
}

/**
 * The request's one message: undefined when the body is not exactly one
 * frame; gzip frames (the only compression probegate accepts) are inflated
 * within the same bound.
 */
function requestMessage(body: Buffer, encoding: string | undefined): Buffer | undefined {
  if (body.length === 0) return Buffer.alloc(0);
  if (body.length < 5) return undefined;
  const len = body.readUInt32BE(1);
  if (body.length !== 5 + len) return undefined;
  const payload = body.subarray(5);
  if (body[0] === 0) return payload;
  if (body[0] !== 1 || encoding !== "gzip") return undefined;
  try {
    return gunzipSync(payload, { maxOutputLength: HEALTH_REQUEST_MAX_BYTES });
  } catch {
    return undefined;
  }
}

/** The route, and a close() that stops following the view's changes. */
export type NodeHealthRoute = StreamRoute & { close(): void };

export function createNodeHealthRoute(opts: NodeHealthRouteOptions): NodeHealthRoute {
  const { view, registry, driver, logger } = opts;
  const answers = new HealthAnswers(view);
  const gateway = opts.mode === "gateway";
  const cap = opts.driverTimeoutCapMs ?? 10_000;

  const answerStorage = async (stream: ServerHttp2Stream, msg: Buffer, timeoutMs: number) => {
    if (msg.length > 0) {
      try {
        fromBinary(NodeGetStorageHealthRequestSchema, msg, READ_OPTIONS);
      } catch (err) {
        return refuse(stream, Code.InvalidArgument, `NodeGetStorageHealthRequest does not decode: ${(err as Error).message}`);
      }
    }
    if (!gateway || !driver?.advertises()?.storage) return reply(stream, answers.storage());
    const r = await driver.call(NODE_GET_STORAGE_HEALTH_PATH, msg, timeoutMs);
    if (r.ok) {
      try {
        return reply(stream, encodeFrame(mergeStorageReply(view.storage(), r.message)));
      } catch (err) {
        driver.failed("NodeGetStorageHealth", `reply does not decode: ${(err as Error).message}`);
      }
    } else driver.failed("NodeGetStorageHealth", r.reason);
    reply(stream, answers.storage());
  };

  const answerVolume = async (stream: ServerHttp2Stream, msg: Buffer, timeoutMs: number) => {
    let req;
    try {
      req = fromBinary(NodeGetVolumeHealthRequestSchema, msg, READ_OPTIONS);
    } catch (err) {
      return refuse(stream, Code.InvalidArgument, `NodeGetVolumeHealthRequest does not decode: ${(err as Error).message}`);
    }
    const volumeId = req.volumeId;
    if (volumeId === "") return refuse(stream, Code.InvalidArgument, "volume_id is required");
    if (view.volume(volumeId) === undefined) {
      // Never seen (or not evaluated yet): evaluate it from now on; this answer stays empty.
      try {
        registry.request({
          volumeId,
          ...(req.volumePublishPath ? { targetPath: req.volumePublishPath } : {}),
          ...(req.stagingTargetPath ? { stagingPath: req.stagingTargetPath } : {}),
          origin: "request",
        });
      } catch (err) {
        // A full registry (--max-volumes) is no fault of the request: say so rather than answer "healthy".
        const code = (err as { kind?: string }).kind === "limit" ? Code.ResourceExhausted : Code.InvalidArgument;
        return refuse(stream, code, echo((err as Error).message));
      }
    }
    if (!gateway || !driver?.advertises()?.volume) return reply(stream, answers.volume(volumeId));
    const r = await driver.call(NODE_GET_VOLUME_HEALTH_PATH, msg, timeoutMs);
    if (r.ok) {
      try {
        return reply(stream, encodeFrame(mergeVolumeReply(volumeId, view.volume(volumeId) ?? [], r.message)));
      } catch (err) {
        driver.failed("NodeGetVolumeHealth", `reply does not decode: ${(err as Error).message}`);
      }
    } else driver.failed("NodeGetVolumeHealth", r.reason);
    reply(stream, answers.volume(volumeId));
  };

  const route: StreamRoute = (stream, headers, ctx) => {
    // The listeners only give this route to the CSI endpoint; say so here too.
    if (ctx.surface !== "csi") return false;
    const path = headers[":path"];
    const kind =
      path === NODE_GET_STORAGE_HEALTH_PATH
        ? "storage"
        : path === NODE_GET_VOLUME_HEALTH_PATH
          ? "volume"
          : path === NODE_GET_CAPABILITIES_PATH && !gateway
            ? "capabilities"
            : undefined;
    if (kind === undefined || !isGrpc(headers)) return false;
    const configured = kind === "storage" ? view.hasStorageChecks() : kind === "volume" ? view.hasVolumeChecks() : true;
    // Gateway mode: what probegate does not check is the driver's alone to answer (the proxy forwards it).
    if (gateway && !configured) return false;

    stream.on("error", (err) => logger.debug({ err, path }, "health call stream error"));
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity" && encoding !== "gzip") {
      stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-accept-encoding": "identity,gzip", ...statusTrailers(Code.Unimplemented, `grpc-encoding ${echo(String(encoding))} is not supported`) }, { endStream: true });
      resetUnreadRequest(stream);
      return true;
    }
    // The driver gets less than the caller's deadline, so that when it is slow
    // probegate's own entries still arrive in time.
    const callerMs = parseGrpcTimeout(headers["grpc-timeout"]);
    const timeoutMs = Math.max(1, Math.min(callerMs === undefined ? cap : callerMs - Math.max(50, callerMs / 10), cap));

    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    stream.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > HEALTH_REQUEST_MAX_BYTES + 5) {
        refused = true;
        chunks.length = 0;
        refuse(stream, Code.ResourceExhausted, `request message is larger than ${HEALTH_REQUEST_MAX_BYTES} bytes`);
        return;
      }
      chunks.push(chunk);
    });
    stream.once("end", () => {
      if (refused || stream.destroyed) return;
      const msg = requestMessage(Buffer.concat(chunks), encoding as string | undefined);
      if (msg === undefined) return refuse(stream, Code.InvalidArgument, "request is not one gRPC message");
      if (!configured) {
        // Node mode with nothing loaded to answer from: no answer is better than an empty (healthy) one.
        return refuse(stream, Code.Unimplemented, `${path}: no probe:"${kind}" checks are loaded`);
      }
      const done = (p: Promise<void> | void) =>
        void Promise.resolve(p).catch((err) => {
          logger.warn({ err, path }, "health call failed");
          refuse(stream, Code.Internal, "health answer failed");
        });
      if (kind === "capabilities") return reply(stream, encodeFrame(healthCapabilitiesReply(view)));
      done(kind === "storage" ? answerStorage(stream, msg, timeoutMs) : answerVolume(stream, msg, timeoutMs));
    });
    return true;
  };
  return Object.assign(route, { close: () => answers.close() });
}
