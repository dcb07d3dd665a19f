// NodeGetStorageHealth and NodeGetVolumeHealth (CSI v1.13) on the CSI endpoint,
// as routes on the raw-call core: gRPC on the raw stream, Connect and gRPC-Web
// through their twins. They are Node RPCs, so like the rest of the Node
// service they are served on the CSI endpoint only, never the network port.
// Answers come from memory (the last background evaluation); the only thing
// that can wait is the driver's own answer in gateway mode, when the driver
// advertises the RPC itself.

import { fromBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { Node, NodeGetStorageHealthRequestSchema, NodeGetVolumeHealthRequestSchema } from "../../gen/csi/v1/csi_pb.js";
import type { StorageHealthView, VolumeRegistry } from "../storage-health/view.js";
import type { Logger } from "../observability/logger.js";
import { budgetMs } from "../rawcall/request.js";
import type { Reply, UnaryRoute } from "../rawcall/route.js";
import { serveUnary, type UnaryServer } from "../rawcall/server.js";
import { encodeFrame } from "../transport/grpc-wire.js";
import { echo } from "./limits.js";
import { HealthAnswers, healthCapabilitiesReply, mergeStorageReply, mergeVolumeReply } from "./node-health.js";

export const NODE_GET_STORAGE_HEALTH_PATH = "/csi.v1.Node/NodeGetStorageHealth";
export const NODE_GET_VOLUME_HEALTH_PATH = "/csi.v1.Node/NodeGetVolumeHealth";

/**
 * A volume id, two paths of at most 4096 bytes and a secrets map fit many
 * times over; anything larger is refused unread rather than decoded.
 */
export const HEALTH_REQUEST_MAX_BYTES = 64 * 1024;

const READ_OPTIONS = { readUnknownFields: false } as const;

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

/** The routes' server, and a close() that stops following the view's changes. */
export type NodeHealthRoute = UnaryServer & { close(): void };

function refusal(code: Code, message: string): Reply {
  return { code, message };
}

export function createNodeHealthRoute(opts: NodeHealthRouteOptions): NodeHealthRoute {
  const { view, registry, driver } = opts;
  const answers = new HealthAnswers(view);
  const gateway = opts.mode === "gateway";
  const cap = opts.driverTimeoutCapMs ?? 10_000;
  // The driver gets less than the caller's deadline, so that when it is slow probegate's own entries still arrive in time.
  const driverMs = (callerMs: number) => budgetMs(callerMs, cap, true);
  /** Node mode with nothing loaded to answer from: no answer is better than an empty (healthy) one. */
  const unconfigured = (path: string, kind: string) => refusal(Code.Unimplemented, `${path}: no probe:"${kind}" checks are loaded`);
  // Gateway mode: what probegate does not check is the driver's alone to answer (the proxy forwards it, over gRPC).
  const forwarded = (path: string) => `${path.slice(1)} is the CSI driver's to answer while probegate has no checks for it, and is forwarded over gRPC only`;

  const answerStorage = async (msg: Buffer, timeoutMs: number): Promise<Reply> => {
    if (!view.hasStorageChecks()) return unconfigured(NODE_GET_STORAGE_HEALTH_PATH, "storage");
    if (msg.length > 0) {
      try {
        fromBinary(NodeGetStorageHealthRequestSchema, msg, READ_OPTIONS);
      } catch (err) {
        return refusal(Code.InvalidArgument, `NodeGetStorageHealthRequest does not decode: ${(err as Error).message}`);
      }
    }
    if (!gateway || !driver?.advertises()?.storage) return { frame: answers.storage() };
    const r = await driver.call(NODE_GET_STORAGE_HEALTH_PATH, msg, driverMs(timeoutMs));
    if (r.ok) {
      try {
        return { frame: encodeFrame(mergeStorageReply(view.storage(), r.message)) };
      } catch (err) {
        driver.failed("NodeGetStorageHealth", `reply does not decode: ${(err as Error).message}`);
      }
    } else driver.failed("NodeGetStorageHealth", r.reason);
    return { frame: answers.storage() };
  };

  const answerVolume = async (msg: Buffer, timeoutMs: number): Promise<Reply> => {
    if (!view.hasVolumeChecks()) return unconfigured(NODE_GET_VOLUME_HEALTH_PATH, "volume");
    let req;
    try {
      req = fromBinary(NodeGetVolumeHealthRequestSchema, msg, READ_OPTIONS);
    } catch (err) {
      return refusal(Code.InvalidArgument, `NodeGetVolumeHealthRequest does not decode: ${(err as Error).message}`);
    }
    const volumeId = req.volumeId;
    if (volumeId === "") return refusal(Code.InvalidArgument, "volume_id is required");
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
        return refusal(code, echo((err as Error).message));
      }
    }
    if (!gateway || !driver?.advertises()?.volume) return { frame: answers.volume(volumeId) };
    const r = await driver.call(NODE_GET_VOLUME_HEALTH_PATH, msg, driverMs(timeoutMs));
    if (r.ok) {
      try {
        return { frame: encodeFrame(mergeVolumeReply(volumeId, view.volume(volumeId) ?? [], r.message)) };
      } catch (err) {
        driver.failed("NodeGetVolumeHealth", `reply does not decode: ${(err as Error).message}`);
      }
    } else driver.failed("NodeGetVolumeHealth", r.reason);
    return { frame: answers.volume(volumeId) };
  };

  /** A Node RPC on the CSI endpoint; in gateway mode only while `checked` (else the proxy forwards it). */
  const nodeRoute = (method: UnaryRoute["method"] & {}, answer: UnaryRoute["answer"], checked?: () => boolean): UnaryRoute => {
    const path = `/${method.parent.typeName}/${method.name}`;
    const route: UnaryRoute = { path, method, csiOnly: true, maxBytes: HEALTH_REQUEST_MAX_BYTES, answer };
    return gateway && checked ? { ...route, takes: checked, elsewhere: forwarded(path) } : route;
  };
  const routes = [
    nodeRoute(Node.method.nodeGetStorageHealth, (msg, _ctx, timeoutMs) => answerStorage(msg, timeoutMs), () => view.hasStorageChecks()),
    nodeRoute(Node.method.nodeGetVolumeHealth, (msg, _ctx, timeoutMs) => answerVolume(msg, timeoutMs), () => view.hasVolumeChecks()),
  ];
  // Gateway mode relays the driver's NodeGetCapabilities (rewritten by the proxy); node mode answers it.
  if (!gateway) routes.push(nodeRoute(Node.method.nodeGetCapabilities, () => ({ frame: encodeFrame(healthCapabilitiesReply(view)) })));
  return Object.assign(serveUnary(routes, { logger: opts.logger }), { close: () => answers.close() });
}
