import { Writable } from "node:stream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPlugin } from "../src/runtime/loader.js";
import { Sandbox } from "../src/runtime/sandbox.js";
import { callCheck } from "../src/runtime/check-call.js";
import { BUILTIN_SOURCE_NAMES } from "../src/engine/sources/index.js";
import { inspectPlugin, runPluginOnce } from "../src/runtime/inspect.js";
import { capMemory, WASM_PAGE } from "../src/runtime/wasm-binary.js";
import type { LoadedPlugin } from "../src/runtime/types.js";
import { compileEcho, compileHostile } from "./hostile/build.js";

const known = (s: string) => ["lctl.list_nids", "t.a"].includes(s);
/** What `plugin inspect` and `plugin test` judge against without --sources: the built-in catalog. */
const builtin = (s: string) => BUILTIN_SOURCE_NAMES.includes(s);
const INPUT = JSON.stringify({ mode: "node", sources: {}, facts: {} });

let bin: Record<string, Uint8Array>;

beforeAll(async () => {
  const names = ["loop", "memhog", "trap", "abort", "badout", "wasi", "noexport", "badmanifest", "unknownsource", "abi3", "manifestloop"];
  bin = {};
  for (const n of names) bin[n] = await compileHostile(n);
  bin.good = await compileEcho({ name: "good" });
  bin.bigout = await compileHostile("bigout");
  bin.tracer = await compileHostile("tracer");
  bin.importmemory = await compileHostile("trap", { importMemory: true });
  bin.hugeinitial = await compileHostile("trap", { initialMemory: 300 });
}, 120_000);

async function loaded(sandbox: Sandbox, name: string, memoryMiB?: number): Promise<LoadedPlugin> {
  const r = await loadPlugin(bin[name]!, `${name}.wasm`, { sandbox, isKnownSource: known, memoryMiB });
  if (!r.ok) throw new Error(`${name} refused: ${r.refusal.reason} ${r.refusal.message}`);
  return r.plugin;
}

describe("static validation and manifest", () => {
  const sandbox = new Sandbox({ timeoutMs: 500 });
  afterAll(() => sandbox.close());
  const refuse = async (bytes: Uint8Array, file = "x.wasm", memoryMiB?: number) => {
    const r = await loadPlugin(bytes, file, { sandbox, isKnownSource: known, memoryMiB });
    if (r.ok) throw new Error("expected a refusal");
    return r.refusal;
  };

  it("accepts a well-behaved plugin and applies manifest defaults", async () => {
    const p = await loaded(sandbox, "good");
    expect(p.manifest).toMatchObject({ abi: 1, name: "good", probe: "readiness", severity: "required", modes: ["node", "controller"] });
    expect(p.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses an oversized file before compiling it", async () => {
    const r = await refuse(new Uint8Array(1024 * 1024 + 1), "big.wasm");
    expect(r).toMatchObject({ file: "big.wasm", reason: "TooLarge" });
    expect(r.message).toContain("1048577");
    const tooBig = await loadPlugin(bin.good!, "big.wasm", { sandbox, isKnownSource: known, maxFileBytes: 100 });
    expect(tooBig.ok).toBe(false);
    if (!tooBig.ok) expect(tooBig.refusal).toMatchObject({ file: "big.wasm", reason: "TooLarge" });
  });

  it("refuses a text file and a truncated module as CompileError", async () => {
    const text = await refuse(new TextEncoder().encode("#!/bin/sh\necho hi\n"), "script.wasm");
    expect(text).toMatchObject({ reason: "CompileError", file: "script.wasm" });
    expect(text.message).toMatch(/magic/);
    const truncated = await refuse(bin.good!.subarray(0, Math.floor(bin.good!.length / 2)), "half.wasm");
    expect(truncated.reason).toBe("CompileError");
    expect(truncated.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("refuses forbidden imports naming the import", async () => {
    const wasi = await refuse(bin.wasi!);
    expect(wasi.reason).toBe("ForbiddenImport");
    expect(wasi.message).toContain("wasi_snapshot_preview1.proc_exit");
    const mem = await refuse(bin.importmemory!);
    expect(mem.reason).toBe("ForbiddenImport");
    expect(mem.message).toContain("env.memory");
  });

  it("refuses a module without the required exports", async () => {
    const r = await refuse(bin.noexport!);
    expect(r).toMatchObject({ reason: "MissingExport" });
    expect(r.message).toContain("check");
  });

  it("refuses a module whose initial memory exceeds the cap", async () => {
    const r = await refuse(bin.hugeinitial!);
    expect(r.reason).toBe("MemoryTooLarge");
  });

  it("refuses bad manifests, unknown ABIs and unknown sources", async () => {
    expect((await refuse(bin.badmanifest!)).reason).toBe("BadManifest");
    expect((await refuse(bin.abi3!)).reason).toBe("UnsupportedAbi");
    const u = await refuse(bin.unknownsource!);
    expect(u.reason).toBe("UnknownSource");
    expect(u.message).toContain("etc.shadow");
    expect(u.message).not.toContain("lctl.list_nids");
  });

  it("refuses a manifest() that never returns as PluginTimeout", async () => {
    const r = await refuse(bin.manifestloop!);
    expect(r.reason).toBe("PluginTimeout");
  });
});

describe("memory cap rewriting", () => {
  it("sets the maximum of a module's memory to the cap", async () => {
    const { memory } = capMemory(bin.good!, 256);
    expect(memory).not.toBeNull();
    expect(memory!.maxPages).toBeLessThanOrEqual(256);
    expect(memory!.minPages).toBeGreaterThan(0);
    // The rewritten binary is a valid module with the same interface.
    const capped = capMemory(bin.good!, 4);
    expect(capped.memory!.maxPages).toBe(4);
    const again = capMemory(capped.bytes, 256);
    expect(again.memory!.maxPages).toBe(4);
    expect(WASM_PAGE).toBe(65536);
  });
});

describe("sandboxed calls", () => {
  const sandbox = new Sandbox({ timeoutMs: 400 });
  afterAll(() => sandbox.close());

  it("faults each hostile plugin with its precise reason, and the good one still answers", async () => {
    const good = await loaded(sandbox, "good");
    const expectations: Array<[string, string, RegExp]> = [
      ["trap", "PluginTrap", /unreachable/],
      ["abort", "PluginTrap", /abort: boom from plugin at .+:\d+:\d+/],
      ["badout", "PluginBadOutput", /status/],
      ["memhog", "PluginMemoryLimit", /cap of 16 MiB .*--plugin-memory/],
      ["loop", "PluginTimeout", /400 ms/],
    ];
    for (const [name, reason, message] of expectations) {
      const p = await loaded(sandbox, name);
      const r = await callCheck(sandbox, p, INPUT);
      expect(r.kind, name).toBe("fault");
      if (r.kind === "fault") {
        expect(r.reason, name).toBe(reason);
        expect(r.message, name).toMatch(message);
      }
      const ok = await callCheck(sandbox, good, INPUT);
      expect(ok, `good after ${name}`).toMatchObject({ kind: "verdict", output: { status: "pass", reason: "NoSources" } });
    }
  });

  it("refuses a 50 MB result before reading it", async () => {
    const big = new Sandbox({ timeoutMs: 5000 });
    try {
      // Room for the string to be built; the output cap, not the memory cap, must stop it.
      const p = await loaded(big, "bigout", 160);
      const r = await callCheck(big, p, INPUT);
      expect(r).toMatchObject({ kind: "fault", reason: "PluginOutputTooLarge" });
      // Under the default 16 MiB memory cap the same plugin cannot even build it, and the fault says so.
      const capped = await loaded(big, "bigout");
      expect(await callCheck(big, capped, INPUT)).toMatchObject({ kind: "fault", reason: "PluginMemoryLimit" });
    } finally {
      await big.close();
    }
  });

  it("keeps the main event loop answering while a plugin loops", async () => {
    const s = new Sandbox({ timeoutMs: 300 });
    try {
      const loop = await loaded(s, "loop");
      let ticks = 0;
      const iv = setInterval(() => ticks++, 5);
      const ticksAtStart = ticks;
      const pending = callCheck(s, loop, INPUT);
      // While the worker spins, the main thread keeps running timers.
      await new Promise((r) => setTimeout(r, 100));
      const midway = ticks;
      const r = await pending;
      clearInterval(iv);
      expect(midway).toBeGreaterThan(ticksAtStart);
      expect(r).toMatchObject({ kind: "fault", reason: "PluginTimeout" });
      expect(s.restarts).toBe(1);
    } finally {
      await s.close();
    }
  });

  it("queues calls behind a looping plugin without failing them", async () => {
    const s = new Sandbox({ timeoutMs: 300 });
    try {
      const loop = await loaded(s, "loop");
      const good = await loaded(s, "good");
      const results = await Promise.all([callCheck(s, loop, INPUT), callCheck(s, good, INPUT), callCheck(s, good, INPUT)]);
      expect(results[0]).toMatchObject({ kind: "fault", reason: "PluginTimeout" });
      expect(results[1]).toMatchObject({ kind: "verdict" });
      expect(results[2]).toMatchObject({ kind: "verdict" });
    } finally {
      await s.close();
    }
  });
});

describe("host imports", () => {
  it("logs traces at debug, bounded per call, and gives plugins no entropy", async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(String(chunk)), cb()) });
    const s = new Sandbox({ logger: pino({ level: "debug" }, sink), timeoutMs: 2000 });
    try {
      const p = await loaded(s, "tracer");
      expect(p.manifest.name).toBe("tracer");
      const a = await callCheck(s, p, INPUT);
      await callCheck(s, p, INPUT);
      expect(a).toMatchObject({ kind: "verdict", output: { reason: "Traced" } });
      // Same seed for every instance: a fresh instance draws the same first number.
      const fresh = await runPluginOnce(bin.tracer!, INPUT, { timeoutMs: 2000, isKnownSource: builtin });
      expect(fresh).toMatchObject({ accepted: true, outcome: { kind: "verdict" } });
      if (a.kind === "verdict" && fresh.accepted && fresh.outcome.kind === "verdict") {
        expect(fresh.outcome.output.message).toBe(a.output.message);
      }
      await new Promise((r) => setImmediate(r));
      const traces = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "plugin trace");
      expect(traces.length).toBe(16); // 8 per call, of the 1000 attempted
      expect(traces[0]).toMatchObject({ level: 20, trace: "tracing 0" });
    } finally {
      await s.close();
    }
  });
});

describe("offline tools", () => {
  it("inspects a good and a refused plugin", async () => {
    const good = await inspectPlugin(bin.good!, { file: "good.wasm", isKnownSource: builtin });
    expect(good).toMatchObject({ accepted: true, refusal: null, manifest: { name: "good" } });
    expect(good.exports.map((e) => e.name)).toEqual(expect.arrayContaining(["manifest", "check", "memory", "__new"]));
    expect(good.imports).toEqual([{ module: "env", name: "abort", kind: "function" }]);
    const wasi = await inspectPlugin(bin.wasi!, { file: "wasi.wasm", isKnownSource: builtin });
    expect(wasi.accepted).toBe(false);
    expect(wasi.refusal?.reason).toBe("ForbiddenImport");
    expect(wasi.imports.some((i) => i.module === "wasi_snapshot_preview1")).toBe(true);
  });

  it("runs a plugin once through the same sandbox", async () => {
    const r = await runPluginOnce(bin.good!, INPUT, { isKnownSource: builtin });
    expect(r).toMatchObject({ accepted: true, outcome: { kind: "verdict", output: { status: "pass" } } });
    const t = await runPluginOnce(bin.trap!, INPUT, { isKnownSource: builtin });
    expect(t).toMatchObject({ accepted: true, outcome: { kind: "fault", reason: "PluginTrap" } });
  });
});
