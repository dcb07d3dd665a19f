import { Hono, type Context } from "hono";
import type { ProbeKind, ReadinessProvider } from "../engine/readiness.js";
import type { Metrics } from "../observability/metrics.js";
import { echo } from "../support/echo.js";
import { ProbeCounts } from "../services/probe-metrics.js";
import type { StorageHealthView } from "../storage-health/view.js";
import { excludeSet, readyzView, storageHealthJson, storageHealthLines } from "./readyz-text.js";

/** Paths the hono app owns; everything else on the port is RPC. */
export const HTTP_PATHS = new Set(["/healthz", "/livez", "/readyz", "/metrics"]);

interface EndpointSpec {
  probe: ProbeKind;
  okBody: string;
  failBody: string;
  name: string;
}

// /healthz keeps the reference driver's contract (200 ok / 503 not ready).
const ENDPOINTS: Record<string, EndpointSpec> = {
  "/healthz": { probe: "readiness", okBody: "ok", failBody: "not ready", name: "healthz" },
  "/readyz": { probe: "readiness", okBody: "ok", failBody: "not ready", name: "readyz" },
  "/livez": { probe: "liveness", okBody: "alive", failBody: "not alive", name: "livez" },
};

/** A peer that may see health detail without --readyz-detail-remote: loopback, or the unix socket (no remote address). */
export function isLocalPeer(remoteAddress: string | undefined): boolean {
  if (remoteAddress === undefined) return true;
  const a = remoteAddress.startsWith("::ffff:") ? remoteAddress.slice(7) : remoteAddress;
  return a === "::1" || a.startsWith("127.");
}

type NodeEnv = { incoming?: { socket?: { remoteAddress?: string } } };

/**
 * The plain-HTTP paths. serve: "all" (health and /metrics on one port), "health"
 * (the HTTP endpoint when --metrics-endpoint is set: /metrics is 404 there) or
 * "metrics" (the metrics listener: /metrics and nothing else). Health detail
 * (NIDs, interface names, check messages) is for local peers unless detailRemote.
 */
export function createHttpApp(opts: {
  readiness: ReadinessProvider;
  metrics: Metrics;
  notes?: () => string[];
  serve?: "all" | "health" | "metrics";
  detailRemote?: boolean;
  /** Storage and volume health, listed by ?verbose (it does not change the verdict). */
  storageHealth?: StorageHealthView;
}): Hono<{ Bindings: NodeEnv }> {
  const { readiness, metrics } = opts;
  const serve = opts.serve ?? "all";
  const app = new Hono<{ Bindings: NodeEnv }>();
  const detailAllowed = (c: Context<{ Bindings: NodeEnv }>) => opts.detailRemote === true || isLocalPeer(c.env?.incoming?.socket?.remoteAddress);

  const answer = (spec: EndpointSpec) => (c: Context<{ Bindings: NodeEnv }>) => {
    const s = readiness.snapshot();
    const exclude = excludeSet(c.req.queries("exclude") ?? []);
    const view = readyzView(s, spec.probe, exclude);
    const status = view.ok ? 200 : 503;
    ProbeCounts.for(metrics).http(spec.name, view.ok);
    c.header("cache-control", "no-store");
    if (!detailAllowed(c)) return c.text(view.ok ? spec.okBody : spec.failBody, status);
    if ((c.req.header("accept") ?? "").includes("application/json")) {
      return c.json(
        {
          status: view.ok ? "ok" : "failing",
          phase: s.phase,
          ready: s.ready,
          live: s.live,
          excluded: [...exclude],
          conditions: s.conditions,
          refusals: s.refusals,
          overrides: s.overrides ?? [],
          notes: opts.notes?.() ?? [],
          ...(opts.storageHealth ? { storageHealth: storageHealthJson(opts.storageHealth) } : {}),
        },
        status,
      );
    }
    if (c.req.query("verbose") !== undefined) {
      const verdict = `${spec.name} check ${view.ok ? "passed" : "failed"}`;
      return c.text([...view.lines, ...storageHealthLines(opts.storageHealth), ...(opts.notes?.() ?? []), verdict, ""].join("\n"), status);
    }
    return c.text(view.ok ? spec.okBody : spec.failBody, status);
  };

  if (serve !== "metrics") for (const [path, spec] of Object.entries(ENDPOINTS)) app.get(path, answer(spec));
  // Scrapes that overlap share one: each would otherwise walk the whole
  // registry at once, and a pipelined burst of them is enough to exhaust the heap.
  let scrape: Promise<string> | undefined;
  const collect = () =>
    (scrape ??= metrics.registry.metrics().finally(() => {
      scrape = undefined;
    }));
  if (serve !== "health") {
    app.get("/metrics", async (c) => {
      const body = await collect();
      return c.text(body, 200, { "content-type": metrics.registry.contentType });
    });
  }
  // A served path asked with another method: 405 names the ones it takes (RFC 9110 §15.5.6).
  const served = [...(serve !== "metrics" ? Object.keys(ENDPOINTS) : []), ...(serve !== "health" ? ["/metrics"] : [])];
  for (const path of served) {
    app.all(path, (c) => c.text(`method ${c.req.method} is not allowed for ${path}; use GET or HEAD\n`, 405, { allow: "GET, HEAD" }));
  }
  app.notFound((c) => c.text(`not found: ${echo(c.req.path)}\n`, 404));
  app.onError((err, c) => c.text(`internal error: ${err.message}`, 500));
  return app;
}
