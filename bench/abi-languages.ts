// net-interfaces in AssemblyScript (ABI v1), Rust and C (ABI v2): module size
// and cost per check, measured side by side in one run (peers in the same
// process, interleaved, so a loaded machine slows all three alike).
//
//   npm run ts:build && node dist/bench/abi-languages.js [--budget-ms 300]
//
// raw:     check() called in-process the way the sandbox worker calls it
//          (v1: __new + a UTF-16LE copy + check + read + __collect; v2:
//          pg_alloc + a UTF-8 copy + pg_check + read + pg_reset), median CPU
//          µs per call over batches;
// runtime: Sandbox + loadPlugin + callCheck (worker round trip and output
//          validation), median wall µs per call.
// Inputs: `sys.net.operstate` with 1, 16, 256 and 1,024 interfaces, all up
// (bench/lib/lnet-inputs.ts).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { callCheck } from "../gateway/src/runtime/check-call.js";
import { loadPlugin } from "../gateway/src/runtime/loader.js";
import { Sandbox } from "../gateway/src/runtime/sandbox.js";
import { pluginInput } from "./lib/lnet-inputs.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const BUILDS = [
  ["assemblyscript", path.join(ROOT, "dist", "plugins", "net-interfaces.wasm")],
  ["rust", path.join(ROOT, "plugins", "examples", "net-interfaces-rust", "net-interfaces-rust.wasm")],
  ["c", path.join(ROOT, "plugins", "examples", "net-interfaces-c", "net-interfaces-c.wasm")],
] as const;
const SIZES = [1, 16, 256, 1024];
const SOURCES = ["sys.net.operstate"];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Exports = any;
const WA = (globalThis as unknown as { WebAssembly: { Module: new (b: Uint8Array) => unknown; Instance: new (m: unknown, i: object) => { exports: Exports } } }).WebAssembly;

/** One in-process call, marshalled as the sandbox worker does for the module's ABI. */
function rawCaller(bytes: Uint8Array): (input: string) => string {
  const module = new WA.Module(bytes);
  let ex: Exports;
  const noop = () => {};
  const imports = {
    env: { abort: () => { throw new Error("abort"); }, trace: noop, seed: () => 42 },
    probegate_v2: { log: noop, abort: () => { throw new Error("abort"); } },
  };
  ex = new WA.Instance(module, imports).exports;
  if (typeof ex.pg_check === "function") {
    const dec = new TextDecoder();
    return (input) => {
      const buf = Buffer.from(input, "utf8");
      const ptr = ex.pg_alloc(buf.length) >>> 0;
      buf.copy(Buffer.from(ex.memory.buffer, ptr, buf.length));
      const packed = BigInt.asUintN(64, ex.pg_check(ptr, buf.length));
      const out = dec.decode(new Uint8Array(ex.memory.buffer, Number(packed & 0xffffffffn), Number(packed >> 32n)));
      ex.pg_reset();
      return out;
    };
  }
  const dec = new TextDecoder("utf-16le");
  return (input) => {
    const p = ex.__new(input.length << 1, 2) >>> 0;
    Buffer.from(ex.memory.buffer, p, input.length << 1).write(input, "utf16le");
    ex.__pin(p);
    const r = ex.check(p) >>> 0;
    const size = new Uint32Array(ex.memory.buffer, r - 4, 1)[0]!;
    const out = dec.decode(new Uint8Array(ex.memory.buffer, r, size));
    ex.__unpin(p);
    if (typeof ex.__collect === "function") ex.__collect();
    return out;
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Median CPU µs per call over rounds of batches, the three builds interleaved round by round. */
function rawCosts(callers: Array<(i: string) => string>, input: string, budgetMs: number): number[] {
  const batch = Math.max(1, Math.round(2000 / Math.max(1, input.length / 200)));
  for (const c of callers) for (let i = 0; i < batch; i++) c(input);
  const per: number[][] = callers.map(() => []);
  const end = performance.now() + budgetMs;
  while (performance.now() < end || per[0]!.length < 9) {
    callers.forEach((c, k) => {
      const t0 = process.cpuUsage();
      for (let i = 0; i < batch; i++) c(input);
      const t = process.cpuUsage(t0);
      per[k]!.push((t.user + t.system) / batch);
    });
  }
  return per.map(median);
}

async function runtimeCosts(bytes: Uint8Array[], input: string, calls: number): Promise<number[]> {
  const sandbox = new Sandbox({ timeoutMs: 5000 });
  try {
    const plugins = [];
    for (const [k, b] of bytes.entries()) {
      const r = await loadPlugin(b, `b${k}.wasm`, { sandbox, isKnownSource: () => true });
      if (!r.ok) throw new Error(`${BUILDS[k]![0]}: ${r.refusal.reason}: ${r.refusal.message}`);
      plugins.push(r.plugin);
    }
    const per: number[][] = plugins.map(() => []);
    for (let i = 0; i < calls; i++) {
      for (const [k, p] of plugins.entries()) {
        const t0 = performance.now();
        const o = await callCheck(sandbox, p, input);
        per[k]!.push((performance.now() - t0) * 1000);
        if (o.kind !== "verdict") throw new Error(`${BUILDS[k]![0]}: ${o.reason}: ${o.message}`);
      }
    }
    return per.map((xs) => median(xs.slice(Math.floor(xs.length / 5))));
  } finally {
    await sandbox.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { "budget-ms": { type: "string" }, json: { type: "boolean" } } });
  const budgetMs = Number(values["budget-ms"] ?? 300);
  const bytes = BUILDS.map(([, f]) => new Uint8Array(fs.readFileSync(f)));
  const callers = bytes.map(rawCaller);
  const rows: Array<{ nis: number; raw: number[]; runtime: number[]; verdicts: string[] }> = [];
  for (const n of SIZES) {
    const input = pluginInput(n, SOURCES);
    const verdicts = callers.map((c) => {
      const v = JSON.parse(c(input)) as { status: string; reason: string; message: string };
      return `${v.status} ${v.reason}: ${v.message}`;
    });
    if (new Set(verdicts).size !== 1) throw new Error(`the builds disagree at ${n} NIs:\n${verdicts.join("\n")}`);
    rows.push({ nis: n, raw: rawCosts(callers, input, budgetMs), runtime: await runtimeCosts(bytes, input, 200), verdicts });
  }
  const result = {
    node: process.version,
    sizes: Object.fromEntries(BUILDS.map(([name], k) => [name, bytes[k]!.length])),
    rows: rows.map((r) => ({ nis: r.nis, rawUs: Object.fromEntries(BUILDS.map(([n], k) => [n, +r.raw[k]!.toFixed(2)])), runtimeUs: Object.fromEntries(BUILDS.map(([n], k) => [n, +r.runtime[k]!.toFixed(1)])) })),
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  const names = BUILDS.map(([n]) => n);
  const out = [`net-interfaces by language (${process.version}; medians; ratios against AssemblyScript in the same run)`, ""];
  out.push(`module size: ${names.map((n, k) => `${n} ${bytes[k]!.length} B${k ? ` (${(bytes[k]!.length / bytes[0]!.length).toFixed(2)}x)` : ""}`).join(", ")}`, "");
  out.push(`| NIs | ${names.map((n) => `${n} raw µs`).join(" | ")} | ${names.map((n) => `${n} via runtime µs`).join(" | ")} |`);
  out.push(`|---|${names.map(() => "---").join("|")}|${names.map(() => "---").join("|")}|`);
  for (const r of rows) {
    const cell = (xs: number[], k: number, digits: number) => `${xs[k]!.toFixed(digits)}${k ? ` (${(xs[k]! / xs[0]!).toFixed(2)}x)` : ""}`;
    out.push(`| ${r.nis} | ${names.map((_, k) => cell(r.raw, k, 2)).join(" | ")} | ${names.map((_, k) => cell(r.runtime, k, 0)).join(" | ")} |`);
  }
  process.stdout.write(`${out.join("\n")}\n`);
}

main().catch((e) => {
  process.stderr.write(`abi-languages: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 1;
});
