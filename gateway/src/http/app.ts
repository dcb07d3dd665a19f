import { Hono, type Context } from "hono";
import type { ProbeKind, ReadinessProvider } from "../engine/state.js";
import type { Metrics } from "../observability/metrics.js";
import { ProbeCounts } from "../services/probe-metrics.js";
import { excludeSet, healthView } from "./health-text.js";

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

export function createHttpApp(opts: { readiness: ReadinessProvider; metrics: Metrics; notes?: () => string[] }): Hono {
  const { readiness, metrics } = opts;
  const app = new Hono();

  const answer = (spec: EndpointSpec) => (c: Context) => {
    const s = readiness.snapshot();
    const exclude = excludeSet(c.req.queries("exclude") ?? []);
    const view = healthView(s, spec.probe, exclude);
    const status = view.ok ? 200 : 503;
    ProbeCounts.for(metrics).http(spec.name, view.ok);
    c.header("cache-control", "no-store");
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
        },
        status,
      );
    }
    if (c.req.query("verbose") !== undefined) {
      const verdict = `${spec.name} check ${view.ok ? "passed" : "failed"}`;
      return c.text([...view.lines, ...(opts.notes?.() ?? []), verdict, ""].join("\n"), status);
    }
    return c.text(view.ok ? spec.okBody : spec.failBody, status);
  };

  for (const [path, spec] of Object.entries(ENDPOINTS)) app.get(path, answer(spec));
  // Scrapes that overlap share one: each would otherwise walk the whole
  // registry at once, and a pipelined burst of them is enough to exhaust the heap.
  let scrape: Promise<string> | undefined;
  const collect = () =>
    (scrape ??= metrics.registry.metrics().finally(() => {
      scrape = undefined;
    }));
  app.get("/metrics", async (c) => {
    const body = await collect();
    return c.text(body, 200, { "content-type": metrics.registry.contentType });
  });
  app.notFound((c) => c.text("not found", 404));
  app.onError((err, c) => c.text(`internal error: ${err.message}`, 500));
  return app;
}
