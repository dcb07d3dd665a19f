// Issue #11: limits that never fail a healthy node, and faults that name the
// limit they hit. A plugin that runs out of its memory cap is reported as
// PluginMemoryLimit naming the cap and --plugin-memory (found by the loader's
// memory.grow hook, so a single huge request on a near-empty memory counts
// too); other traps stay PluginTrap; a fact may be as large as a source's
// output, and one past that names FACT_VALUE_MAX_CHARS.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callCheck } from "../src/runtime/check-call.js";
import { loadPlugin } from "../src/runtime/loader.js";
import { Sandbox } from "../src/runtime/sandbox.js";
import type { LoadedPlugin } from "../src/runtime/types.js";
import { GROW_REFUSED_EXPORT, hookMemoryGrow } from "../src/runtime/wasm-grow-hook.js";
import { ROOT } from "./helpers/gateway-process.js";
import { compileEcho, compileHostile } from "./hostile/build.js";

const INPUT = JSON.stringify({ mode: "node", sources: {}, facts: {} });
const known = () => true;
let bin: Record<string, Uint8Array>;

beforeAll(async () => {
  bin = {};
  for (const n of ["memhog", "hugestring", "bigout", "trap", "bigfact"]) bin[n] = await compileHostile(n);
  bin.good = await compileEcho({ name: "good", facts: { "lnet.interfaces": "eth0" } });
}, 120_000);

async function run(sandbox: Sandbox, name: string, memoryMiB?: number) {
  const r = await loadPlugin(bin[name]!, `${name}.wasm`, { sandbox, isKnownSource: known, memoryMiB });
  if (!r.ok) throw new Error(`${name} refused: ${r.refusal.reason} ${r.refusal.message}`);
  return callCheck(sandbox, r.plugin as LoadedPlugin, INPUT);
}

describe("a plugin that runs out of its memory cap", () => {
  const sandbox = new Sandbox({ timeoutMs: 5_000 });
  const wider = new Sandbox({ timeoutMs: 5_000, memoryMiB: 24 });
  afterAll(async () => {
    await sandbox.close();
    await wider.close();
  });

  it.each(["memhog", "hugestring", "bigout"])("%s is PluginMemoryLimit, naming the 16 MiB cap and --plugin-memory", async (name) => {
    const r = await run(sandbox, name);
    expect(r.kind).toBe("fault");
    if (r.kind !== "fault") return;
    expect(r.reason).toBe("PluginMemoryLimit");
    expect(r.message).toMatch(/cap of 16 MiB/);
    expect(r.message).toContain("--plugin-memory");
    // The trap text is kept after the explanation.
    expect(r.message).toMatch(/It then trapped: (RuntimeError: unreachable|abort)/);
  });

  it("names the cap in force", async () => {
    const r = await run(wider, "memhog", 24);
    expect(r).toMatchObject({ kind: "fault", reason: "PluginMemoryLimit" });
    if (r.kind === "fault") expect(r.message).toMatch(/cap of 24 MiB/);
  });

  it("a 100 MB request on a near-empty memory is the cap too, with the size it asked for", async () => {
    const r = await run(sandbox, "hugestring");
    if (r.kind !== "fault") throw new Error("expected a fault");
    const [, more, had] = /grow its memory by ([\d.]+) MiB, past its cap .*\(it had ([\d.]+) MiB\)/.exec(r.message) ?? [];
    expect(Number(more)).toBeGreaterThanOrEqual(90);
    expect(Number(had)).toBeLessThan(16);
  });

  it("other traps stay PluginTrap with their own text, and a good plugin is unaffected", async () => {
    const trap = await run(sandbox, "trap");
    expect(trap).toMatchObject({ kind: "fault", reason: "PluginTrap" });
    if (trap.kind === "fault") expect(trap.message).toMatch(/unreachable/);
    // After every memory fault above, the same sandbox still answers.
    expect(await run(sandbox, "good")).toMatchObject({ kind: "verdict", output: { status: "pass" } });
  });
});

describe("the memory.grow hook", () => {
  const bundled = fs
    .readdirSync(path.join(ROOT, "dist", "plugins"))
    .filter((f) => f.endsWith(".wasm"))
    .map((f) => [f, new Uint8Array(fs.readFileSync(path.join(ROOT, "dist", "plugins", f)))] as const);

  it("rewrites every bundled plugin (SIMD included) into a valid module exporting the refusal global", () => {
    expect(bundled.length).toBeGreaterThanOrEqual(5);
    for (const [file, bytes] of bundled) {
      const r = hookMemoryGrow(bytes);
      expect(r.hooked, file).toBe(true);
      expect(WebAssembly.validate(r.bytes), file).toBe(true);
      const exports = WebAssembly.Module.exports(new WebAssembly.Module(r.bytes));
      expect(exports, file).toContainEqual({ name: GROW_REFUSED_EXPORT, kind: "global" });
      // Everything the module exported before is still there.
      const before = WebAssembly.Module.exports(new WebAssembly.Module(bytes));
      expect(exports, file).toEqual(expect.arrayContaining(before));
    }
  });

  it("records the refused pages and leaves successful grows alone", () => {
    // (memory 1 2) (func (export "grow") (param i32) (result i32) local.get 0 memory.grow)
    const mod = Uint8Array.from([
      0, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
      1, 6, 1, 0x60, 1, 0x7f, 1, 0x7f,
      3, 2, 1, 0,
      5, 4, 1, 1, 1, 2,
      7, 8, 1, 4, 0x67, 0x72, 0x6f, 0x77, 0, 0,
      10, 8, 1, 6, 0, 0x20, 0, 0x40, 0, 0x0b,
    ]);
    expect(WebAssembly.validate(mod)).toBe(true);
    const r = hookMemoryGrow(mod);
    expect(r.hooked).toBe(true);
    const inst = new WebAssembly.Instance(new WebAssembly.Module(r.bytes));
    const grow = inst.exports.grow as (n: number) => number;
    const refused = inst.exports[GROW_REFUSED_EXPORT] as WebAssembly.Global;
    expect(grow(1)).toBe(1);
    expect(refused.value).toBe(0);
    expect(grow(5)).toBe(-1);
    expect(refused.value).toBe(5);
  });

  it("leaves a module alone when it never grows memory or uses an encoding it does not decode", () => {
    // (func) with no memory at all
    const plain = Uint8Array.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 4, 1, 2, 0, 0x0b]);
    expect(hookMemoryGrow(plain)).toEqual({ bytes: plain, hooked: false });
    // an invalid module that sets the global the hook would append: rewriting must not make it valid
    const sneaky = Uint8Array.from([
      0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 5, 3, 1, 0, 1,
      10, 13, 1, 11, 0, 0x41, 1, 0x40, 0, 0x1a, 0x41, 7, 0x24, 0, 0x0b,
    ]);
    expect(WebAssembly.validate(sneaky)).toBe(false);
    expect(hookMemoryGrow(sneaky)).toEqual({ bytes: sneaky, hooked: false });
  });
});

describe("fact size limits", () => {
  const sandbox = new Sandbox({ timeoutMs: 5_000 });
  afterAll(() => sandbox.close());

  it("a fact one character past the limit is PluginBadOutput naming FACT_VALUE_MAX_CHARS", async () => {
    const r = await run(sandbox, "bigfact");
    expect(r).toMatchObject({ kind: "fault", reason: "PluginBadOutput" });
    if (r.kind !== "fault") return;
    expect(r.message).toContain("facts.big.fact");
    expect(r.message).toContain("1048577 characters");
    expect(r.message).toContain("FACT_VALUE_MAX_CHARS");
  });
});
