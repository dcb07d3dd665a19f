// The issue's targets, evaluated from one run's results (ratios within the run).
import type { BenchResult, ServerResult, TargetCheck } from "./types.js";

const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "n/a");

/** A server's largest RSS of start, after N and after 2N Probes, and how the report shows it. */
function peakRss(s: ServerResult): { rssMax: number; measured: string } {
  const m = s.memory;
  if (!m) return { rssMax: s.rssStartMiB ?? NaN, measured: `${f(s.rssStartMiB ?? NaN, 1)} MiB (start only)` };
  const rssMax = Math.max(m.rssStartMiB, m.rss100kMiB, m.rss200kMiB);
  return { rssMax, measured: `${f(rssMax, 1)} MiB (${f(m.rssStartMiB, 1)} / ${f(m.rss100kMiB, 1)} / ${f(m.rss200kMiB, 1)})` };
}
const pass = (ok: boolean, ...inputs: number[]) => (inputs.every(Number.isFinite) ? ok : null);

export function evaluateTargets(r: Pick<BenchResult, "servers" | "exec" | "plugins" | "nodeCost">): TargetCheck[] {
  const by = (id: string): ServerResult | undefined => r.servers.find((s) => s.id === id && s.available);
  const pg = by("probegate");
  const gj = by("grpc-js");
  const raw = by("node-http2-raw");
  const out: TargetCheck[] = [];

  const tp = (s?: ServerResult) => s?.throughput?.h2.reqPerSec ?? NaN;
  const vsGj = tp(pg) / tp(gj);
  out.push({
    id: "throughput-vs-grpc-js",
    what: "gRPC Probe throughput vs @grpc/grpc-js (h2load c8 m4, TCP h2c; no regression)",
    measured: `${f(vsGj)}× (${f(tp(pg), 0)} vs ${f(tp(gj), 0)} req/s)`,
    limit: "≥ 1.00×",
    pass: pass(vsGj >= 1, vsGj),
  });
  // Issue #13: within 10% of Node's own ceiling, same run; --pin is the reference method.
  const vsRaw = tp(pg) / tp(raw);
  out.push({
    id: "throughput-vs-raw-http2",
    what: "gRPC Probe throughput vs raw node:http2 canned (h2load c8 m4; reference: --pin)",
    measured: `${f(vsRaw)}× (${f(tp(pg), 0)} vs ${f(tp(raw), 0)} req/s)`,
    limit: "≥ 0.90×",
    pass: pass(vsRaw >= 0.9, vsRaw),
  });
  const cpu1 = (s?: ServerResult) => s?.singleClient?.cpuPerReqUs ?? NaN;
  const cpuVsRaw = cpu1(pg) / cpu1(raw);
  out.push({
    id: "cpu-per-probe-vs-raw-http2",
    what: "server CPU per Probe vs raw node:http2 canned (1 connection, 1 stream)",
    measured: `${f(cpuVsRaw)}× (${f(cpu1(pg), 1)} vs ${f(cpu1(raw), 1)} µs)`,
    limit: "≤ 1.10×",
    pass: pass(cpuVsRaw <= 1.1, cpuVsRaw),
  });
  // No regression against grpc-js (issue #5's targets).
  const cpuRatio = cpu1(pg) / cpu1(gj);
  out.push({
    id: "cpu-per-probe-vs-grpc-js",
    what: "server CPU per Probe vs @grpc/grpc-js (1 connection, 1 stream; no regression)",
    measured: `${f(cpuRatio)}× (${f(cpu1(pg), 1)} vs ${f(cpu1(gj), 1)} µs)`,
    limit: "≤ 1.20×",
    pass: pass(cpuRatio <= 1.2, cpuRatio),
  });
  const nc1000 = pg?.newconn.find((x) => x.rate === 1000);
  const p99 = (nc1000?.result.latency.p99 ?? NaN) / 1000;
  const errs = nc1000?.result.errors ?? NaN;
  out.push({
    id: "p99-newconn-1000",
    what: "p99 latency, new connection per probe at 1,000 probes/s (unix socket)",
    measured: `${f(p99, 3)} ms (${f(errs, 0)} errors)`,
    limit: "≤ 2 ms, no errors",
    pass: pass(p99 <= 2 && errs === 0, p99, errs),
  });
  const execCpu = r.exec.find((e) => e.label.startsWith("compiled"))?.result.cpuPerRunUs ?? NaN;
  const pgCpu = nc1000?.serverCpuPerProbeUs ?? NaN;
  const execRatio = execCpu / pgCpu;
  out.push({
    id: "cpu-vs-exec-script",
    what: "CPU per probe: exec-style script (compiled fake lnetctl) / probegate (new conn, 1,000/s)",
    measured: `${f(execRatio, 0)}× (${f(execCpu, 0)} vs ${f(pgCpu, 1)} µs)`,
    limit: "≥ 100×",
    pass: pass(execRatio >= 100, execRatio),
  });
  // Issue #13: ≤ 64 MiB after start and after 200k Probes, on every runtime measured.
  for (const s of r.servers.filter((x) => x.available && (x.id === "probegate" || x.id.startsWith("probegate@")))) {
    const m = s.memory;
    const { rssMax, measured } = peakRss(s);
    const on = `Node ${(s.node ?? "?").replace(/^v/, "")}`;
    out.push({
      id: s.id === "probegate" ? "rss" : `rss:${s.id}`,
      what: `probegate RSS on ${on}, bundled plugins, Kubernetes reporting off (max of start, ${m ? m.probesPerPhase / 1000 : 100}k, ${m ? (2 * m.probesPerPhase) / 1000 : 200}k probes)`,
      measured,
      limit: "≤ 64 MiB",
      pass: pass(rssMax <= 64, rssMax),
    });
    const growth = m?.growthPct ?? NaN;
    out.push({
      id: s.id === "probegate" ? "rss-growth" : `rss-growth:${s.id}`,
      what: `RSS growth on ${on} between ${m ? m.probesPerPhase / 1000 : 100}k and ${m ? (2 * m.probesPerPhase) / 1000 : 200}k probes`,
      measured: m ? `${f(growth, 1)}% (${f(m.rss100kMiB, 1)} → ${f(m.rss200kMiB, 1)} MiB)` : "n/a",
      limit: "< 5%",
      pass: pass(growth < 5, growth),
    });
  }
  // The figure with Kubernetes reporting on (the image's node flags, as the
  // node-reporting component runs it), per runtime: reported, not held to the limit.
  const k8s = r.servers.filter((x) => x.available && (x.id === "probegate+kubernetes" || x.id.startsWith("probegate+kubernetes@")));
  if (pg && k8s.length === 0) {
    out.push({ id: "rss-kubernetes", what: "probegate RSS with Kubernetes reporting on (reported)", measured: "n/a (no Kubernetes reporter target in this run)", limit: "none", pass: null });
  }
  for (const s of k8s) {
    out.push({
      id: s.id === "probegate+kubernetes" ? "rss-kubernetes" : `rss-kubernetes:${s.id.slice(s.id.indexOf("@") + 1)}`,
      what: `probegate RSS on Node ${(s.node ?? "?").replace(/^v/, "")} with Kubernetes reporting on (reported)${s.notes.length ? `; ${s.notes.join("; ")}` : ""}`,
      measured: peakRss(s).measured,
      limit: "none",
      pass: null,
    });
  }
  const plugins = r.plugins?.plugins ?? [];
  if (plugins.length === 0) {
    out.push({ id: "plugin-16", what: "each bundled plugin at 16 NIs", measured: "no plugins found", limit: "≤ 100 µs", pass: null });
    out.push({ id: "plugin-linear", what: "plugin cost linear in input size", measured: "no plugins found", limit: "t(1024)/t(256) ≤ 6", pass: null });
  }
  for (const p of plugins) {
    const t16 = p.points.find((x) => x.nis === 16)?.medianUs ?? NaN;
    out.push({
      id: `plugin-16:${p.name}`,
      what: `plugin ${p.name} check() at 16 NIs (raw, median)`,
      measured: p.error ? `error: ${p.error}` : `${f(t16, 1)} µs`,
      limit: "≤ 100 µs",
      pass: pass(t16 <= 100, t16),
    });
    const g = p.growth1024over256;
    out.push({
      id: `plugin-linear:${p.name}`,
      what: `plugin ${p.name} linear in input size: t(1024 NIs)/t(256 NIs)`,
      measured: `${f(g)}× (linear = 4×, quadratic = 16×)`,
      limit: "≤ 6×",
      pass: pass(g <= 6, g),
    });
    // Issue #4: a 1,024-NI `net show` must parse in well under a millisecond.
    // Measured here as lnet-nets' whole check() (parse, verdict, the
    // interfaces fact), which is stricter than the parse alone.
    if (p.name === "lnet-nets") {
      const t1024 = p.points.find((x) => x.nis === 1024)?.medianUs ?? NaN;
      out.push({
        id: "plugin-1024:lnet-nets",
        what: "plugin lnet-nets whole check() of a 1,024-NI net show (raw, median; stricter than the parse alone)",
        measured: p.error ? `error: ${p.error}` : `${f(t1024, 0)} µs`,
        limit: "≤ 1,000 µs",
        pass: pass(t1024 <= 1000, t1024),
      });
    }
  }
  out.push(...nodeCostTargets(r));
  return out;
}

/** Issue #32: the idle node's cost, Node 24 against Node 20 (first runtime = the one running the bench). */
function nodeCostTargets(r: Pick<BenchResult, "servers" | "nodeCost">): TargetCheck[] {
  const out: TargetCheck[] = [];
  const c = r.nodeCost;
  const first = c?.runs[0];
  const idle = first?.idle;
  out.push({
    id: "idle-wakeups",
    what: "idle gateway: main-thread wake-ups per second (no client, no check due)",
    measured: idle ? `${f(idle.mainWakeupsPerSec, 1)}/s (all threads ${f(idle.allWakeupsPerSec, 1)}/s)` : "n/a (no nodecost section)",
    limit: "≤ 5/s",
    pass: idle ? pass(idle.mainWakeupsPerSec <= 5, idle.mainWakeupsPerSec) : null,
  });
  out.push({
    id: "idle-cpu",
    what: "idle gateway: CPU per minute between rounds",
    measured: idle ? `${f(idle.selfMsPerMin, 1)} ms` : "n/a",
    limit: "≤ 20 ms",
    pass: idle ? pass(idle.selfMsPerMin <= 20, idle.selfMsPerMin) : null,
  });
  // Per node of the first runtime (issue #43): LNet alone, the Lustre client with 1 and 8 volumes.
  const script = c?.exec?.msPerMin ?? NaN;
  const perNode = c?.runs.filter((x) => x.runtime === first?.runtime) ?? [];
  for (const run of perNode.length ? perNode : [undefined]) {
    const suffix = run?.node && run.node !== "lnet" ? `-${run.node}` : "";
    const on = run?.node && run.node !== "lnet" ? `, ${run.node}` : "";
    const round = run?.roundGatewayMs ?? NaN;
    out.push({
      id: `round-cpu${suffix}`,
      what: `one check round: gateway + spawner CPU (bundled checks, storage health on, compiled fake tools${on}; commands' CPU not included)`,
      measured: run?.roundGatewayMs !== undefined ? `${f(round, 2)} ms (commands ${f(run.roundCommandsMs ?? NaN, 2)} ms)` : "n/a",
      limit: "≤ 4 ms",
      pass: run?.roundGatewayMs !== undefined ? pass(round <= 4, round) : null,
    });
    const rounds = run?.rounds;
    const perMin = rounds ? rounds.selfMsPerMin + rounds.childrenMsPerMin : NaN;
    out.push({
      id: `node-cost-vs-exec-script${suffix}`,
      what: `per minute at a ${c?.cadenceSec ?? 10} s cadence: gateway + spawner + commands vs the exec readiness script (same tools${on})`,
      measured: rounds && c?.exec ? `${f(perMin / script)}× (${f(perMin, 0)} vs ${f(script, 0)} ms)` : "n/a",
      limit: "≤ 0.60×",
      pass: rounds && c?.exec ? pass(perMin / script <= 0.6, perMin, script) : null,
    });
  }
  // Node 24 against Node 20, same run, memory section: after start and the largest after load.
  const pg = r.servers.find((s) => s.id === "probegate" && s.available && s.memory);
  const pg24 = r.servers.find((s) => /^probegate@node24$/.test(s.id) && s.available && s.memory);
  if (pg?.memory && pg24?.memory) {
    const start = pg24.memory.rssStartMiB / pg.memory.rssStartMiB;
    const load = Math.max(pg24.memory.rss100kMiB, pg24.memory.rss200kMiB) / Math.max(pg.memory.rss100kMiB, pg.memory.rss200kMiB);
    out.push({
      id: "node24-rss-start",
      what: "Node 24 RSS after start vs Node 20's (same run)",
      measured: `${f(start)}× (${f(pg24.memory.rssStartMiB, 1)} vs ${f(pg.memory.rssStartMiB, 1)} MiB)`,
      limit: "≤ 1.10×",
      pass: pass(start <= 1.1, start),
    });
    out.push({
      id: "node24-rss-load",
      what: "Node 24 RSS under load vs Node 20's (same run, largest after N and 2N Probes)",
      measured: `${f(load)}× (${f(Math.max(pg24.memory.rss100kMiB, pg24.memory.rss200kMiB), 1)} vs ${f(Math.max(pg.memory.rss100kMiB, pg.memory.rss200kMiB), 1)} MiB)`,
      limit: "≤ 1.10×",
      pass: pass(load <= 1.1, load),
    });
  }
  return out;
}
