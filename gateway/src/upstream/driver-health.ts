import type { Logger } from "../observability/logger.js";
import type { DriverHealth, DriverHealthMethod } from "../services/node-health-route.js";
import { GRPC_OK, statusName } from "../transport/grpc-wire.js";
import type { UpstreamConnection } from "./connection.js";
import { advertisedHealth } from "./intercept.js";
import { NODE_GET_CAPABILITIES_PATH } from "./methods.js";
import type { UpstreamMetrics } from "./metrics.js";
import type { UpstreamStatus } from "./status.js";
import { unaryCall } from "../rawcall/client.js";

/** Bound on the background NodeGetCapabilities probegate sends itself. */
const CAPABILITIES_TIMEOUT_MS = 5_000;

/**
 * What gateway mode knows of the driver's own health RPCs. Which ones it
 * advertises is learnt off the call path: from every NodeGetCapabilities reply
 * the proxy relays (the kubelet asks before each health round), and from one
 * call of probegate's own once the driver first answers. A health call never
 * waits for that: until it is known, the driver is taken to advertise neither.
 */
export class UpstreamDriverHealth implements DriverHealth {
  private known: { volume: boolean; storage: boolean } | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly conn: UpstreamConnection,
    private readonly status: UpstreamStatus,
    private readonly metrics: UpstreamMetrics,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const ask = () => {
      if (!this.status.answeredOnce || this.known) return;
      this.unsubscribe?.();
      this.unsubscribe = undefined;
      void unaryCall(this.conn, NODE_GET_CAPABILITIES_PATH, new Uint8Array(), CAPABILITIES_TIMEOUT_MS).then((r) => {
        if (r.kind !== "reply" || r.status !== GRPC_OK || !r.body || this.known) return;
        try {
          this.known = advertisedHealth(r.body);
        } catch (err) {
          this.logger.debug({ err }, "upstream NodeGetCapabilities reply does not decode");
        }
      });
    };
    this.unsubscribe = this.status.subscribe(ask);
    ask();
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /** From a NodeGetCapabilities reply the proxy relayed. */
  observe(driver: { volume: boolean; storage: boolean }): void {
    this.known = driver;
  }

  advertises(): { volume: boolean; storage: boolean } | undefined {
    return this.known;
  }

  async call(path: string, request: Uint8Array, timeoutMs: number): ReturnType<DriverHealth["call"]> {
    const r = await unaryCall(this.conn, path, request, timeoutMs);
    if (r.kind === "unreachable") return { ok: false, reason: `unreachable: ${r.error.message}` };
    if (r.status !== GRPC_OK) return { ok: false, reason: `${statusName(r.status)}: ${r.message}` };
    if (!r.body) return { ok: false, reason: "OK without one reply message" };
    return { ok: true, message: r.body };
  }

  failed(method: DriverHealthMethod, reason: string): void {
    this.metrics.healthFailures.inc({ method });
    // The reason is the driver's status text or a decode error: no request content, so no secrets.
    this.logger.warn({ method, upstream: this.conn.display, reason }, "upstream driver's health answer failed; answering with probegate's entries only");
  }
}
