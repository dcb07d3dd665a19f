// Round, health entries and events through the Rust and C SDKs: test-only
// plugins built from plugins/test/health-sdk-probe with the real toolchains,
// loaded as the gateway loads them, answering like the AssemblyScript SDK
// (plugins/test/sdk.test.ts). Without rustc's wasm32 target or clang the
// builds are skipped, by name.
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SourceCatalog } from "../../gateway/src/engine/sources/index";
import { PluginUnderTest } from "../../gateway/src/cli/plugin-test/plugin-under-test";
// @ts-expect-error: a plain .mjs build script, no types
import { buildProject, findClang, findRustc } from "../native-build.mjs";
import { ROOT, loadSdkProbe } from "./harness";

const tools = { rust: findRustc(), c: findClang() } as const;
const tmp = mkdtempSync(join(tmpdir(), "pg-health-sdks-"));
let catalog: SourceCatalog;
beforeAll(async () => {
  catalog = await SourceCatalog.create({ procfs: "/proc", sysfs: "/sys", logger: pino({ level: "silent" }) });
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

async function build(lang: "rust" | "c"): Promise<PluginUnderTest> {
  // Same layout in a temp directory: plugins/test/health-sdk-probe/LANG next to plugins/sdk-*.
  const sdk = lang === "rust" ? "sdk-rust" : "sdk-c";
  cpSync(join(ROOT, "plugins", sdk), join(tmp, "plugins", sdk), { recursive: true });
  cpSync(join(ROOT, "plugins", "test", "health-sdk-probe", lang), join(tmp, "plugins", "test", "health-sdk-probe", lang), { recursive: true });
  const wasm = buildProject(join(tmp, "plugins", "test", "health-sdk-probe", lang)).wasm as string;
  const r = await PluginUnderTest.load(new Uint8Array(readFileSync(wasm)), wasm, catalog);
  if (!r.plugin) throw new Error(`${lang}: refused: ${r.refusal?.reason} ${r.refusal?.message}`);
  return r.plugin;
}

const cases: Array<{ facts: Record<string, string>; round?: { epoch: number; previousEpoch: number } }> = [
  { facts: {}, round: { epoch: 1764000700, previousEpoch: 1764000670 } },
  { facts: {} },
  { facts: { n: "2", e: "2", status: "STORAGE_DEGRADED", msg: "line one\nline\ttwo ", fs: "lustrefs" }, round: { epoch: 5, previousEpoch: 0 } },
  { facts: { n: "1", status: "STORAGE_UNREACHABLE", msg: "m" }, round: { epoch: 5, previousEpoch: 4 } },
  { facts: { n: "400", e: "300", status: "STORAGE_DEGRADED", msg: "x".repeat(3000) }, round: { epoch: 5, previousEpoch: 4 } },
  { facts: { stable: "1" }, round: { epoch: 5, previousEpoch: 4 } },
  { facts: { n: "1", status: "STORAGE_DEGRADED", msg: "m", stable: "1" }, round: { epoch: 5, previousEpoch: 4 } },
];

describe.each(["rust", "c"] as const)("%s SDK: round, health and events", (lang) => {
  const tool = tools[lang];
  it.skipIf(!tool.ok)(
    tool.ok ? `answers like the AssemblyScript SDK (${tool.version})` : `answers like the AssemblyScript SDK (skipped: ${tool.why})`,
    async () => {
      const plugin = await build(lang);
      const as = await loadSdkProbe();
      try {
        for (const c of cases) {
          const r = await plugin.run({ mode: "node", facts: c.facts, sources: new Map(), ...(c.round ? { round: c.round } : {}) });
          if (!r.ok) throw new Error(r.problem);
          const doc = JSON.parse(r.input);
          const want = as.healthProbe(doc);
          expect(r.outcome.kind).toBe("verdict");
          const got = r.verdict;
          expect(got.message).toBe(want.message);
          expect(got.health ?? []).toHaveLength((want.health ?? []).length);
          expect((got.health ?? []).map((h: { status: string; reason: string; fs?: string }) => [h.status, h.reason, h.fs])).toEqual((want.health ?? []).map((h: { status: string; reason: string; fs?: string }) => [h.status, h.reason, h.fs]));
          if ((want.health ?? []).length <= 3) expect(got.health ?? []).toEqual(want.health ?? []);
          expect(got.events ?? []).toHaveLength((want.events ?? []).length);
          expect(got.stable).toBe(want.stable);
          expect(got.stable).toBe(c.facts.stable === "1" ? true : undefined);
        }
      } finally {
        await plugin.close();
      }
    },
    180_000,
  );
});
