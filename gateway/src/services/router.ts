import type { DescFile } from "@bufbuild/protobuf";
import { file_google_protobuf_descriptor, file_google_protobuf_wrappers } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter, ContextValues } from "@connectrpc/connect";
import { createContextKey, createContextValues } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { CompatHandler } from "../transport/h2-server.js";
import type http2 from "node:http2";
import { file_csi_v1_csi, Identity } from "../../gen/csi/v1/csi_pb.js";
import { file_grpc_health_v1_health, Health } from "../../gen/grpc/health/v1/health_pb.js";
import { file_grpc_reflection_v1_reflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { file_grpc_reflection_v1alpha_reflection } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import type { ReadinessProvider } from "../engine/state.js";
import type { Metrics } from "../observability/metrics.js";
import { LISTENER } from "../transport/h2-server.js";
import type { Listener } from "../transport/stream-route.js";
import { grpcDecodeErrorsAsInvalidArgument } from "./decode-errors.js";
import { healthService } from "./health.js";
import { identityService, type IdentityConfig } from "./identity.js";
import type { ProbeSource } from "./probe-source.js";
import {
  DescriptorIndex,
  reflectionV1,
  reflectionV1alpha,
  reflectionV1alphaModule,
  reflectionV1Module,
} from "./reflection.js";
import { unimplemented } from "./unimplemented.js";

/** Transport label for metrics: which wire protocol and listener a call used. */
export type TransportLabel = "grpc-unix" | "grpc-tcp" | "grpc-web" | "connect";

export const transportKey = createContextKey<TransportLabel>("connect", { description: "transport label" });

export function transportOf(contentType: string, listener: Listener): TransportLabel {
  if (contentType.startsWith("application/grpc-web")) return "grpc-web";
  if (contentType.startsWith("application/grpc")) return listener === "unix" ? "grpc-unix" : "grpc-tcp";
  return "connect";
}

function listenerOf(req: Parameters<CompatHandler>[0]): Listener {
  const stream = (req as http2.Http2ServerRequest).stream;
  const session = stream?.session as unknown as Record<symbol, Listener> | undefined;
  return session?.[LISTENER] ?? "tcp";
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

export interface RpcOptions {
  identity: IdentityConfig;
  probe: ProbeSource;
  readiness: ReadinessProvider;
  metrics: Metrics;
  shutdown: AbortSignal;
  readMaxBytes: number;
  /** Extra fully-qualified service names to list over reflection (gateway mode's forwarded ones). */
  extraServices?: readonly string[];
  extraFiles?: readonly DescFile[];
}

/** Connect handler for every RPC we serve ourselves, over gRPC, gRPC-Web and Connect. */
export function createRpcHandler(opts: RpcOptions): CompatHandler {
  const services = [
    Identity.typeName,
    Health.typeName,
    reflectionV1Module.ServerReflection.typeName,
    reflectionV1alphaModule.ServerReflection.typeName,
    ...(opts.extraServices ?? []),
  ];
  const index = new DescriptorIndex([...SERVED_FILES, ...(opts.extraFiles ?? [])], services);
  const { metrics } = opts;

  const routes = (router: ConnectRouter) => {
    router.service(
      Identity,
      identityService(opts.identity, opts.probe),
      {
        interceptors: [
          (next) => async (req) => {
            if (req.method.name !== "Probe") return next(req);
            const transport = req.contextValues.get(transportKey);
            try {
              const res = await next(req);
              const ready = (res as { message?: { ready?: boolean } }).message?.ready !== false;
              metrics.probeRequests.inc({ transport, method: "Probe", result: ready ? "ready" : "not_ready" });
              return res;
            } catch (err) {
              metrics.probeRequests.inc({ transport, method: "Probe", result: "error" });
              throw err;
            }
          },
        ],
      },
    );
    router.service(Health, healthService(opts.readiness, opts.shutdown));
    router.service(reflectionV1Module.ServerReflection, reflectionV1(index));
    router.service(reflectionV1alphaModule.ServerReflection, reflectionV1alpha(index));
  };

  const adapter = connectNodeAdapter({
    routes,
    fallback: unimplemented as Parameters<typeof connectNodeAdapter>[0]["fallback"],
    readMaxBytes: opts.readMaxBytes,
    shutdownSignal: opts.shutdown,
    contextValues: (req): ContextValues => {
      const values = createContextValues();
      values.set(transportKey, transportOf(String(req.headers["content-type"] ?? ""), listenerOf(req)));
      return values;
    },
  }) as CompatHandler;
  return grpcDecodeErrorsAsInvalidArgument(adapter);
}
