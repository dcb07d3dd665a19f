// Kubernetes node reporting: the entry point main() loads on demand (with the
// client library) when --node-name and a condition or a taint are given.
import type { ReadinessProvider } from "../engine/state.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { createKubeApi, type KubeApi } from "./api.js";
import { KubeMetrics } from "./metrics.js";
import { NodeReporter } from "./reporter.js";
import type { KubeReportingSpec } from "./spec.js";

export interface NodeReporting {
  stop(): Promise<void>;
}

export interface NodeReportingOptions {
  spec: KubeReportingSpec;
  readiness: ReadinessProvider;
  /** The current CSI driver name (gateway mode: the upstream's once it has answered). */
  driverName: () => string;
  logger: Logger;
  metrics: Metrics;
}

/** Throws (before anything runs) when the kubeconfig cannot be loaded. */
export function prepareNodeReporting(opts: NodeReportingOptions): { api: KubeApi; start(): NodeReporting } {
  const metrics = new KubeMetrics(opts.metrics);
  const api = createKubeApi({
    nodeName: opts.spec.nodeName,
    kubeconfig: opts.spec.kubeconfig,
    impersonateNode: opts.spec.impersonateNode,
    requestTimeoutMs: opts.spec.timings.requestTimeoutMs,
    metrics,
  });
  return {
    api,
    start() {
      const reporter = new NodeReporter({ api, spec: opts.spec, readiness: opts.readiness, driverName: opts.driverName, logger: opts.logger, metrics });
      reporter.start();
      return { stop: () => reporter.stop() };
    },
  };
}
