import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  Health,
  HealthCheckResponse_ServingStatus as Status,
} from "../../gen/grpc/health/v1/health_pb.js";
import type { ReadinessSnapshot, ReadinessProvider } from "../engine/readiness.js";
import { echo } from "./limits.js";

/** The service names probegate answers for, and which state each reports. */
export const HEALTH_SERVICES = ["", "liveness", "readiness"] as const;

/** Serving status for a health service name, or undefined for names we don't know. */
export function healthStatus(service: string, s: ReadinessSnapshot): Status | undefined {
  switch (service) {
    case "":
    case "liveness":
      return s.live ? Status.SERVING : Status.NOT_SERVING;
    case "readiness":
      return s.ready && s.live ? Status.SERVING : Status.NOT_SERVING;
    default:
      return undefined;
  }
}

export const unknownServiceMessage = (service: string) => `unknown service "${echo(service)}"`;

export function healthService(
  readiness: ReadinessProvider,
  shutdown: AbortSignal,
  /** Told every Check answer given, undefined for an unknown service (for metrics: see probe-metrics.ts). */
  onCheck?: (status: Status | undefined, ctx: HandlerContext) => void,
): ServiceImpl<typeof Health> {
  return {
    check(req, ctx) {
      const status = healthStatus(req.service, readiness.snapshot());
      onCheck?.(status, ctx);
      if (status === undefined) throw new ConnectError(unknownServiceMessage(req.service), Code.NotFound);
      return { status };
    },
    list() {
      const s = readiness.snapshot();
      const statuses: Record<string, { status: Status }> = {};
      for (const name of HEALTH_SERVICES) statuses[name] = { status: healthStatus(name, s)! };
      return { statuses };
    },
    // Per the protocol: send the current status at once, then every change;
    // an unknown service gets SERVICE_UNKNOWN and the stream stays open.
    async *watch(req, ctx) {
      // Not AbortSignal.any([ctx.signal, shutdown]): on Node 20 every such
      // signal stays in the long-lived shutdown signal's set of dependants for
      // good, one entry per Watch ever served (bench/results/growth-2026-11-26.md).
      // Listening on both and removing the listeners at the end keeps nothing.
      const ended = () => ctx.signal.aborted || shutdown.aborted;
      const statusOf = (s: ReadinessSnapshot) => healthStatus(req.service, s) ?? Status.SERVICE_UNKNOWN;
      // Subscribe before the first read so a change in between is not missed.
      let dirty = false;
      let wake: (() => void) | undefined;
      const unsubscribe = readiness.subscribe(() => {
        dirty = true;
        wake?.();
      });
      const onAbort = () => wake?.();
      ctx.signal.addEventListener("abort", onAbort);
      shutdown.addEventListener("abort", onAbort);
      try {
        let last = statusOf(readiness.snapshot());
        yield { status: last };
        while (!ended()) {
          if (!dirty) await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          dirty = false;
          if (ended()) break;
          const next = statusOf(readiness.snapshot());
          if (next !== last) {
            last = next;
            yield { status: next };
          }
        }
      } finally {
        unsubscribe();
        ctx.signal.removeEventListener("abort", onAbort);
        shutdown.removeEventListener("abort", onAbort);
      }
      // A Watch only ends because something ended it: say what, never OK.
      if (shutdown.aborted || !ctx.signal.aborted) throw new ConnectError("server is shutting down", Code.Unavailable);
      throw ConnectError.from(ctx.signal.reason ?? "call ended", Code.Canceled);
    },
  };
}
