// A plugin instance whose linear memory grew past the sandbox's keep size
// (4 MiB) is dropped after its call, so a large input (a 64-mount state
// listing) does not leave its high-water mark resident for the gateway's
// life. What that must not change: the answers (the next call starts from a
// fresh instance and answers the same), small calls (their instance is kept),
// and the memory cap (still PluginMemoryLimit). Through the real loader,
// sandbox worker and bundled plugins.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderGetname, renderStates } from "../demo/lib/fake-lustre.js";
import { callCheck } from "../src/runtime/check-call.js";
import { loadPlugin } from "../src/runtime/loader.js";
import { Sandbox } from "../src/runtime/sandbox.js";
import type { LoadedPlugin } from "../src/runtime/types.js";
import { ROOT } from "./helpers/gateway-process.js";
import { compileAs, compileHostile } from "./hostile/build.js";

// Counts its calls in module state and copies its input eight times over, so
// memory grows with the input: what a fresh instance would reset is visible.
const COUNTER = `
let calls = 0;
export function manifest(): string {
  return '{"abi":1,"name":"counter","version":"1.0.0","description":"counts its calls","sources":[],"modes":["node"]}';
}
export function check(input: string): string {
  calls++;
  const copy = input.repeat(8);
  return '{"status":"pass","reason":"Counted","message":"' + copy.length.toString() + ' characters","facts":{"calls":"' + calls.toString() + '"}}';
}
`;

const known = () => true;
const small = JSON.stringify({ mode: "node", sources: {}, facts: {} });
// ~300 k characters: eight UTF-16 copies are ~4.8 MB of memory, past the keep size;
// the small document's copies fit in the module's initial memory.
const large = JSON.stringify({ mode: "node", sources: {}, facts: { pad: "x".repeat(300_000) } });

async function load(sandbox: Sandbox, bytes: Uint8Array, file: string): Promise<LoadedPlugin> {
  const r = await loadPlugin(bytes, file, { sandbox, isKnownSource: known });
  if (!r.ok) throw new Error(`${file} refused: ${r.refusal.reason} ${r.refusal.message}`);
  return r.plugin as LoadedPlugin;
}

async function calls(sandbox: Sandbox, p: LoadedPlugin, input: string): Promise<string> {
  const r = await callCheck(sandbox, p, input);
  if (r.kind !== "verdict") throw new Error(`fault: ${r.reason} ${r.message}`);
  return r.output.facts?.calls ?? "";
}

describe("an instance past the keep size is dropped after its call", () => {
  const sandbox = new Sandbox({ timeoutMs: 10_000 });
  let counter: LoadedPlugin;
  beforeAll(async () => {
    counter = await load(sandbox, await compileAs(COUNTER), "counter.wasm");
  }, 120_000);
  afterAll(() => sandbox.close());

  it("small calls keep their instance; a large call answers, then the next call starts fresh", async () => {
    expect(await calls(sandbox, counter, small)).toBe("1");
    expect(await calls(sandbox, counter, small)).toBe("2");
    expect(sandbox.released).toBe(0);
    // The large call is answered by the instance that had the two small calls...
    expect(await calls(sandbox, counter, large)).toBe("3");
    expect(sandbox.released).toBe(1);
    // ...which is gone now: module state does not outlive a large call.
    expect(await calls(sandbox, counter, small)).toBe("1");
    expect(await calls(sandbox, counter, large)).toBe("2");
    expect(await calls(sandbox, counter, large)).toBe("1");
    expect(sandbox.released).toBe(3);
    expect(sandbox.restarts).toBe(0);
  });

  it("the memory cap still faults as PluginMemoryLimit, and the sandbox answers after it", async () => {
    const memhog = await load(sandbox, await compileHostile("memhog"), "memhog.wasm");
    const r = await callCheck(sandbox, memhog, small);
    expect(r).toMatchObject({ kind: "fault", reason: "PluginMemoryLimit" });
    expect(await calls(sandbox, counter, small)).toMatch(/^\d+$/);
  });
});

describe("the bundled lustre-imports on a 64-mount listing", () => {
  const sandbox = new Sandbox({ timeoutMs: 10_000 });
  let plugin: LoadedPlugin;
  beforeAll(async () => {
    plugin = await load(sandbox, new Uint8Array(fs.readFileSync(path.join(ROOT, "dist/plugins/lustre-imports.wasm"))), "lustre-imports.wasm");
  });
  afterAll(() => sandbox.close());

  const since = 1764000000;
  // 64 mounts of 64 OSTs (as kubelet mounts 64 volumes): the listing the RSS bench measures.
  const node = (states: Record<string, string>) => ({
    version: "2.15",
    mgsNid: "10.0.0.2@tcp",
    since,
    filesystems: Array.from({ length: 64 }, (_, i) => ({
      name: "lustrefs",
      instance: (0xffff8f0a3b5d0000n + BigInt(i) * 0x1000n).toString(16),
      mountpoint: `/mnt/v${i}`,
      mdts: 1,
      osts: 64,
      states: i === 5 ? states : {},
    })),
  });
  const doc = (d: object) => {
    const src = (stdout: string) => ({ ok: true, exitCode: 0, stdout, stderr: "", error: null, truncated: false, ageMs: 10 });
    return JSON.stringify({
      mode: "node",
      sources: { "lctl.import_states": src(renderStates(d)), "lfs.getname": src(renderGetname(d)), "lustre.health_check": src("healthy\n") },
      facts: {},
      round: { epoch: since + 3600, previousEpoch: since + 3595 },
    });
  };

  it("answers the same from a fresh instance after every large call, healthy and degraded alike", async () => {
    const healthy = doc(node({}));
    const degraded = doc(node({ OST0003: "DISCONN" }));
    expect(healthy.length).toBeGreaterThan(500_000);
    const before = sandbox.released;
    const first = await callCheck(sandbox, plugin, healthy);
    expect(first).toMatchObject({ kind: "verdict", output: { status: "pass", reason: "ImportsHealthy" } });
    const bad = await callCheck(sandbox, plugin, degraded);
    expect(bad).toMatchObject({ kind: "verdict", output: { status: "warn" } });
    if (bad.kind === "verdict") expect(JSON.stringify(bad.output.health)).toContain("OST0003 (DISCONN");
    const again = await callCheck(sandbox, plugin, healthy);
    expect(again.kind === "verdict" && again.output).toEqual(first.kind === "verdict" && first.output);
    // Each of the three left its instance past the keep size, and each was dropped.
    expect(sandbox.released - before).toBe(3);
  });
});
