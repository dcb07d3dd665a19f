// Load generator, kubelet/livenessprobe pattern: every probe is a NEW HTTP/2
// connection (here on the CSI unix socket). Open-loop schedule: `rate` probes/s
// in total from `pollers` pollers, each firing every pollers/rate seconds at
// evenly spread offsets (a poller whose last probe is still running fires when
// it ends, as kubelet's probe workers do). Runs as its own process so the
// server's CPU is measured alone.
//
// Protocol on stdout: "MEASURE" when warm-up ends, "END" when the last measured
// probe completed, then one JSON line (NewConnResult).
import { type Dial, probeNewConnection } from "./probe-client.js";
import { rawProbe } from "./raw-h2-probe.js";
import { type LatencySummary, newHistogram, summarize } from "../lib/hist.js";
import { runAsChild } from "../lib/main.js";

export interface NewConnParams {
  dial: Dial;
  rate: number;
  durationSec: number;
  warmupSec: number;
  pollers: number;
  timeoutMs: number;
  /** "raw": pre-encoded HTTP/2 bytes on a fresh socket (cheap, default); "node": node:http2 per probe. */
  client?: "raw" | "node";
}

export interface NewConnResult {
  params: NewConnParams;
  /** From dial to end of response (what the livenessprobe's own timer sees). */
  latency: LatencySummary;
  /** From the scheduled time (includes any lag of this client; coordinated-omission corrected). */
  latencyFromSchedule: LatencySummary;
  /** How late the client started probes versus schedule (shows whether the client kept up). */
  clientLag: LatencySummary;
  sent: number;
  ok: number;
  notReady: number;
  errors: number;
  errorSamples: string[];
  achievedRate: number;
  clientCpuSec: number;
  measuredWallSec: number;
}

export async function runNewConn(p: NewConnParams, signal: (line: string) => void = () => {}): Promise<NewConnResult> {
  const lat = newHistogram();
  const latSched = newHistogram();
  const lag = newHistogram();
  const errorSamples: string[] = [];
  let sent = 0, ok = 0, notReady = 0, errors = 0;
  const probe = p.client === "node" ? probeNewConnection : rawProbe;
  const interval = 1000 / p.rate;
  const t0 = performance.now() + 20;
  const warmEnd = t0 + p.warmupSec * 1000;
  const end = warmEnd + p.durationSec * 1000;
  const busy = new Uint8Array(p.pollers);
  const pending: (number | undefined)[] = new Array(p.pollers);
  let inFlightMeasured = 0;
  let measuring = false;
  let scheduleDone = false;
  let cpu0 = process.cpuUsage();
  let measureStart = 0;
  let resolveAll!: () => void;
  const allDone = new Promise<void>((r) => (resolveAll = r));

  const fire = (poller: number, due: number) => {
    busy[poller] = 1;
    const start = performance.now();
    const measured = due >= warmEnd;
    if (measured) {
      inFlightMeasured++;
      sent++;
      lag.recordValue(Math.max(1, Math.round((start - due) * 1000)));
    }
    probe(p.dial, p.timeoutMs).then((r) => {
      const now = performance.now();
      busy[poller] = 0;
      if (measured) {
        inFlightMeasured--;
        if (r.ok) {
          ok++;
          if (r.ready === false) notReady++;
          lat.recordValue(Math.max(1, Math.round((now - start) * 1000)));
          latSched.recordValue(Math.max(1, Math.round((now - due) * 1000)));
        } else {
          errors++;
          if (errorSamples.length < 5) errorSamples.push(r.error ?? "error");
        }
      }
      const next = pending[poller];
      if (next !== undefined) {
        pending[poller] = undefined;
        fire(poller, next);
      }
      if (scheduleDone && inFlightMeasured === 0) resolveAll();
    });
  };

  let n = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      for (;;) {
        const due = t0 + n * interval;
        if (due > now) break;
        if (due >= end) return resolve();
        if (!measuring && due >= warmEnd) {
          measuring = true;
          signal("MEASURE");
          cpu0 = process.cpuUsage();
          measureStart = performance.now();
        }
        const poller = n % p.pollers;
        if (busy[poller]) pending[poller] = due;
        else fire(poller, due);
        n++;
      }
      const nextDue = t0 + n * interval;
      if (nextDue >= end) return resolve();
      setTimeout(tick, Math.max(0, nextDue - performance.now() - 0.5));
    };
    setTimeout(tick, Math.max(0, t0 - performance.now()));
  });
  if (!measuring) {
    signal("MEASURE");
    measureStart = performance.now();
  }
  scheduleDone = true;
  if (inFlightMeasured > 0) await allDone;
  const measuredWallSec = (performance.now() - measureStart) / 1000;
  signal("END");
  const cpu = process.cpuUsage(cpu0);
  return {
    params: p,
    latency: summarize(lat),
    latencyFromSchedule: summarize(latSched),
    clientLag: summarize(lag),
    sent,
    ok,
    notReady,
    errors,
    errorSamples,
    achievedRate: sent / p.durationSec,
    clientCpuSec: (cpu.user + cpu.system) / 1e6,
    measuredWallSec,
  };
}

runAsChild(import.meta.url, (params: NewConnParams) => runNewConn(params, (l) => process.stdout.write(l + "\n")));
