// Plain-text (Markdown) tables of one run.
import type { FootprintPoint, FootprintRun } from "../footprint.js";
import type { BenchResult } from "./types.js";
import { COST_NODES } from "../node-cost.js";

export function mdTable(head: string[], rows: (string | number)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(3, ...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => "| " + r.map((c, i) => c.padEnd(w[i])).join(" | ") + " |";
  return [line(cells[0]), "| " + w.map((n) => "-".repeat(n)).join(" | ") + " |", ...cells.slice(1).map(line)].join("\n");
}

const n = (x: number | undefined, d = 0) => (x === undefined || !Number.isFinite(x) ? "n/a" : x.toFixed(d));
const ms = (us: number | undefined) => n(us === undefined ? undefined : us / 1000, 3);

export function renderReport(r: BenchResult): string {
  const out: string[] = [];
  const m = r.meta;
  out.push(
    `# probegate bench — ${m.startedAt}${m.quick ? " (quick)" : ""}`,
    `node ${m.node}, ${m.cpus} CPUs (${m.cpuModel}), ${m.h2load || "h2load absent"}; sections: ${m.sections.join(", ")}`,
    m.pinned ? `pinned: server on CPU ${m.pinned.server}, load on CPU ${m.pinned.load}` : "not pinned (use --pin for the reference method)",
    m.loadavg ? `load average at start: ${m.loadavg.map((x) => x.toFixed(2)).join(" ")}${m.loadavg[0] > 0.5 ? " (the machine was busy: CPU figures are noisy)" : ""}` : "",
    "",
  );
  if (r.nodeCost) out.push(...renderNodeCost(r.nodeCost));
  const avail = r.servers.filter((s) => s.available);
  for (const s of r.servers.filter((x) => !x.available)) out.push(`! ${s.label}: not measured — ${s.error ?? "unavailable"}`);

  const nc = avail.flatMap((s) => s.newconn.map((x) => ({ s, x })));
  if (nc.length) {
    out.push("", "## 1. New connection per probe (livenessprobe pattern, unix socket, open loop)", "");
    out.push(
      mdTable(
        ["server", "rate/s", "pollers", "probes", "errors", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "server CPU/probe µs", "client lag p99 ms"],
        nc.map(({ s, x }) => [
          s.label, x.rate, x.pollers, x.result.sent, x.result.errors,
          ms(x.result.latency.p50), ms(x.result.latency.p90), ms(x.result.latency.p99), ms(x.result.latency.p999), ms(x.result.latency.max),
          n(x.serverCpuPerProbeUs, 1), ms(x.result.clientLag.p99),
        ]),
      ),
    );
  }
  const tp = avail.filter((s) => s.throughput || s.singleClient);
  if (tp.length) {
    out.push("", "## 2. Persistent connection, gRPC Probe over TCP h2c (h2load)", "");
    const base = r.servers.find((s) => s.id === "grpc-js")?.throughput?.h2.reqPerSec;
    out.push(
      mdTable(
        ["server", "req/s (c8 m4)", "× grpc-js", "errors", "mean ms", "server cores", "server CPU/req µs", "h2load CPU s", "CPU/Probe µs (c1 m1)", "req/s (c1 m1)"],
        tp.map((s) => [
          s.label, n(s.throughput?.h2.reqPerSec), base ? n((s.throughput?.h2.reqPerSec ?? NaN) / base, 2) : "n/a",
          n((s.throughput?.h2.failed ?? 0) + (s.throughput?.h2.errored ?? 0) + (s.throughput?.h2.timeout ?? 0)),
          ms(s.throughput?.h2.reqTimeUs.mean), n(s.throughput?.serverCores, 2), n(s.throughput?.cpuPerReqUs, 1),
          n(s.throughput?.h2.clientCpuSec, 2), n(s.singleClient?.cpuPerReqUs, 1), n(s.singleClient?.h2.reqPerSec),
        ]),
      ),
    );
  }
  const http = avail.flatMap((s) => s.http.map((x) => ({ s, x })));
  if (http.length) {
    out.push("", "## 3. HTTP/1.1 keep-alive paths (h2load --h1 -c 8)", "");
    out.push(
      mdTable(
        ["server", "path", "req/s", "errors", "non-2xx", "mean ms", "server CPU/req µs"],
        http.map(({ s, x }) => [
          s.label, x.name, n(x.h2.reqPerSec), n(x.h2.failed + x.h2.errored + x.h2.timeout), n(x.h2.total - x.h2.status2xx),
          ms(x.h2.reqTimeUs.mean), n(x.cpuPerReqUs, 1),
        ]),
      ),
    );
  }
  if (r.exec.length) {
    out.push("", "## 4c. Exec-style readiness script (per invocation, sequential)", "");
    out.push(
      mdTable(
        ["fake lnetctl", "runs", "failures", "wall p50 ms", "wall p99 ms", "CPU/run µs (incl. children)"],
        r.exec.map((e) => [e.label, e.result.wall.count, e.result.failures, ms(e.result.wall.p50), ms(e.result.wall.p99), n(e.result.cpuPerRunUs, 0)]),
      ),
    );
  }
  if (r.plugins) {
    out.push("", "## 5. Plugin cost (check() per call, median, µs; in-process via @assemblyscript/loader)", "");
    const sizes = r.plugins.params.sizes;
    if (r.plugins.plugins.length === 0) out.push(`no plugins in ${r.plugins.params.pluginsDir}`);
    else
      out.push(
        mdTable(
          ["plugin", ...sizes.map((x) => `${x} NIs`), "t1024/t256", "result @16"],
          r.plugins.plugins.map((p) => [
            p.name,
            ...sizes.map((x) => n(p.points.find((q) => q.nis === x)?.medianUs, 2)),
            n(p.growth1024over256, 2),
            p.error ? `error: ${p.error}` : `${p.points.find((q) => q.nis === 16)?.status} ${p.points.find((q) => q.nis === 16)?.reason}`,
          ]),
        ),
      );
    const rt = r.plugins.runtime;
    if (rt.sandboxCall?.length)
      out.push("", "Through probegate's runtime at 16 NIs (median µs): sandbox call = loaded plugin, one check() via the worker; runPluginOnce = load + call + teardown.", "",
        mdTable(["plugin", "sandbox call µs", "calls", "runPluginOnce µs"], rt.sandboxCall.map((x) => [x.plugin, n(x.medianUs, 1), x.calls, n(rt.runPluginOnce?.find((y) => y.plugin === x.plugin)?.medianUs, 0)])));
    if (rt.engine?.length)
      out.push("", mdTable(["plugins scheduled", "engine round median µs (sources in memory)", "rounds"], rt.engine.map((x) => [x.plugins, n(x.roundMedianUs, 1), x.rounds])));
    if (rt.note) out.push("", `runtime: ${rt.note.trim()}`);
  }
  const mem = r.servers.filter((s) => s.memory || s.rssStartMiB !== undefined);
  if (mem.length) {
    const k = (mem.find((s) => s.memory)?.memory?.probesPerPhase ?? 100_000) / 1000;
    out.push("", "## 6. Memory (RSS, MiB; probes = gRPC Probe on persistent connections, h2load c8 m4)", "");
    out.push(
      mdTable(
        ["server", "after start", `after ${k}k probes`, `after ${2 * k}k probes`, `growth ${k}k→${2 * k}k`],
        mem.map((s) => [s.label, n(s.memory?.rssStartMiB ?? s.rssStartMiB, 1), n(s.memory?.rss100kMiB, 1), n(s.memory?.rss200kMiB, 1), s.memory ? `${n(s.memory.growthPct, 1)}%` : "n/a"]),
      ),
    );
  }
  if (r.profile) {
    out.push("", `## Profile: ${r.profile.target} (${n(r.profile.reqPerSec)} req/s under h2load, ${n(r.profile.totalMs)} ms sampled)`, "");
    out.push(mdTable(["self %", "function", "where"], r.profile.top.slice(0, 20).map((x) => [n(x.selfPct, 1), x.fn, x.where])));
    out.push("", mdTable(["package", "self %"], r.profile.byPackage.map((x) => [x.pkg, n(x.selfPct, 1)])));
  }
  for (const f of r.footprint ?? []) out.push("", ...renderFootprint(f));
  for (const s of r.servers) for (const note of s.notes) out.push(`note (${s.label}): ${note}`);
  if (r.targets.length) {
    out.push("", "## Targets", "");
    out.push(
      mdTable(
        ["target", "measured", "limit", "result"],
        r.targets.map((t) => [t.what, t.measured, t.limit, t.pass === null ? "n/a" : t.pass ? "PASS" : "FAIL"]),
      ),
    );
  }
  return out.join("\n") + "\n";
}

/** Section nodecost (issues #32, #43): what one node pays per minute, peers side by side. */
export function renderNodeCost(c: NonNullable<BenchResult["nodeCost"]>): string[] {
  const out = [
    "",
    `## 0. Cost of one node per minute (checks every ${c.cadenceSec} s, storage health on, no client; CPU ms per minute of the gateway, its command spawner and the commands they start)`,
    "",
  ];
  const rows: (string | number)[][] = [];
  const script = c.exec?.msPerMin;
  const vsScript = (total: number) => (script ? `${n(total / script, 2)}×` : "n/a");
  for (const r of c.runs) {
    const label = `probegate (Node ${r.runtime.replace(/^v/, "")})${r.node ? `, ${nodeLabel(r.node)}` : ""}`;
    if (r.rounds) {
      const total = r.rounds.selfMsPerMin + r.rounds.childrenMsPerMin;
      rows.push([`${label}, checks every ${c.cadenceSec} s`, n(r.rounds.selfMsPerMin, 1), n(r.rounds.childrenMsPerMin, 1), n(total, 1), vsScript(total), n(r.rounds.mainWakeupsPerSec, 1), n(r.rounds.allWakeupsPerSec, 1)]);
    }
    if (r.idle) rows.push([`${label}, between rounds (no check due)`, n(r.idle.selfMsPerMin, 1), n(r.idle.childrenMsPerMin, 1), n(r.idle.selfMsPerMin + r.idle.childrenMsPerMin, 1), "–", n(r.idle.mainWakeupsPerSec, 1), n(r.idle.allWakeupsPerSec, 1)]);
  }
  if (c.exec) rows.push([`exec readiness script every ${c.cadenceSec} s (${c.exec.runs} runs, ${c.exec.failures} failed)`, "–", n(c.exec.msPerMin, 1), n(c.exec.msPerMin, 1), "1.00×", "–", "–"]);
  const lp = c.livenessprobe;
  if (lp && "idle" in lp) {
    rows.push([`CSI livenessprobe, probed every ${c.cadenceSec} s`, n(lp.probed.selfMsPerMin, 1), "0", n(lp.probed.selfMsPerMin, 1), vsScript(lp.probed.selfMsPerMin), n(lp.probed.mainWakeupsPerSec, 1), n(lp.probed.allWakeupsPerSec, 1)]);
    rows.push(["CSI livenessprobe, idle", n(lp.idle.selfMsPerMin, 1), "0", n(lp.idle.selfMsPerMin, 1), "–", n(lp.idle.mainWakeupsPerSec, 1), n(lp.idle.allWakeupsPerSec, 1)]);
  } else rows.push(["CSI livenessprobe (Go)", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"]);
  out.push(mdTable(["what", "gateway + spawner CPU", "commands' CPU", "total", "× exec script", "main-thread wake-ups/s", "all threads' wake-ups/s"], rows));
  const per = c.runs.filter((r) => r.roundGatewayMs !== undefined || r.commandsPerMin);
  if (per.length) {
    out.push(
      "",
      mdTable(
        ["runtime", "node", "one round: gateway + spawner CPU ms", "one round: commands' CPU ms", "RSS MiB (gateway + spawner, between rounds / in rounds)", "threads", "commands a minute"],
        per.map((r) => [
          r.runtime,
          r.node ? nodeLabel(r.node) : "LNet",
          n(r.roundGatewayMs, 2),
          n(r.roundCommandsMs, 2),
          `${n(r.rssIdleMiB, 1)} / ${n(r.rssRoundsMiB, 1)}`,
          r.idle?.threads ?? r.rounds?.threads ?? "n/a",
          commandsText(r.commandsPerMin),
        ]),
      ),
    );
  }
  if (lp && "note" in lp) out.push("", `livenessprobe: ${lp.note}`);
  for (const r of c.runs) for (const e of r.errors) out.push(`nodecost error (Node ${r.runtime}${r.node ? `, ${r.node}` : ""}): ${e}`);
  return out;
}

function nodeLabel(id: string): string {
  return COST_NODES.find((x) => x.id === id)?.label ?? id;
}

/** `net_show_health 6, list_nids 6, …` (per minute, by the fake tools' keys; statfs probes are not logged). */
function commandsText(m: Record<string, number> | undefined): string {
  if (!m) return "n/a";
  const e = Object.entries(m).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return e.length ? e.map(([k, v]) => `${k} ${n(v, 1)}`).join(", ") : "none";
}

/** Where one runtime's RSS goes (section footprint). */
export function renderFootprint(f: FootprintRun): string[] {
  const out = [`## 7. Footprint on Node ${f.version.replace(/^v/, "")} (MiB)`, ""];
  const cols: [string, FootprintPoint | undefined][] = [
    ["bare node", f.bare],
    ["probegate, no plugins", f.noPlugins],
    ["probegate, started", f.started],
    [`probegate, after ${f.afterLoad ? f.afterLoad.probes / 1000 : "?"}k Probes`, f.afterLoad],
  ];
  const sm = (k: keyof FootprintPoint["smaps"]) => cols.map(([, p]) => n(p?.smaps[k], 1));
  out.push(
    mdTable(
      ["RSS by mapping", ...cols.map(([c]) => c)],
      [
        ["VmRSS", ...cols.map(([, p]) => n(p?.rssMiB, 1))],
        ["node binary, code", ...sm("nodeText")],
        ["node binary, data (snapshot, builtins, ICU)", ...sm("nodeData")],
        ["shared libraries", ...sm("libs")],
        ["malloc heap", ...sm("malloc")],
        ["anonymous (V8 heaps of all isolates, code, stacks)", ...sm("anon")],
        ["other", ...sm("other")],
      ],
    ),
  );
  const rep = [f.started.report, f.afterLoad?.report];
  if (rep[0]) {
    const mu = (k: keyof NodeJS.MemoryUsage) => rep.map((x) => n(x ? x.memoryUsage[k] / 1048576 : undefined, 1));
    const spaces = [...new Set(rep.flatMap((x) => x?.spaces.filter((sp) => sp[1] > 0).map((sp) => sp[0]) ?? []))];
    out.push(
      "",
      mdTable(
        ["main isolate (process.memoryUsage, v8 heap spaces: size / used)", "started", "after load"],
        [
          ["heapTotal", ...mu("heapTotal")],
          ["heapUsed", ...mu("heapUsed")],
          ["external", ...mu("external")],
          ["arrayBuffers", ...mu("arrayBuffers")],
          ...spaces.map((sp) => [sp, ...rep.map((x) => {
            const e = x?.spaces.find((y) => y[0] === sp);
            return e ? `${n(e[1], 2)} / ${n(e[2], 2)}` : "n/a";
          })]),
          ["malloced by V8", ...rep.map((x) => n(x ? x.heap.malloced_memory / 1048576 : undefined, 2))],
          ["code + metadata", ...rep.map((x) => n(x ? x.code.code_and_metadata_size / 1048576 : undefined, 2))],
          ["bytecode + metadata", ...rep.map((x) => n(x ? x.code.bytecode_and_metadata_size / 1048576 : undefined, 2))],
          ["script sources kept", ...rep.map((x) => n(x ? x.code.external_script_source_size / 1048576 : undefined, 2))],
        ],
      ),
    );
  }
  out.push(
    "",
    `sandbox worker and plugins (started − no plugins): ${n(f.started.rssMiB - f.noPlugins.rssMiB, 1)} MiB; ` +
      `probegate's main thread beyond bare node (no plugins − bare): ${n(f.noPlugins.rssMiB - f.bare.rssMiB, 1)} MiB` +
      (f.gc ? `; GC during ${f.gc.probes / 1000}k Probes: ${f.gc.scavenges} scavenges, ${f.gc.markCompacts} mark-compacts` : ""),
  );
  if (f.libraries.length)
    out.push(
      "",
      mdTable(
        ["imported alone (fresh node, after GC)", "RSS", "Δ RSS vs empty node", "Δ V8 heap used", "file-backed"],
        f.libraries.map((l) => [l.module, n(l.rssMiB, 1), n(l.deltaRssMiB, 1), n(l.deltaHeapMiB, 1), n(l.fileMiB, 1)]),
      ),
    );
  for (const e of f.errors) out.push(`footprint error: ${e}`);
  return out;
}
