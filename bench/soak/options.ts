// `npm run soak -- [flags]`: the knobs of one soak run, with the defaults the
// README's figures were produced with.
import { parseDuration } from "../../gateway/src/engine/sources/index.js";

export interface SoakOptions {
  durationMs: number;
  seed: number;
  outDir: string;
  /** File name stem: <name>-<timestamp>.* and <name>-latest.* */
  name: string;
  checkIntervalMs: number;
  /** Scheduling slack added to every readiness bound (a shared 2-core machine). */
  graceMs: number;
  /** Allowance past a request's deadline before it counts as late. */
  slackMs: number;
  /** Multiplies every steady traffic rate. */
  rate: number;
  burstEveryMs: number;
  burstMs: number;
  /** Connection floods (issue 22: idle, PINGing, malformed-frame, header-trickle connections) on the node-mode gateway. */
  floodEveryMs: number;
  floodMs: number;
  faultDwellMs: [number, number];
  churnEveryMs: [number, number];
  upstreamUpMs: [number, number];
  upstreamDownMs: [number, number];
  fuzz: boolean;
  /** Node reporting to the fake Kubernetes API server, with its faults. */
  kube: boolean;
  /** The gateway-mode process runs with --unstick=unmount (the stuck-unmount fault's oracle follows). */
  unstick: boolean;
  /** Pause between two stuck-unmount episodes. */
  stuckEveryMs: number;
  sampleEveryMs: number;
  windowMs: number;
  /** Fitted slopes must stay under these (per hour). */
  rssSlopeMiBPerHour: number;
  fdSlopePerHour: number;
}

export const USAGE = `npm run soak -- [--duration 10m] [--seed N] [--out DIR] [--name soak] [--check-interval 2s]
  [--grace 5s] [--slack 1s] [--rate 1] [--burst-every 3m] [--burst-length 8s]
  [--flood-every 4m] [--flood-length 8s] [--fault-dwell 15s-40s]
  [--churn-every 4s-10s] [--upstream-up 20s-60s] [--upstream-down 2s-10s] [--fuzz on|off] [--kube on|off]
  [--unstick on|off] [--stuck-every 30s]
  [--sample-every 2s] [--window 30s] [--rss-slope 10] [--fd-slope 10]
Starts two probegate processes (node mode, and gateway mode in front of a fake driver), drives them with
probe traffic, faults and the edge fuzzer for --duration, then writes <out>/<name>-<time>.{json,md,svg} and
<name>-latest.*. Exit code 0: no invariant violated; 1: violations (listed in the report); 2: bad flags.`;

export function defaults(root: string): SoakOptions {
  return {
    durationMs: 10 * 60_000,
    seed: 14,
    outDir: `${root}/bench/results`,
    name: "soak",
    checkIntervalMs: 2_000,
    graceMs: 5_000,
    slackMs: 1_000,
    rate: 1,
    burstEveryMs: 3 * 60_000,
    burstMs: 8_000,
    floodEveryMs: 4 * 60_000,
    floodMs: 8_000,
    faultDwellMs: [15_000, 40_000],
    churnEveryMs: [4_000, 10_000],
    upstreamUpMs: [20_000, 60_000],
    upstreamDownMs: [2_000, 10_000],
    fuzz: true,
    kube: true,
    unstick: true,
    stuckEveryMs: 30_000,
    sampleEveryMs: 2_000,
    windowMs: 30_000,
    rssSlopeMiBPerHour: 10,
    fdSlopePerHour: 10,
  };
}

function dur(flag: string, v: string): number {
  const ms = parseDuration(v);
  if (ms === null || ms <= 0) throw new Error(`${flag}: not a duration: ${JSON.stringify(v)} (write 500ms, 10s, 10m, 1h)`);
  return ms;
}

function range(flag: string, v: string): [number, number] {
  const [a, b = a] = v.split("-");
  const r: [number, number] = [dur(flag, a), dur(flag, b)];
  if (r[1] < r[0]) throw new Error(`${flag}: ${v} ends before it starts`);
  return r;
}

function num(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag}: not a positive number: ${JSON.stringify(v)}`);
  return n;
}

export function parseOptions(argv: string[], root: string): SoakOptions | "help" {
  const o = defaults(root);
  for (let i = 0; i < argv.length; i++) {
    let [flag, value] = argv[i].split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag === "--help" || flag === "-h") return "help";
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new Error(`${flag}: needs a value`);
    }
    switch (flag) {
      case "--duration": o.durationMs = dur(flag, value); break;
      case "--seed": o.seed = Math.floor(num(flag, value)); break;
      case "--out": o.outDir = value; break;
      case "--name": if (!/^[A-Za-z0-9._-]+$/.test(value)) throw new Error(`--name: letters, digits, . _ - only`); o.name = value; break;
      case "--check-interval": o.checkIntervalMs = dur(flag, value); break;
      case "--grace": o.graceMs = dur(flag, value); break;
      case "--slack": o.slackMs = dur(flag, value); break;
      case "--rate": o.rate = num(flag, value); break;
      case "--burst-every": o.burstEveryMs = dur(flag, value); break;
      case "--burst-length": o.burstMs = dur(flag, value); break;
      case "--flood-every": o.floodEveryMs = dur(flag, value); break;
      case "--flood-length": o.floodMs = dur(flag, value); break;
      case "--fault-dwell": o.faultDwellMs = range(flag, value); break;
      case "--churn-every": o.churnEveryMs = range(flag, value); break;
      case "--upstream-up": o.upstreamUpMs = range(flag, value); break;
      case "--upstream-down": o.upstreamDownMs = range(flag, value); break;
      case "--fuzz": if (value !== "on" && value !== "off") throw new Error("--fuzz: on or off"); o.fuzz = value === "on"; break;
      case "--kube": if (value !== "on" && value !== "off") throw new Error("--kube: on or off"); o.kube = value === "on"; break;
      case "--unstick": if (value !== "on" && value !== "off") throw new Error("--unstick: on or off"); o.unstick = value === "on"; break;
      case "--stuck-every": o.stuckEveryMs = dur(flag, value); break;
      case "--sample-every": o.sampleEveryMs = dur(flag, value); break;
      case "--window": o.windowMs = dur(flag, value); break;
      case "--rss-slope": o.rssSlopeMiBPerHour = num(flag, value); break;
      case "--fd-slope": o.fdSlopePerHour = num(flag, value); break;
      default: throw new Error(`unknown flag ${flag} (see --help)`);
    }
  }
  return o;
}
