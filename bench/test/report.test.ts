// Timing-free checks of the report: table, targets and SVG from a synthetic result.
import { describe, expect, it } from "vitest";
import { parseBashTimes, parseH2load } from "../load/h2load.js";
import { netShow, pluginInput } from "../lib/lnet-inputs.js";
import { renderSvg } from "../report/svg.js";
import { mdTable, renderReport } from "../report/table.js";
import { evaluateTargets } from "../report/targets.js";
import type { BenchResult, ServerResult } from "../report/types.js";

const lat = (p50: number) => ({
  count: 100, p50, p90: p50 * 2, p99: p50 * 3, p999: p50 * 4, max: p50 * 5, mean: p50,
  curve: [[50, p50], [90, p50 * 2], [99, p50 * 3], [99.9, p50 * 4]] as [number, number][],
});
const h2 = (rps: number) => ({
  args: [], finishedSec: 1, reqPerSec: rps, total: 1000, succeeded: 1000, failed: 0, errored: 0, timeout: 0, status2xx: 1000,
  reqTimeUs: { min: 1, max: 2, mean: 1.5, sd: 0.1 }, clientCpuSec: 0.1, raw: "",
});
const server = (id: string, rps: number, cpu: number, p50: number): ServerResult => ({
  id, label: id === "node-http2-raw" ? "raw <node:http2> & co" : id, role: id === "probegate" ? "subject" : "peer", available: true, notes: [],
  newconn: [1, 1000].map((rate) => ({
    rate, pollers: rate * 10, serverCpuSec: 1, serverSchedSec: 1, serverCpuPerProbeUs: cpu,
    result: {
      params: { dial: { socketPath: "/x" }, rate, durationSec: 1, warmupSec: 0, pollers: 10, timeoutMs: 1 },
      latency: lat(p50), latencyFromSchedule: lat(p50), clientLag: lat(10), sent: 100, ok: 100, notReady: 0, errors: 0,
      errorSamples: [], achievedRate: rate, clientCpuSec: 0.1, measuredWallSec: 1,
    },
  })),
  throughput: { name: "t", h2: h2(rps), serverCpuSec: 1, cpuPerReqUs: cpu, serverCores: 1 },
  singleClient: { name: "s", h2: h2(rps / 2), serverCpuSec: 1, cpuPerReqUs: cpu, serverCores: 1 },
  http: [],
  memory: id === "probegate" ? { rssStartMiB: 40, rss100kMiB: 50, rss200kMiB: 51, growthPct: 2, probesPerPhase: 100_000 } : undefined,
});

function sample(): BenchResult {
  const r: BenchResult = {
    meta: { startedAt: "2025-01-01T00:00:00Z", finishedAt: "2025-01-01T00:01:00Z", quick: true, sections: ["newconn"], node: "v20", cpus: 2, cpuModel: "x", h2load: "h2load", clockTicks: 100 },
    servers: [
      server("probegate", 30000, 50, 400),
      server("grpc-js", 20000, 100, 600),
      server("node-http2-raw", 32000, 48, 300),
      { ...server("probegate", 30000, 50, 400), id: "probegate@node24", node: "v24.21.0", newconn: [], memory: { rssStartMiB: 60, rss100kMiB: 70, rss200kMiB: 70.5, growthPct: 0.7, probesPerPhase: 100_000 } },
    ],
    exec: [{ label: "compiled C fake", result: { params: { script: "s", fakeBin: "b", scenario: "c", iterations: 10 }, wall: lat(20000), cpuPerRunUs: 20000, failures: 0, firstOutput: "ready" } }],
    targets: [],
  };
  r.targets = evaluateTargets(r);
  return r;
}

describe("report", () => {
  it("evaluates the targets from ratios within the run", () => {
    const t = Object.fromEntries(sample().targets.map((x) => [x.id, x]));
    expect(t["throughput-vs-grpc-js"].pass).toBe(true);
    expect(t["throughput-vs-raw-http2"].pass).toBe(true); // 30000/32000 = 0.94 ≥ 0.9
    expect(t["cpu-per-probe-vs-raw-http2"].pass).toBe(true); // 50/48 = 1.04 ≤ 1.1
    expect(t["cpu-per-probe-vs-grpc-js"].pass).toBe(true);
    expect(t["p99-newconn-1000"].pass).toBe(true); // 1.2 ms
    expect(t["cpu-vs-exec-script"].pass).toBe(true); // 400×
    expect(t["rss"].pass).toBe(true);
    expect(t["rss-growth"].pass).toBe(true);
    // Each runtime gets its own RSS target; 70.5 MiB on Node 24 misses 64.
    expect(t["rss:probegate@node24"].pass).toBe(false);
    expect(t["rss:probegate@node24"].what).toContain("Node 24.21.0");
    expect(t["rss-growth:probegate@node24"].pass).toBe(true);
    expect(t["plugin-16"].pass).toBeNull();
  });

  it("reports RSS with Kubernetes reporting on per runtime, beside the 64 MiB target and not held to it", () => {
    const r = sample();
    expect(Object.fromEntries(evaluateTargets(r).map((x) => [x.id, x]))["rss-kubernetes"].measured).toMatch(/^n\/a/);
    const k = (id: string, node: string, peak: number, notes: string[] = []): ServerResult => ({
      ...server("probegate", 30000, 50, 400), id, node, notes, newconn: [],
      memory: { rssStartMiB: peak - 10, rss100kMiB: peak, rss200kMiB: peak - 1, growthPct: -1, probesPerPhase: 100_000 },
    });
    r.servers.push(k("probegate+kubernetes", "v20.19.0", 117), k("probegate+kubernetes@node24", "v24.21.0", 139, ["the reporter wrote no Node condition in this run: its figure is not the reporting one"]));
    const t = Object.fromEntries(evaluateTargets(r).map((x) => [x.id, x]));
    expect(t["rss-kubernetes"]).toMatchObject({ measured: "117.0 MiB (107.0 / 117.0 / 116.0)", pass: null });
    expect(t["rss-kubernetes:node24"].what).toContain("Node 24.21.0");
    expect(t["rss-kubernetes:node24"].what).toContain("wrote no Node condition");
    // The reporting figures are not the reporting-off targets.
    expect(t["rss"].pass).toBe(true);
    expect(Object.keys(t).filter((id) => id.startsWith("rss:"))).toEqual(["rss:probegate@node24"]);
  });

  it("holds probegate to 0.9× raw node:http2 throughput and 1.1× its CPU per Probe", () => {
    const r = sample();
    const raw = r.servers.find((s) => s.id === "node-http2-raw")!;
    raw.throughput!.h2.reqPerSec = 34000; // 30000/34000 = 0.88
    raw.singleClient!.cpuPerReqUs = 45; // 50/45 = 1.11
    const t = Object.fromEntries(evaluateTargets(r).map((x) => [x.id, x]));
    expect(t["throughput-vs-raw-http2"].pass).toBe(false);
    expect(t["cpu-per-probe-vs-raw-http2"].pass).toBe(false);
  });

  it("marks targets it cannot measure as n/a, not pass", () => {
    const r = sample();
    r.servers = r.servers.filter((s) => !s.id.startsWith("probegate"));
    const t = evaluateTargets(r);
    expect(t.every((x) => x.pass === null)).toBe(true);
  });

  it("renders aligned Markdown tables with every target", () => {
    const text = renderReport(sample());
    expect(text).toContain("## Targets");
    expect(text).toMatch(/\| PASS +\|/);
    const table = mdTable(["a", "bb"], [[1, "x"], ["long cell", 2]]);
    const widths = new Set(table.split("\n").map((l) => l.length));
    expect(widths.size).toBe(1);
  });

  it("writes a well-formed SVG with one panel per rate and escaped labels", () => {
    const svg = renderSvg(sample());
    expect(svg.startsWith("<svg xmlns=\"http://www.w3.org/2000/svg\"")).toBe(true);
    expect(svg.trim().endsWith("</svg>")).toBe(true);
    expect(svg.match(/<g class="panel"/g)?.length).toBe(2);
    expect(svg).toContain("raw &lt;node:http2&gt; &amp; co");
    expect(svg).not.toMatch(/NaN|undefined|Infinity/);
    // every element opened is closed (self-closing or paired)
    const opens = (svg.match(/<(g|svg|text)[\s>]/g) ?? []).length;
    const closes = (svg.match(/<\/(g|svg|text)>/g) ?? []).length;
    expect(opens).toBe(closes);
  });
});

describe("node cost (issue #32)", () => {
  const w = (selfMsPerMin: number, childrenMsPerMin: number, main: number) => ({
    seconds: 60, mainWakeupsPerSec: main, allWakeupsPerSec: main * 2, threads: 12, selfMsPerMin, childrenMsPerMin,
  });
  const withCost = (idleMain: number, idleCpu: number, roundsSelf: number): BenchResult => {
    const r = sample();
    r.nodeCost = {
      cadenceSec: 10,
      runs: [{ runtime: "v20.20.2", idle: w(idleCpu, 0, idleMain), rounds: w(roundsSelf, 24, 6), roundGatewayMs: (roundsSelf - idleCpu) / 6, roundCommandsMs: 4, rssIdleMiB: 70, errors: [] }],
      exec: { cpuPerRunMs: 20, msPerMin: 120, runs: 60, failures: 0 },
      livenessprobe: { note: "not measured: no binary" },
    };
    r.targets = evaluateTargets(r);
    return r;
  };

  it("holds the idle gateway, one round and the per-minute cost to their limits, the script measured in the same run", () => {
    const met = Object.fromEntries(withCost(2, 10, 34).targets.map((x) => [x.id, x]));
    expect(met["idle-wakeups"].pass).toBe(true);
    expect(met["idle-cpu"].pass).toBe(true);
    expect(met["round-cpu"].pass).toBe(true); // (34 − 10) / 6 = 4 ms
    expect(met["node-cost-vs-exec-script"].measured).toContain("0.48×"); // (34 + 24) / 120
    expect(met["node-cost-vs-exec-script"].pass).toBe(true);
    const t = Object.fromEntries(withCost(6, 21, 70).targets.map((x) => [x.id, x]));
    expect(t["idle-wakeups"].pass).toBe(false);
    expect(t["idle-cpu"].pass).toBe(false);
    expect(t["round-cpu"].pass).toBe(false);
    expect(t["node-cost-vs-exec-script"].measured).toContain("0.78×");
    expect(t["node-cost-vs-exec-script"].pass).toBe(false);
  });

  it("compares Node 24's RSS with Node 20's from the same run's memory rows", () => {
    const t = Object.fromEntries(sample().targets.map((x) => [x.id, x]));
    // 60 vs 40 after start, 70.5 vs 51 under load: both far above 1.1×.
    expect(t["node24-rss-start"].measured).toContain("1.50×");
    expect(t["node24-rss-start"].pass).toBe(false);
    expect(t["node24-rss-load"].pass).toBe(false);
  });

  it("renders the per-node table first, with the script and the livenessprobe row", () => {
    const md = renderReport(withCost(2, 10, 34));
    const i = md.indexOf("## 0. Cost of one node per minute");
    expect(i).toBeGreaterThan(0);
    expect(i).toBeLessThan(md.indexOf("## 1."));
    expect(md).toContain("exec readiness script every 10 s (60 runs, 0 failed)");
    expect(md).toContain("CSI livenessprobe (Go)");
    expect(md).toContain("livenessprobe: not measured: no binary");
  });
});

describe("node cost per fake node (issue #43)", () => {
  const w = (selfMsPerMin: number, childrenMsPerMin: number) => ({ seconds: 120, mainWakeupsPerSec: 2, allWakeupsPerSec: 5, threads: 12, selfMsPerMin, childrenMsPerMin });
  it("holds each node's round and per-minute cost to the limits against the one script row, and lists the commands a minute", () => {
    const r = sample();
    r.nodeCost = {
      cadenceSec: 10,
      runs: [
        { runtime: "v20.20.2", node: "lnet", idle: w(10, 0), rounds: w(30, 20), roundGatewayMs: 20 / 6, roundCommandsMs: 20 / 6, commandsPerMin: { net_show_health: 6, list_nids: 6, ping: 6 }, errors: [] },
        { runtime: "v20.20.2", node: "lustre-8", rounds: w(70, 40), roundGatewayMs: 10, roundCommandsMs: 40 / 6, commandsPerMin: { import_states: 2, net_show_health: 6 }, errors: [] },
      ],
      exec: { cpuPerRunMs: 25, msPerMin: 150, runs: 60, failures: 0 },
      livenessprobe: { note: "not measured: no binary" },
    };
    r.targets = evaluateTargets(r);
    const t = Object.fromEntries(r.targets.map((x) => [x.id, x]));
    expect(t["node-cost-vs-exec-script"]).toMatchObject({ pass: true });
    expect(t["node-cost-vs-exec-script"].measured).toContain("0.33×"); // (30 + 20) / 150
    expect(t["round-cpu"].pass).toBe(true);
    expect(t["node-cost-vs-exec-script-lustre-8"].measured).toContain("0.73×"); // (70 + 40) / 150
    expect(t["node-cost-vs-exec-script-lustre-8"].pass).toBe(false);
    expect(t["round-cpu-lustre-8"].pass).toBe(false);
    const md = renderReport(r);
    expect(md).toContain("Lustre client, 8 volumes");
    expect(md).toContain("list_nids 6.0, net_show_health 6.0, ping 6.0");
    expect(md).toContain("net_show_health 6.0, import_states 2.0");
  });
});

describe("h2load output", () => {
  it("parses the summary and bash times", () => {
    const out = `finished in 1.23s, 16260.16 req/s, 381.10KB/s
requests: 20000 total, 20000 started, 20000 done, 19990 succeeded, 10 failed, 0 errored, 0 timeout
status codes: 19990 2xx, 0 3xx, 0 4xx, 10 5xx
time for request:      123us      4.56ms       456us       234us    89.12%
`;
    const r = parseH2load(out);
    expect(r.reqPerSec).toBe(16260.16);
    expect(r.failed).toBe(10);
    expect(r.status2xx).toBe(19990);
    expect(r.reqTimeUs.max).toBeCloseTo(4560);
    expect(parseBashTimes("0m0.001s 0m0.002s\n0m1.200s 0m0.300s\n")).toBeCloseTo(1.5);
  });
});

describe("synthetic LNet inputs", () => {
  it("net show has N non-loopback NIs plus 0@lo", () => {
    const y = netShow(40);
    expect(y.match(/- nid: /g)?.length).toBe(41);
    expect(y).toContain("- nid: 0@lo");
    expect(y).toContain("net type: tcp2");
  });
  it("plugin input carries only the listed sources", () => {
    const j = JSON.parse(pluginInput(16, ["lnetctl.net_show"]));
    expect(Object.keys(j.sources)).toEqual(["lnetctl.net_show"]);
    expect(j.facts["lnet.selfNid"]).toMatch(/@tcp$/);
  });
});
