#!/usr/bin/env node
// Timing for the 1,024-NI `net show` (kept out of the test suite on purpose:
// timing assertions flake on shared machines). Prints the mean cost of one
// full check() — JSON input decode, YAML parse, verdict, result — and of the
// input decode alone (a check of a trivially small source), so the parse
// share can be read off.   node plugins/test/perf-net-show.mjs
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import loader from "@assemblyscript/loader";
import { generatedNetShow } from "../fixtures/generate.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const bytes = readFileSync(join(root, "dist", "plugins", "lnet-nets.wasm"));
const { exports: ex } = loader.instantiateSync(bytes, { env: { abort() { throw new Error("abort"); }, trace() {}, seed: () => 42 } });

function run(stdout, iterations) {
  const json = JSON.stringify({ mode: "node", sources: { "lnetctl.net_show": { ok: true, exitCode: 0, stdout, stderr: "", error: null, truncated: false, ageMs: 1 } }, facts: {} });
  const ptr = ex.__pin(ex.__newString(json));
  let out = "";
  for (let i = 0; i < 50; i++) out = ex.__getString(ex.check(ptr)); // warm-up
  // CPU time rather than wall time: the machine is shared.
  const c0 = process.cpuUsage();
  for (let i = 0; i < iterations; i++) ex.check(ptr);
  const c = process.cpuUsage(c0);
  const ns = ((c.user + c.system) * 1000) / iterations;
  ex.__unpin(ptr);
  return { us: ns / 1000, out, chars: stdout.length };
}

// Calibration: one pass over the text in plain JS (charCodeAt per char). On
// this kind of shared 2-core machine that alone is ~1 ms per 100k chars; a
// parse costing a few such passes is linear and allocation-light.
function scanCost(text, iterations) {
  let n = 0;
  const c0 = process.cpuUsage();
  for (let k = 0; k < iterations; k++) for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 32) n++;
  const c = process.cpuUsage(c0);
  return { us: (c.user + c.system) / iterations, n };
}

for (const verbose of [false, true]) {
  const text = generatedNetShow(1024, { verbose });
  console.log(`baseline: JS scan of the same ${text.length} chars: ${scanCost(text, 100).us.toFixed(1)} µs`);
  const big = run(generatedNetShow(1024, { verbose }), 300);
  console.log(`1024 NIs${verbose ? " -v" : ""}: ${big.chars} chars, ${big.us.toFixed(1)} µs per check -> ${JSON.parse(big.out).reason}`);
}
for (const count of [16, 1]) {
  const small = run(generatedNetShow(count), 2000);
  console.log(`${count} NI${count > 1 ? "s" : ""}: ${small.us.toFixed(1)} µs per check`);
}
