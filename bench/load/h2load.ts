// Runs Debian's h2load (nghttp2-client) and parses its summary. HTTP/2 over
// cleartext with prior knowledge for http:// URLs; --h1 for HTTP/1.1 keep-alive.
import { spawn, spawnSync } from "node:child_process";
import { currentPinning } from "../lib/pin.js";

export function h2loadAvailable(): boolean {
  return spawnSync("h2load", ["--version"], { stdio: "ignore" }).status === 0;
}

export function h2loadVersion(): string {
  const r = spawnSync("h2load", ["--version"], { encoding: "utf8" });
  return (r.stdout ?? "").trim().split("\n")[0] ?? "";
}

export interface H2loadParams {
  url: string;
  clients: number;
  streams: number;
  requests: number;
  h1?: boolean;
  headers?: string[];
  /** File whose contents are POSTed as the body (makes it a POST). */
  dataFile?: string;
  threads?: number;
}

export interface H2loadResult {
  args: string[];
  finishedSec: number;
  reqPerSec: number;
  total: number;
  succeeded: number;
  failed: number;
  errored: number;
  timeout: number;
  status2xx: number;
  /** time for request: min/max/mean/sd, microseconds */
  reqTimeUs: { min: number; max: number; mean: number; sd: number };
  /** CPU of h2load itself (user+sys, seconds; bash `times`, 10 ms resolution). */
  clientCpuSec: number;
  raw: string;
}

function toUs(v: string): number {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n : m[2] === "ms" ? n * 1000 : n * 1e6;
}

export function parseH2load(out: string): Omit<H2loadResult, "args" | "clientCpuSec" | "raw"> {
  const fin = /finished in ([\d.]+)(ms|s), ([\d.]+) req\/s/.exec(out);
  const reqs = /requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout/.exec(out);
  const codes = /status codes: (\d+) 2xx/.exec(out);
  const rt = /time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)/.exec(out);
  if (!fin || !reqs) throw new Error(`cannot parse h2load output:\n${out.slice(0, 2000)}`);
  return {
    finishedSec: Number(fin[1]) / (fin[2] === "ms" ? 1000 : 1),
    reqPerSec: Number(fin[3]),
    total: Number(reqs[1]),
    succeeded: Number(reqs[4]),
    failed: Number(reqs[5]),
    errored: Number(reqs[6]),
    timeout: Number(reqs[7]),
    status2xx: codes ? Number(codes[1]) : NaN,
    reqTimeUs: rt
      ? { min: toUs(rt[1]), max: toUs(rt[2]), mean: toUs(rt[3]), sd: toUs(rt[4]) }
      : { min: NaN, max: NaN, mean: NaN, sd: NaN },
  };
}

/** Parses the children line of bash's `times` ("0m1.230s 0m0.450s"). */
export function parseBashTimes(out: string): number {
  const lines = out.trim().split("\n").filter((l) => /^\d+m[\d.]+s \d+m[\d.]+s$/.test(l.trim()));
  const last = lines[lines.length - 1];
  if (!last) return NaN;
  const secs = last
    .trim()
    .split(" ")
    .map((t) => {
      const m = /^(\d+)m([\d.]+)s$/.exec(t)!;
      return Number(m[1]) * 60 + Number(m[2]);
    });
  return secs[0] + secs[1];
}

export function h2loadArgs(p: H2loadParams): string[] {
  const a = ["-c", String(p.clients), "-m", String(p.streams), "-n", String(p.requests), "-t", String(p.threads ?? 1)];
  if (p.h1) a.push("--h1");
  for (const h of p.headers ?? []) a.push("-H", h);
  if (p.dataFile) a.push("-d", p.dataFile);
  a.push(p.url);
  return a;
}

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function runH2load(p: H2loadParams): Promise<H2loadResult> {
  const args = h2loadArgs(p);
  // bash `times` reports h2load's CPU (children of the shell) after it exits.
  const pin = currentPinning();
  const h2load = pin ? `taskset -c ${shq(pin.load)} h2load` : "h2load";
  const script = `${h2load} ${args.map(shq).join(" ")}; rc=$?; echo '---times---'; times; exit $rc`;
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    child.on("error", reject);
    child.on("close", (code) => {
      const [main, times = ""] = out.split("---times---");
      try {
        resolve({ ...parseH2load(main), args, clientCpuSec: parseBashTimes(times), raw: main });
      } catch (e) {
        reject(new Error(`h2load exited ${code}: ${(e as Error).message}\n${err}`));
      }
    });
  });
}
