// Kubernetes node reporting: the entry point main() loads on demand when
// --node-name and a condition or a taint are given.
import type { ReadinessProvider } from "../engine/readiness.js";
import type { StorageHealthView } from "../storage-health/view.js";
import type { Logger } from "../observability/logger.js";
import type { Metrics } from "../observability/metrics.js";
import { createKubeApi } from "./client/api.js";
import { loadClientConfig } from "./client/kubeconfig.js";
import { KubeMetrics } from "./metrics.js";
import { NodeReporter } from "./reporter.js";
import type { KubeReportingSpec } from "./spec.js";
import type { UnstickSource } from "./unstick-events.js";

export interface NodeReporting {
  stop(): Promise<void>;
}

export interface NodeReportingOptions {
  spec: KubeReportingSpec;
  readiness: ReadinessProvider;
  /** Storage and volume health (Events on the Node and PVs, the opt-in storage condition/taint); absent: none. */
  storageHealth?: StorageHealthView;
  /** --unstick=unmount's steps (gateway mode), each an Event. */
  unstick?: UnstickSource;
  /** The current CSI driver name (gateway mode: the upstream's once it has answered). */
  driverName: () => string;
  logger: Logger;
  metrics: Metrics;
  /** Sent as User-Agent. */
  version: string;
  env: NodeJS.ProcessEnv;
}

/** Throws (before anything runs) when the configuration cannot be loaded: one line naming the file and field. */
export function prepareNodeReporting(opts: NodeReportingOptions): { start(): NodeReporting } {
  const config = loadClientConfig({ files: opts.spec.kubeconfig, context: opts.spec.kubeContext, env: opts.env });
  if (config.insecureSkipTLSVerify && config.server.startsWith("https:")) {
    opts.logger.warn(
      { kubeconfig: config.source, server: config.server },
      "INSECURE: insecure-skip-tls-verify is set: the API server's certificate is NOT verified, and anyone on the path can read the token and forge the Node's state",
    );
  }
  const metrics = new KubeMetrics(opts.metrics);
  const api = createKubeApi({
    nodeName: opts.spec.nodeName,
    config,
    impersonateNode: opts.spec.impersonateNode,
    requestTimeoutMs: opts.spec.timings.requestTimeoutMs,
    // The client counts nothing itself: the reporter's metrics observe its requests.
    onRequest: (r) => metrics.requests.inc(r),
    userAgent: `probegate/${opts.version}`,
  });
  return {
    start() {
      const reporter = new NodeReporter({ api, spec: opts.spec, readiness: opts.readiness, storageHealth: opts.storageHealth, unstick: opts.unstick, driverName: opts.driverName, logger: opts.logger, metrics });
      reporter.start();
      return {
        stop: async () => {
          await reporter.stop();
          api.close();
        },
      };
    },
  };
}
