#!/usr/bin/env node
// Timing for the 1,024-NI `net show` (kept out of the test suite on purpose:
// timing assertions flake on shared machines).
//
//   node plugins/build.mjs && node plugins/test/perf-net-show.mjs
//
// For each size it prints two costs, each the median over rounds of a batch
// of calls (CPU time, as the machine is shared):
//   parse  decoding the ABI input, the binary/empty check and the YAML tree
//          (the SDK probe's parseNetShowInput);
//   check  lnet-nets' whole check(): the parse, the verdict over every NI,
//          the `lnet.interfaces` fact and the result JSON.
// plus, for scale, one plain JS pass over the same text.
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import loader from "@assemblyscript/loader";
import { generatedNetShow } from "../fixtures/generate.mjs";
import { buildModule } from "../build.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const imports = { env: { abort() { throw new Error("abort"); }, trace() {}, seed: () => 42 } };
const plugin = loader.instantiateSync(readFileSync(join(root, "dist", "plugins", "lnet-nets.wasm")), imports).exports;
// The probe is compiled with lnet-nets' options, so its parse is the plugin's.
const probeFile = await buildModule("plugins/test/sdk-probe/index.ts", join(root, "dist", "test", "sdk-probe-as-lnet-nets.wasm"), { like: "lnet-nets" });
const probe = loader.instantiateSync(readFileSync(probeFile), imports).exports;

function inputFor(stdout) {
  return JSON.stringify({ mode: "node", sources: { "lnetctl.net_show": { ok: true, exitCode: 0, stdout, stderr: "", error: null, truncated: false, ageMs: 1 } }, facts: {} });
}

/** Median CPU µs of one run() over 15 rounds of `batch` runs, after a warm-up batch (and wasm tier-up). */
function medianCpuUs(run, batch, rounds = 15) {
  for (let i = 0; i < batch; i++) run();
  const per = [];
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < batch; i++) run();
    const c = process.cpuUsage(c0);
    per.push((c.user + c.system) / batch);
  }
  per.sort((a, b) => a - b);
  return per[rounds >> 1];
}

/** fn(ptr) on the input written once into module `ex`: median µs per call, and check()'s result. */
function time(ex, fn, json, batch) {
  const ptr = ex.__pin(ex.__newString(json));
  const us = medianCpuUs(() => fn(ptr), batch);
  const out = fn === ex.check ? ex.__getString(ex.check(ptr)) : "";
  ex.__unpin(ptr);
  return { us, out };
}

/** One plain JS pass over the text, for scale. */
function jsScan(text, batch) {
  let controls = 0; // a captured counter keeps the loop from being optimised away
  return medianCpuUs(() => {
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 32) controls++;
  }, batch);
}

const rows = [
  { label: "1024 NIs", text: generatedNetShow(1024), batch: 40 },
  { label: "1024 NIs -v", text: generatedNetShow(1024, { verbose: true }), batch: 10 },
  { label: "16 NIs", text: generatedNetShow(16), batch: 1000 },
  { label: "1 NI", text: generatedNetShow(1), batch: 2000 },
];
for (const { label, text, batch } of rows) {
  const json = inputFor(text);
  const parse = time(probe, probe.parseNetShowInput, json, batch);
  const check = time(plugin, plugin.check, json, batch);
  const scan = text.length > 10000 ? `; one JS pass over the text ${jsScan(text, batch).toFixed(0)} µs` : "";
  console.log(`${label.padEnd(12)} ${String(text.length).padStart(7)} chars: parse ${parse.us.toFixed(1).padStart(7)} µs, check ${check.us.toFixed(1).padStart(7)} µs -> ${JSON.parse(check.out).reason}${scan}`);
}
