// ABI v2 (plugins/ABI.md) through the gateway's real loader and sandbox:
// hostile byte-buffer modules are contained with the same precision as v1's
// AssemblyScript ones, and v1 and v2 plugins share one sandbox.
import { afterAll, describe, expect, it } from "vitest";
import { callCheck } from "../src/runtime/check-call.js";
import { inspectPlugin } from "../src/runtime/inspect.js";
import { loadPlugin } from "../src/runtime/loader.js";
import { Sandbox } from "../src/runtime/sandbox.js";
import type { LoadedPlugin } from "../src/runtime/types.js";
import { compileEcho } from "./hostile/build.js";
import { assemble, op, packed, v2Module, type Func } from "./hostile/wasm-asm.js";

const known = (s: string) => ["lctl.list_nids"].includes(s);
const INPUT = JSON.stringify({ mode: "node", sources: {}, facts: {} });
const LOG = { module: "probegate_v2", name: "log", params: ["i32", "i32"] as Array<"i32">, results: [] };
const ABORT = { module: "probegate_v2", name: "abort", params: ["i32", "i32"] as Array<"i32">, results: [] };
const replace = (name: string, f: Partial<Func>) => (base: Func[]) => base.map((b) => (b.export === name ? { ...b, ...f } : b));

async function refusalOf(sandbox: Sandbox, bytes: Uint8Array) {
  const r = await loadPlugin(bytes, "x.wasm", { sandbox, isKnownSource: known });
  if (r.ok) throw new Error(`expected a refusal, loaded ${r.plugin.manifest.name}`);
  return r.refusal;
}

async function loaded(sandbox: Sandbox, bytes: Uint8Array, file = "v2.wasm"): Promise<LoadedPlugin> {
  const r = await loadPlugin(bytes, file, { sandbox, isKnownSource: known });
  if (!r.ok) throw new Error(`refused: ${r.refusal.reason} ${r.refusal.message}`);
  return r.plugin;
}

describe("ABI v2 load-time validation", () => {
  const sandbox = new Sandbox({ timeoutMs: 400 });
  afterAll(() => sandbox.close());

  it("loads a v2 module and reads its manifest through pg_manifest", async () => {
    const p = await loaded(sandbox, v2Module("bytes-ok"));
    expect(p.manifest).toMatchObject({ abi: 2, name: "bytes-ok", probe: "readiness", severity: "required" });
    const r = await callCheck(sandbox, p, INPUT);
    expect(r).toMatchObject({ kind: "verdict", output: { status: "pass", reason: "Ok", message: "bytes-ok ok" } });
  });

  it.each<[string, Uint8Array, string, RegExp]>([
    ["an import outside the ABI", v2Module("x", { imports: [{ module: "wasi_snapshot_preview1", name: "fd_write", params: ["i32"], results: ["i32"] }] }), "ForbiddenImport", /wasi_snapshot_preview1\.fd_write .*only probegate_v2\.log and probegate_v2\.abort/],
    ["a v1 import in a v2 module", v2Module("x", { imports: [{ module: "env", name: "trace", params: ["i32", "i32"], results: [] }] }), "AbiMismatch", /exports ABI v2 entry points .* imports ABI v1's env\.trace/],
    ["a v2 import with the wrong signature", v2Module("x", { imports: [{ module: "probegate_v2", name: "log", params: ["i64"], results: [] }] }), "ForbiddenImport", /probegate_v2\.log has signature \(i64\) -> \(\); ABI v2 declares it \(i32, i32\) -> \(\)/],
    ["a v2 import in a v1 module", assemble({ imports: [LOG], funcs: [{ export: "check", params: ["i32"], results: ["i32"], code: op.i32(0) }] }), "AbiMismatch", /imports ABI v2's probegate_v2\.log but exports ABI v1 entry points \(check\)/],
    ["a v2 import and no entry points at all", assemble({ imports: [LOG], funcs: [] }), "MissingExport", /required function export pg_manifest is missing \(ABI v2\)/],
    ["v1 and v2 exports together", v2Module("x", { funcs: (b) => [...b, { export: "check", params: ["i32"], results: ["i32"], code: op.i32(0) }] }), "AbiMismatch", /exports both ABI v1 \(check\) and ABI v2 \(pg_manifest, pg_check, pg_alloc, pg_reset\)/],
    ["no pg_reset", v2Module("x", { funcs: (b) => b.filter((f) => f.export !== "pg_reset") }), "MissingExport", /required function export pg_reset is missing \(ABI v2\)/],
    ["pg_check returning an i32", v2Module("x", { funcs: replace("pg_check", { results: ["i32"], code: op.i32(8192) }) }), "BadExport", /pg_check has signature \(i32, i32\) -> i32; ABI v2 requires \(i32, i32\) -> i64/],
    ["pg_alloc taking an i64", v2Module("x", { funcs: replace("pg_alloc", { params: ["i64"] }) }), "BadExport", /pg_alloc has signature \(i64\) -> i32/],
    ["a manifest claiming abi 1", v2Module("liar", { manifest: JSON.stringify({ abi: 1, name: "liar", version: "1.0.0", modes: ["node"] }) }), "AbiMismatch", /manifest says abi 1, but the module's imports and exports are ABI v2's/],
    ["a manifest claiming abi 3", v2Module("x", { manifest: JSON.stringify({ abi: 3, name: "x", version: "1.0.0", modes: ["node"] }) }), "UnsupportedAbi", /abi 3 is not supported; this gateway speaks abi 1 and 2/],
    ["a manifest that is not JSON", v2Module("x", { manifest: "{abi: 2" }), "BadManifest", /did not return JSON/],
    ["a manifest that is not UTF-8", v2Module("x", { funcs: replace("pg_manifest", { code: op.i64(packed(8192, 1)) }) }), "BadManifest", /pg_manifest result is not valid UTF-8|did not return JSON/],
    ["a trapping pg_reset (the host resets after reading the manifest)", v2Module("x", { funcs: replace("pg_reset", { code: op.unreachable }) }), "PluginTrap", /manifest\(\): RuntimeError: unreachable/],
    ["a pg_manifest that loops", v2Module("x", { funcs: replace("pg_manifest", { code: [...op.spin, ...op.unreachable] }) }), "PluginTimeout", /manifest\(\) did not return within 400 ms/],
  ])("refuses %s", async (_what, bytes, reason, message) => {
    const r = await refusalOf(sandbox, bytes);
    expect(r.reason).toBe(reason);
    expect(r.message).toMatch(message);
  });

  it("refuses a v1 module whose manifest claims abi 2", async () => {
    const v1 = await compileEcho({ name: "v1-liar" });
    // The echo plugin's manifest text is patched in its data segment: same length, different abi.
    const text = Buffer.from(v1).toString("latin1");
    const at = text.indexOf('"\0a\0b\0i\0"\0:\x001\0');
    expect(at).toBeGreaterThan(0);
    const lying = Uint8Array.from(v1);
    lying[at + 12] = "2".charCodeAt(0);
    const r = await refusalOf(sandbox, lying);
    expect(r.reason).toBe("AbiMismatch");
    expect(r.message).toMatch(/manifest says abi 2, but the module's imports and exports are ABI v1's/);
  });

  it("inspect shows a v2 module's imports, exports and manifest", async () => {
    const r = await inspectPlugin(v2Module("seen", { imports: [LOG] }), { file: "seen.wasm", isKnownSource: () => true });
    expect(r.accepted).toBe(true);
    expect(r.manifest).toMatchObject({ abi: 2, name: "seen" });
    expect(r.imports).toEqual([{ module: "probegate_v2", name: "log", kind: "function" }]);
    expect(r.exports.map((e) => e.name)).toEqual(expect.arrayContaining(["memory", "pg_check", "pg_alloc", "pg_reset", "pg_manifest"]));
  });
});

describe("ABI v2 calls", () => {
  const sandbox = new Sandbox({ timeoutMs: 400 });
  afterAll(() => sandbox.close());
  const msg = new TextEncoder().encode("boom from a v2 plugin");

  it("faults each hostile v2 plugin with its precise reason, and v1 and v2 good ones still answer", async () => {
    const goodV1 = await loaded(sandbox, await compileEcho({ name: "good-v1" }), "good-v1.wasm");
    const goodV2 = await loaded(sandbox, v2Module("good-v2"), "good-v2.wasm");
    // Grows 16 pages at a time until the cap refuses, then traps (as an allocator would).
    const grow = [...op.loop([...op.i32(16), ...op.memoryGrow, ...op.i32(-1), ...op.i32Eq, ...op.ifThen(op.unreachable), ...op.br(0)]), ...op.unreachable];
    const cases: Array<[string, Uint8Array, string, RegExp]> = [
      ["loop", v2Module("loop", { check: [...op.spin, ...op.unreachable] }), "PluginTimeout", /check\(\) did not return within 400 ms/],
      ["trap", v2Module("trap", { check: op.unreachable }), "PluginTrap", /unreachable/],
      ["memory growth", v2Module("grow", { check: grow }), "PluginMemoryLimit", /past its cap of 16 MiB .*--plugin-memory/],
      ["abort", v2Module("abort", { imports: [ABORT], check: [...op.i32(8192), ...op.i32(msg.length), ...op.call(0), ...op.unreachable], output: msg }), "PluginTrap", /^abort: boom from a v2 plugin$/],
      ["not JSON", v2Module("notjson", { output: "definitely not json" }), "PluginBadOutput", /did not return JSON/],
      ["not a verdict", v2Module("noverdict", { output: '{"status":"great","reason":"Ok","message":""}' }), "PluginBadOutput", /status/],
      ["invalid UTF-8", v2Module("badutf8", { output: Uint8Array.of(0x7b, 0xff, 0xfe, 0x7d) }), "PluginBadOutput", /pg_check result is not valid UTF-8/],
      ["a result outside memory", v2Module("outside", { check: op.i64(packed(0xfff00000, 64)) }), "PluginBadOutput", /runs outside plugin memory/],
      ["a 3 GiB result", v2Module("huge", { check: op.i64(packed(0, 0xc0000000)) }), "PluginOutputTooLarge", /3221225472 bytes; the plugin output cap is 2097152 bytes/],
      ["an allocator returning 0", v2Module("noalloc", { funcs: replace("pg_alloc", { code: op.i32(0) }) }), "PluginBadOutput", /pg_alloc\(\d+\) returned 0, not a buffer inside plugin memory/],
    ];
    for (const [what, bytes, reason, message] of cases) {
      const p = await loaded(sandbox, bytes, `${what}.wasm`);
      const r = await callCheck(sandbox, p, INPUT);
      expect(r.kind, what).toBe("fault");
      if (r.kind === "fault") {
        expect(r.reason, what).toBe(reason);
        expect(r.message, what).toMatch(message);
      }
      expect(await callCheck(sandbox, goodV1, INPUT), `v1 after ${what}`).toMatchObject({ kind: "verdict", output: { status: "pass", reason: "NoSources" } });
      expect(await callCheck(sandbox, goodV2, INPUT), `v2 after ${what}`).toMatchObject({ kind: "verdict", output: { status: "pass", reason: "Ok" } });
    }
  });

  it("hands log lines to onTrace, at most 8 per call", async () => {
    const lines: string[] = [];
    const s = new Sandbox({ timeoutMs: 400, onTrace: (_label, message) => lines.push(message) });
    try {
      const text = new TextEncoder().encode("hello from v2 ✓");
      const logTwelve = Array.from({ length: 12 }, () => [...op.i32(8192), ...op.i32(text.length), ...op.call(0)]).flat();
      const bytes = v2Module("tracer", {
        imports: [LOG],
        output: text,
        funcs: replace("pg_check", { code: [...logTwelve, ...op.i64(packed(9000, 0)), ...op.drop, ...op.unreachable] }),
      });
      const p = await loaded(s, bytes);
      await callCheck(s, p, INPUT);
      expect(lines).toEqual(Array.from({ length: 8 }, () => "hello from v2 ✓"));
    } finally {
      await s.close();
    }
  });
});
