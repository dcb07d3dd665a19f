// Issue 43, item 1: each kind of check at its own cadence. Through a real
// gateway process: readiness checks run every --check-interval, storage checks
// every --health-interval; a change of readiness brings the storage checks'
// next evaluation forward. Counted from /metrics
// (probegate_check_evaluations_total), as an operator would see it.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { runProbegate, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { checkEvaluations } from "./helpers/readyz.js";
import { compileAs } from "./hostile/build.js";
import { waitFor } from "./hostile/harness.js";

const running: GatewayProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
});

/** A check over the mount table; never stable, so every evaluation is a call. `fails`: fails while the table holds BREAK. */
function plugin(name: string, probe: string, fails: boolean): Promise<Uint8Array> {
  const manifest = JSON.stringify({ abi: 1, name, version: "1.0.0", description: "test: cadence", sources: ["proc.mounts"], modes: ["node"], probe, severity: "required" });
  return compileAs(`
export function manifest(): string {
  return ${JSON.stringify(manifest)};
}
export function check(input: string): string {
  if (${fails ? "true" : "false"} && input.includes("BREAK")) return '{"status":"fail","reason":"Broken","message":"broken","facts":{}}';
  return '{"status":"pass","reason":"Fine","message":"fine","facts":{}}';
}
`);
}

let gate: Uint8Array;
let store: Uint8Array;
beforeAll(async () => {
  [gate, store] = await Promise.all([plugin("gate", "readiness", true), plugin("store", "storage", false)]);
}, 120_000);

const calls = async (gw: GatewayProcess, check: string): Promise<number> => (await checkEvaluations(gw, check)).run;

/** Waits for `pred`, 30 s at most (rounds are slow on a loaded machine). */
const until = (pred: () => Promise<boolean>, what: string) => waitFor(pred, what, 30_000);

describe("a cadence per kind of check", () => {
  it("runs storage checks every --health-interval while readiness checks run every --check-interval; a readiness change evaluates storage at once", async () => {
    const dir = tempDir("probegate-cadence-");
    const plugins = path.join(dir, "plugins");
    const procfs = path.join(dir, "proc");
    fs.mkdirSync(plugins);
    fs.mkdirSync(path.join(procfs, "1"), { recursive: true });
    const mounts = path.join(procfs, "1", "mounts");
    fs.writeFileSync(mounts, "/dev/sda1 / ext4 rw 0 0\n");
    fs.writeFileSync(path.join(plugins, "gate.wasm"), gate);
    fs.writeFileSync(path.join(plugins, "store.wasm"), store);
    const gw = await startGatewayProcess([
      `--plugins-dir=${plugins}`,
      `--path.procfs=${procfs}`,
      `--kubelet-dir=${path.join(dir, "kubelet")}`,
      "--check-interval=1s",
      "--health-interval=1h",
    ]);
    running.push(gw);

    // Both run in the first round; then only the readiness check, round after round.
    await until(async () => (await calls(gw, "gate")) >= 4, "four readiness rounds");
    expect(await calls(gw, "store")).toBe(1);

    // Readiness changes: the next round judges storage too, an hour early.
    fs.writeFileSync(mounts, "/dev/sda1 / ext4 rw 0 0\nBREAK /break tmpfs rw 0 0\n");
    await until(async () => (await calls(gw, "store")) >= 2, "storage evaluated after the readiness change");
    const ready = (await (await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } })).json()) as { ready: boolean };
    expect(ready.ready).toBe(false);
    // And then not again until its interval has passed.
    const gateNow = await calls(gw, "gate");
    await until(async () => (await calls(gw, "gate")) >= gateNow + 3, "three more readiness rounds");
    expect(await calls(gw, "store")).toBe(2);
  }, 90_000);

  it("--health-interval is a flag with a floor, shown by --help", async () => {
    const help = await runProbegate(["--help"]);
    expect(help.stdout).toMatch(/--health-interval\b/);
    const bad = await runProbegate(["--health-interval=100ms", "--mode=controller"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--health-interval/);
  }, 30_000);
});
