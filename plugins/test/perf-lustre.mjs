#!/usr/bin/env node
// Timing for the Lustre health plugins (kept out of the test suite: timing
// assertions flake on shared machines).
//
//   node plugins/build.mjs && node plugins/test/perf-lustre.mjs
//
// Median CPU µs of one whole check() (input decode, parse, judgement, result
// JSON) over 15 rounds of a batch, after a warm-up, for state listings (what
// the bundled checks read) of 8, 64 and 1,000 OSTs with 2- and 16-entry
// histories (three OSTs down), with lnet-nets on a 16-NI `net show` as the
// peer measured in the same run.
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import loader from "@assemblyscript/loader";
import { generatedNetShow } from "../fixtures/generate.mjs";
import { renderStates } from "../../gateway/demo/lib/fake-lustre.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const imports = { env: { abort() { throw new Error("abort"); }, trace() {}, seed: () => 42 } };
const load = (name) => loader.instantiateSync(readFileSync(join(root, "dist", "plugins", `${name}.wasm`)), imports).exports;
const src = (stdout) => ({ ok: true, exitCode: 0, stdout, stderr: "", error: null, truncated: false, ageMs: 1 });

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

function time(ex, json, batch) {
  const ptr = ex.__pin(ex.__newString(json));
  const us = medianCpuUs(() => ex.check(ptr), batch);
  const out = ex.__getString(ex.check(ptr));
  ex.__unpin(ptr);
  return { us, out };
}

const desc = (osts, historyLength) => ({
  version: "2.15",
  historyLength,
  mgsNid: "10.0.0.2@tcp",
  since: 1764000000,
  filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: "/mnt/lustre", mdts: 1, osts, states: { OST0001: "DISCONN", OST0003: "DISCONN", OST0005: "CONNECTING" } }],
});
const round = { epoch: 1764000700, previousEpoch: 1764000670 };
const rows = [];
const nets = load("lnet-nets");
const peer = time(nets, JSON.stringify({ mode: "node", sources: { "lnetctl.net_show": src(generatedNetShow(16)) }, facts: {} }), 500);
rows.push(["lnet-nets, 16 NIs (peer)", "-", peer.us]);
const li = load("lustre-imports");
const vol = load("volume-lustre-health");
for (const [osts, batch, history] of [[8, 500, 2], [64, 100, 2], [64, 100, 16], [1000, 10, 2], [1000, 10, 16]]) {
  const d = desc(osts, history);
  const st = renderStates(d);
  const r = time(li, JSON.stringify({ mode: "node", sources: { "lctl.import_states": src(st), "lfs.getname": src("lustrefs-ffff8f0a3b5c9000 /mnt/lustre\n") }, facts: {}, round }), batch);
  if (!r.out.includes("OstUnreachable")) throw new Error(r.out);
  rows.push([`lustre-imports, ${osts} OSTs, h=${history}`, `${st.length >> 10} KiB`, r.us]);
  const v = time(
    vol,
    JSON.stringify({
      mode: "node",
      sources: {
        "proc.mounts": src("10.0.0.2@tcp:/lustrefs /mnt/lustre lustre rw,flock 0 0\n"),
        "lctl.import_states": src(st),
        "lfs.getname": src("lustrefs-ffff8f0a3b5c9000 /mnt/lustre\n"),
        "volume.statfs": src("/mnt/lustre ok bd00bd0 rw\n"),
      },
      facts: { "volume.path": "/mnt/lustre", "volume.readOnly": "false" },
      round,
    }),
    batch,
  );
  if (!v.out.includes("OstUnreachable")) throw new Error(v.out);
  rows.push([`volume-lustre-health, ${osts} OSTs, h=${history}`, "", v.us]);
}
console.log("plugin check()                            input      CPU µs/call (median)");
for (const [label, size, us] of rows) console.log(`${label.padEnd(42)}${String(size).padEnd(11)}${us.toFixed(1)}`);
