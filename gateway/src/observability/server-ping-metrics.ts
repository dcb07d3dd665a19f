// Metrics of the LNet pings of the servers (engine/sources/server-pings.ts):
// their latency by result (a bounded set) and how many are outstanding (hung
// ones included). Registered once per registry.

import type { Gauge, Histogram, Registry } from "prom-client";
import { gauge, histogram } from "./declare.js";

export interface ServerPingMetrics {
  /** result: ok | timeout | fail | error (hung pings are counted when they end). */
  pings: Histogram<"result">;
  outstanding: Gauge;
}

const made = new WeakMap<Registry, ServerPingMetrics>();

export function serverPingMetrics(registry: Registry): ServerPingMetrics {
  let m = made.get(registry);
  if (m) return m;
  m = {
    pings: histogram(
      registry,
      "probegate_lnet_server_ping_duration_seconds",
      "LNet pings (lnetctl ping) of the Lustre servers this node's file systems use, by result, and how long each took.",
      ["result"] as const,
      [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15],
    ),
    outstanding: gauge(registry, "probegate_lnet_server_pings_outstanding", "Server pings running now, hung ones included (at most one per NID)."),
  };
  made.set(registry, m);
  return m;
}
