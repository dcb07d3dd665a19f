// Plugin cost: each bundled plugin's check() on inputs with 1, 16, 256 and 1,024
// NIs, called in-process through @assemblyscript/loader (the raw per-call cost:
// median of batches), and, when the runtime exports them, through
// probegate's runtime (runtime-cost.ts). Runs as its own process.
import fs from "node:fs";
import path from "node:path";
import * as loader from "@assemblyscript/loader";
import { pluginInput } from "../lib/lnet-inputs.js";
import { runAsChild } from "../lib/main.js";
import { type RuntimeCost, measureRuntime } from "./runtime-cost.js";

export interface PluginCostParams {
  pluginsDir: string;
  sizes: number[];
  /** Target measuring time per (plugin, size), ms. */
  budgetMs: number;
  engineCounts: number[];
}

export interface PluginPoint {
  nis: number;
  inputBytes: number;
  medianUs: number;
  p90Us: number;
  calls: number;
  status: string;
  reason: string;
}

export interface PluginCost {
  file: string;
  name: string;
  sources: string[];
  points: PluginPoint[];
  /** t(1024)/t(256): ~4 when linear, ~16 when quadratic. */
  growth1024over256: number;
  error?: string;
}

export interface PluginCostResult {
  params: PluginCostParams;
  plugins: PluginCost[];
  runtime: RuntimeCost;
}

const imports = {
  env: {
    abort: () => {
      throw new Error("plugin aborted");
    },
    trace: () => {},
    seed: () => 42,
  },
};

type AsExports = Record<string, unknown> & {
  manifest(): number;
  check(p: number): number;
  __newString(s: string): number;
  __getString(p: number): string;
  __new(size: number, id: number): number;
  memory: { buffer: ArrayBuffer };
  __pin(p: number): number;
  __unpin(p: number): void;
  __collect?(): void;
};

function median(a: number[]): number {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
}

async function measurePlugin(file: string, p: PluginCostParams): Promise<PluginCost> {
  const bytes = fs.readFileSync(file);
  const { exports } = await loader.instantiate<AsExports>(bytes, imports);
  const ex = exports as unknown as AsExports;
  const manifest = JSON.parse(ex.__getString(ex.manifest()));
  const sources: string[] = manifest.sources ?? [];
  const mode = (manifest.modes ?? ["node"])[0];
  const points: PluginPoint[] = [];
  const call = (ptr: number) => ex.__getString(ex.check(ptr));
  for (const n of p.sizes) {
    const input = pluginInput(n, sources, mode);
    // The host writes the input string once per call, as the runtime's
    // sandbox does: a native UTF-16LE copy into an AssemblyScript string
    // (class id 2), not the loader's per-character __newString.
    const once = () => {
      const at = ex.__new(input.length << 1, 2) >>> 0;
      Buffer.from(ex.memory.buffer, at, input.length << 1).write(input, "utf16le");
      const ptr = ex.__pin(at);
      try {
        return call(ptr);
      } finally {
        ex.__unpin(ptr);
      }
    };
    const out = JSON.parse(once());
    // calibrate a batch of ~2 ms
    let batch = 1;
    for (;;) {
      const t = performance.now();
      for (let i = 0; i < batch; i++) once();
      if (performance.now() - t > 2 || batch >= 1 << 16) break;
      batch *= 2;
    }
    const perCall: number[] = [];
    const deadline = performance.now() + p.budgetMs;
    let calls = 0;
    while (performance.now() < deadline || perCall.length < 7) {
      const t = performance.now();
      for (let i = 0; i < batch; i++) once();
      perCall.push(((performance.now() - t) * 1000) / batch);
      calls += batch;
    }
    perCall.sort((x, y) => x - y);
    points.push({
      nis: n,
      inputBytes: Buffer.byteLength(input),
      medianUs: round(median(perCall)),
      p90Us: round(perCall[Math.floor(perCall.length * 0.9)]),
      calls,
      status: String(out.status),
      reason: String(out.reason ?? ""),
    });
  }
  const at = (n: number) => points.find((x) => x.nis === n)?.medianUs ?? NaN;
  return {
    file: path.basename(file),
    name: manifest.name,
    sources,
    points,
    growth1024over256: round(at(1024) / at(256)),
  };
}

const round = (x: number) => Math.round(x * 100) / 100;

export async function runPluginCost(p: PluginCostParams): Promise<PluginCostResult> {
  const files = fs.existsSync(p.pluginsDir)
    ? fs.readdirSync(p.pluginsDir).filter((f) => f.endsWith(".wasm")).sort().map((f) => path.join(p.pluginsDir, f))
    : [];
  const plugins: PluginCost[] = [];
  for (const f of files) {
    try {
      plugins.push(await measurePlugin(f, p));
    } catch (e) {
      plugins.push({ file: path.basename(f), name: path.basename(f, ".wasm"), sources: [], points: [], growth1024over256: NaN, error: (e as Error).message });
    }
  }
  return { params: p, plugins, runtime: await measureRuntime(files, p.budgetMs, p.engineCounts) };
}

runAsChild(import.meta.url, runPluginCost);
