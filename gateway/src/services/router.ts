import type { DescFile } from "@bufbuild/protobuf";
import { file_google_protobuf_descriptor, file_google_protobuf_wrappers } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextKey,
  createContextValues,
  type ConnectRouter,
  type ContextValues,
} from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { file_csi_v1_csi, Identity } from "../../gen/csi/v1/csi_pb.js";
import { file_grpc_health_v1_health, Health } from "../../gen/grpc/health/v1/health_pb.js";
import { file_grpc_reflection_v1_reflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { file_grpc_reflection_v1alpha_reflection } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import type { ReadinessProvider } from "../engine/readiness.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { requestContext, type CompatHandler, type StreamContext, type Surface } from "../transport/stream-route.js";
import { answerResponse, badAuthority } from "../transport/edge-answer.js";
import { clampDeadlineHeaders } from "../transport/grpc-timeout.js";
import { requestPath } from "../transport/request-path.js";
import { connectDecodeErrorsAsInvalidArgument, decodeErrorsAsInvalidArgument, specEncodeGrpcMessages } from "./decode-errors.js";
import { healthService } from "./grpc-health.js";
import { explainProtocolRefusal, fixedLimitWording } from "./protocol-errors.js";
import { identityService, type IdentityConfig } from "./identity.js";
import { ProbeCounts } from "./probe-metrics.js";
import type { ProbeSource } from "./probe-source.js";
import {
  DescriptorIndex,
  reflectionV1,
  reflectionV1alpha,
  reflectionV1alphaModule,
  reflectionV1Module,
} from "./reflection.js";
import { answerUnimplemented } from "./unimplemented.js";
import { connectTwins } from "../rawcall/connect-twin.js";
import type { UnaryRoute } from "../rawcall/route.js";

/** Transport label for metrics: which wire protocol and listener a call used. */
export type TransportLabel = "grpc-unix" | "grpc-tcp" | "grpc-web" | "connect";

export const transportKey = createContextKey<TransportLabel>("connect", { description: "transport label" });
/** Which endpoint the call came in on; reflection lists forwarded services on the CSI endpoint only. */
export const surfaceKey = createContextKey<Surface>("network", { description: "endpoint surface" });
/** The listener and surface of the call, for routes the raw-call core also serves through Connect. */
const streamContextKey = createContextKey<StreamContext>({ listener: "tcp", surface: "network" }, { description: "stream context" });

export function transportOf(contentType: string, ctx: StreamContext): TransportLabel {
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return ctx.listener === "unix" ? "grpc-unix" : "grpc-tcp";
  return "connect";
}

export function contextValuesFor(contentType: string, ctx: StreamContext): ContextValues {
  const values = createContextValues();
  values.set(transportKey, transportOf(contentType, ctx));
  values.set(surfaceKey, ctx.surface);
  values.set(streamContextKey, ctx);
  return values;
}

/** The proto files we describe over reflection, dependencies included. */
export const SERVED_FILES: readonly DescFile[] = [
  file_csi_v1_csi,
  file_grpc_health_v1_health,
  file_grpc_reflection_v1_reflection,
  file_grpc_reflection_v1alpha_reflection,
  file_google_protobuf_descriptor,
  file_google_protobuf_wrappers,
];

/** What Connect's server advertises and accepts; the fast path negotiates identically. */
export const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];

export interface RpcOptions {
  identity: IdentityConfig;
  probe: ProbeSource;
  readiness: ReadinessProvider;
  metrics: Metrics;
  logger: Logger;
  shutdown: AbortSignal;
  readMaxBytes: number;
  /** Fully-qualified names of services forwarded on the CSI endpoint (gateway mode), listed over reflection there only. */
  csiOnlyServices?: readonly string[];
  /** Services gateway mode forwards to the driver, over gRPC on the CSI endpoint only. */
  forwardedServices?: readonly string[];
  extraFiles?: readonly DescFile[];
  /** RPCs the raw-call core answers from memory: served here too, over Connect and gRPC-Web, from the same answers. */
  answered?: readonly UnaryRoute[];
}

export interface RpcStack {
  /** Connect's handler per request path ("/csi.v1.Identity/Probe"). */
  handlers: ReadonlyMap<string, UniversalHandler>;
  /** Node compat-API handler for everything the raw routes don't take. */
  compat: CompatHandler;
  /** Runs one Connect handler and applies probegate's response policy. */
  invoke(handler: UniversalHandler, req: Parameters<UniversalHandler>[0]): ReturnType<UniversalHandler>;
}

/** Every RPC we serve ourselves, over gRPC, gRPC-Web and Connect, on one Connect router. */
export function createRpcStack(opts: RpcOptions): RpcStack {
  const services = [
    Identity.typeName,
    Health.typeName,
    reflectionV1Module.ServerReflection.typeName,
    reflectionV1alphaModule.ServerReflection.typeName,
  ];
  const files = [...SERVED_FILES, ...(opts.extraFiles ?? [])];
  const networkIndex = new DescriptorIndex(files, services);
  const csiIndex = opts.csiOnlyServices?.length
    ? new DescriptorIndex(files, [...services, ...opts.csiOnlyServices])
    : networkIndex;
  const indexFor = (surface: Surface) => (surface === "csi" ? csiIndex : networkIndex);

  const router: ConnectRouter = createConnectRouter({
    acceptCompression: ACCEPT_COMPRESSION,
    readMaxBytes: opts.readMaxBytes,
    // Unknown fields are kept as one object each; nothing here needs them, and
    // they are what lets a small request fill the heap.
    binaryOptions: { readUnknownFields: false },
    shutdownSignal: opts.shutdown,
  });
  const counts = ProbeCounts.for(opts.metrics);
  router.service(Identity, identityService(opts.identity, opts.probe, (answer, ctx) => counts.probe(ctx.values.get(transportKey), answer)));
  router.service(Health, healthService(opts.readiness, opts.shutdown, (status, ctx) => counts.check(ctx.values.get(transportKey), status)));
  router.service(reflectionV1Module.ServerReflection, reflectionV1((ctx) => indexFor(ctx.values.get(surfaceKey))));
  router.service(reflectionV1alphaModule.ServerReflection, reflectionV1alpha((ctx) => indexFor(ctx.values.get(surfaceKey))));

  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  const answered = opts.answered ?? [];
  const twins = connectTwins(answered, { acceptCompression: ACCEPT_COMPRESSION, shutdown: opts.shutdown, contextOf: (v) => v.get(streamContextKey) });
  for (const [path, h] of twins) handlers.set(path, h);
  const notServed = notServedWording(files, answered, opts.forwardedServices ?? []);
  // Probe-style answers are read by people through many clients: make their
  // status messages decode everywhere, and a malformed request the caller's fault.
  const invoke: RpcStack["invoke"] = async (handler, req) =>
    fixedLimitWording(
      await connectDecodeErrorsAsInvalidArgument(
        specEncodeGrpcMessages(decodeErrorsAsInvalidArgument(explainProtocolRefusal(await handler(req), handler, req), handler.requestPath)),
        handler.requestPath,
      ),
    );

  const compat: CompatHandler = (req, res) => {
    const path = requestPath(req.url);
    const handler = handlers.get(path);
    const ctx = requestContext(req);
    const why = handler ? notServed.onSurface(path, ctx.surface) : notServed.message(path, ctx.surface);
    if (!handler || why !== undefined) return answerUnimplemented(req, res, why ?? `unknown method ${path}`);
    clampDeadlineHeaders(req.headers);
    let uReq;
    try {
      uReq = universalRequestFromNodeRequest(
        req,
        res as never,
        undefined,
        contextValuesFor(String(req.headers["content-type"] ?? ""), ctx),
      );
    } catch (err) {
      // The edge validates the authority first; this is the last word if anything else cannot form a URL.
      opts.logger.debug({ err, path }, "request not understood");
      req.resume();
      answerResponse(res, req.headers["content-type"], badAuthority(), true);
      return;
    }
    invoke(handler, uReq)
      .then((uRes) => universalResponseToNodeResponse(uRes, res as never))
      .catch((reason) => {
        if (ConnectError.from(reason).code === Code.Aborted) return;
        opts.logger.warn({ err: reason, path }, "rpc handler failed");
      });
  };
  return { handlers, compat, invoke };
}

/**
 * Why a path is not served here, in words that never call a method that
 * exists unknown: a Node RPC asked on the network port is served on the CSI
 * endpoint only; a forwarded method asked in a protocol the driver does not
 * speak is forwarded over gRPC only; a CSI method with no driver to forward
 * it to is not served in node mode.
 */
function notServedWording(files: readonly DescFile[], answered: readonly UnaryRoute[], forwarded: readonly string[]) {
  const known = new Set<string>();
  for (const f of files) for (const s of f.services) for (const m of s.methods) known.add(`/${s.typeName}/${m.name}`);
  const csiOnly = new Set(answered.filter((r) => r.csiOnly).map((r) => r.path));
  const forwardedServices = new Set(forwarded);
  const csiEndpointOnly = (path: string) => `${path} is served on the CSI endpoint only, never on the network port`;
  return {
    /** For a path with a handler: undefined when it may be served on this surface. */
    onSurface(path: string, surface: Surface): string | undefined {
      return surface !== "csi" && csiOnly.has(path) ? csiEndpointOnly(path) : undefined;
    },
    message(path: string, surface: Surface): string {
      if (!known.has(path)) return `unknown method ${path}`;
      const service = path.slice(1, path.lastIndexOf("/"));
      if (forwardedServices.has(service)) {
        return surface === "csi" ? `${path} is forwarded to the CSI driver over gRPC (HTTP/2) only; call it with gRPC` : csiEndpointOnly(path);
      }
      return `${path} is not served: probegate answers ${service} only in gateway mode, forwarding it to the CSI driver (--upstream)`;
    },
  };
}
