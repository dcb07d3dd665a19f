// net-interfaces in three languages: AssemblyScript (ABI v1, the shipped
// plugin), Rust and C (ABI v2, plugins/examples). Through the gateway's own
// loader, sandbox, source replay and input builder (the fixture runner's
// PluginUnderTest), the three give the same verdict, word for word, on every
// fixture of plugins/net-interfaces/fixtures and on cases the fixtures do not
// cover. The committed Rust and C modules are what their sources build to;
// that step needs the compilers and is skipped, by name, without them.
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BUILTIN_SOURCE_NAMES, SourceCatalog, type SavedOutput } from "../../gateway/src/engine/sources/index.js";
import { readFixture } from "../../gateway/src/cli/plugin-test/fixture-file.js";
import { compareVerdict } from "../../gateway/src/cli/plugin-test/fixture-run.js";
import { PluginUnderTest, type CaseSpec } from "../../gateway/src/cli/plugin-test/plugin-under-test.js";
import type { CheckOutput as Verdict } from "../../gateway/src/runtime/types.js";
import { runPluginCommand } from "../../gateway/src/cli/plugin-commands.js";
import { runPluginOnce } from "../../gateway/src/runtime/inspect.js";
import { pluginInput } from "../../bench/lib/lnet-inputs.js";
// @ts-expect-error: a plain .mjs build script, no types
import { buildProject, findClang, findRustc } from "../native-build.mjs";
import { DIST, ROOT } from "./harness";

const EXAMPLES = join(ROOT, "plugins", "examples");
const FIXTURES = join(ROOT, "plugins", "net-interfaces", "fixtures");
const BUILDS = {
  assemblyscript: join(DIST, "net-interfaces.wasm"),
  rust: join(EXAMPLES, "net-interfaces-rust", "net-interfaces-rust.wasm"),
  c: join(EXAMPLES, "net-interfaces-c", "net-interfaces-c.wasm"),
} as const;
type Build = keyof typeof BUILDS;

const rustc = findRustc();
const clang = findClang();
const recorded = JSON.parse(readFileSync(join(EXAMPLES, "toolchains.json"), "utf8")) as { rustc: string | null; clang: string | null };

let catalog: SourceCatalog;
const loaded = {} as Record<Build, PluginUnderTest>;

beforeAll(async () => {
  catalog = await SourceCatalog.create({ procfs: "/proc", sysfs: "/sys", logger: pino({ level: "silent" }) });
  for (const [build, file] of Object.entries(BUILDS) as Array<[Build, string]>) {
    const r = await PluginUnderTest.load(new Uint8Array(readFileSync(file)), file, catalog);
    if (!r.plugin) throw new Error(`${build}: refused: ${r.refusal?.reason} ${r.refusal?.message}`);
    loaded[build] = r.plugin;
  }
}, 60_000);
afterAll(async () => {
  for (const p of Object.values(loaded)) await p?.close();
});

/**
 * Each build's verdict. The shipped plugin marks every verdict stable (the
 * host's hint to reuse it, plugins/ABI.md); the plain Rust and C ABI cannot
 * say that, so it is checked here and the words are compared without it.
 */
async function verdicts(c: CaseSpec): Promise<Record<Build, Verdict> & { shipped: Verdict }> {
  const out = {} as Record<Build, Verdict> & { shipped: Verdict };
  for (const build of Object.keys(BUILDS) as Build[]) {
    const r = await loaded[build].run(c);
    if (!r.ok) throw new Error(`${build}: ${r.problem}`);
    const { stable, ...words } = r.verdict;
    expect(stable, `${build}: stable`).toBe(build === "assemblyscript" ? true : undefined);
    out[build] = words;
    if (build === "assemblyscript") out.shipped = r.verdict;
  }
  return out;
}

function operstate(stdout: string): CaseSpec {
  return { mode: "node", facts: { "lnet.interfaces": "eth0" }, sources: new Map([["sys.net.operstate", { stdout } as SavedOutput]]) };
}

const fixtureFiles = readdirSync(FIXTURES).filter((f) => f.endsWith(".yaml")).sort();

describe("net-interfaces in AssemblyScript, Rust and C", () => {
  it("speak ABI v1, v2 and v2, and declare the same sources and configuration", () => {
    expect(loaded.assemblyscript.manifest.abi).toBe(1);
    expect(loaded.rust.manifest.abi).toBe(2);
    expect(loaded.c.manifest.abi).toBe(2);
    for (const b of ["rust", "c"] as const) {
      const { abi: _a, name: _n, ...rest } = loaded[b].manifest;
      const { abi: _a2, name: _n2, ...as } = loaded.assemblyscript.manifest;
      expect(rest, b).toEqual(as);
    }
  });

  it.each(fixtureFiles)("agree word for word on fixture %s, and pass it", async (f) => {
    const c = await readFixture(join(FIXTURES, f));
    const v = await verdicts(c);
    expect(v.rust).toEqual(v.assemblyscript);
    expect(v.c).toEqual(v.assemblyscript);
    const wrong = compareVerdict(c.expect, v.shipped).filter((r) => !r.ok);
    expect(wrong).toEqual([]);
  });

  const many = Array.from({ length: 1500 }, (_, i) => `eth${i} ${i % 3 === 0 ? "down" : i % 3 === 1 ? "up" : "unknown"}`).join("\n");
  const extra: Array<[string, CaseSpec]> = [
    // The gateway composes this source itself: it fails only when its fact is missing (or nothing was read).
    ["a missing fact (SourceFailed)", { ...operstate("eth0 up\n"), facts: {} }],
    ["no output read at all (SourceFailed)", { mode: "node", facts: {}, sources: new Map() }],
    ["1,500 interfaces (lists cut at ten names)", operstate(many)],
    ["a state longer than the clip", operstate("eth0 " + "x".repeat(40) + "\n")],
    ["a bad line with non-BMP characters at the cut", operstate("eth0 up\n" + "ab😀".repeat(30) + " x y\n")],
    ["control characters", operstate("eth0 up\u0001\n")],
    ["U+FFFD from undecodable bytes", operstate("eth0 \ufffd\n")],
    ["tabs, vertical tabs and blank lines", operstate("\n\n eth0\tup \n\u000beth1 \u000cdown\n\n")],
    ["a name of 16 bytes", operstate("abcdefghijklmnop up\n")],
    ["every interface ignored", { ...operstate("eth0 down\neth1 up\n"), config: { ignoreInterfaces: ["eth0", "eth1"] } }],
    ["JSON-hostile names and states", operstate('e"th\\0 up\neth1 "q\\u0000"\n')],
  ];
  it.each(extra)("agree word for word on %s", async (_what, c) => {
    const v = await verdicts(c);
    expect(v.rust).toEqual(v.assemblyscript);
    expect(v.c).toEqual(v.assemblyscript);
  });

  it("agree word for word on 150 random texts (quotes, escapes, controls, CR, non-BMP, long lines, ignore lists)", async () => {
    // Seeded, so a failure names a reproducible case. No lone surrogates: the gateway decodes
    // source output as UTF-8 (undecodable bytes become U+FFFD), so none can reach a plugin.
    let seed = 0x26;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const alphabet = ["eth0", "ib1", " ", "  ", "\t", "\n", "\r\n", "up", "down", "unknown", '"', "\\", "\u0000", "\u001f", "\u007f", "é", "✓", "😀", "\ufffd", ",", ":", "/", "x".repeat(20), "lowerlayerdown"];
    for (let k = 0; k < 150; k++) {
      const parts = Array.from({ length: 1 + rnd(40) }, () => alphabet[rnd(alphabet.length)]!);
      const c = operstate(parts.join(""));
      if (k % 5 === 0) c.config = { ignoreInterfaces: ["eth0", parts[0]!] };
      const v = await verdicts(c);
      expect(v.rust, `case ${k}: ${JSON.stringify(parts.join(""))}`).toEqual(v.assemblyscript);
      expect(v.c, `case ${k}: ${JSON.stringify(parts.join(""))}`).toEqual(v.assemblyscript);
    }
  });
});

describe("the Rust and C builds as the gateway runs them", () => {
  it("`probegate plugin inspect` shows ABI 2, the pg_ exports and the probegate_v2 imports", async () => {
    for (const b of ["rust", "c"] as const) {
      let out = "";
      const code = await runPluginCommand(["inspect", BUILDS[b]], { stdout: { write: (t: string) => (out += t) }, stderr: { write: () => true }, cwd: ROOT });
      expect(code, out).toBe(0);
      expect(out).toMatch(/accepted: yes/);
      expect(out).toMatch(/abi: +2 \(UTF-8 byte buffers/);
      expect(out).toMatch(/exports: .*pg_check \(function\)/);
      expect(out).not.toMatch(/imports: .*env\./);
    }
  });

  it("return memory to the arena after every call: 50 calls on 1,024 interfaces leave memory where one left it", () => {
    const input = Buffer.from(pluginInput(1024, ["sys.net.operstate"]), "utf8");
    for (const b of ["rust", "c"] as const) {
      const WA = (globalThis as unknown as { WebAssembly: { Instance: new (m: unknown, i: object) => { exports: Record<string, (...a: number[]) => unknown> & { memory: { buffer: ArrayBuffer } } }; Module: new (b: Uint8Array) => unknown } }).WebAssembly;
      const ex = new WA.Instance(new WA.Module(readFileSync(BUILDS[b])), { probegate_v2: { log: () => {}, abort: () => { throw new Error("abort"); } } }).exports;
      const call = () => {
        const p = (ex.pg_alloc!(input.length) as number) >>> 0;
        input.copy(Buffer.from(ex.memory.buffer, p, input.length));
        const packed = BigInt.asUintN(64, ex.pg_check!(p, input.length) as bigint);
        const out = Buffer.from(ex.memory.buffer, Number(packed & 0xffffffffn), Number(packed >> 32n)).toString("utf8");
        ex.pg_reset!();
        return out;
      };
      const first = call();
      const after = ex.memory.buffer.byteLength;
      for (let i = 0; i < 50; i++) expect(call()).toBe(first);
      expect(ex.memory.buffer.byteLength, b).toBe(after);
    }
  });

  it("fault with PluginMemoryLimit, naming the cap, when an input needs more than --plugin-memory", async () => {
    const builtin = (s: string) => BUILTIN_SOURCE_NAMES.includes(s);
    // ~1.3 MiB of input: copied into the arena and parsed, more than a 2 MiB cap leaves.
    const input = pluginInput(60_000, ["sys.net.operstate"]);
    for (const b of ["rust", "c"] as const) {
      const r = await runPluginOnce(new Uint8Array(readFileSync(BUILDS[b])), input, { memoryMiB: 2, timeoutMs: 5000, isKnownSource: builtin });
      expect(r.accepted, b).toBe(true);
      if (r.accepted) expect(r.outcome, b).toMatchObject({ kind: "fault", reason: "PluginMemoryLimit", message: expect.stringMatching(/past its cap of 2 MiB/) });
      // The default cap has room: the same input gets a verdict.
      const roomy = await runPluginOnce(new Uint8Array(readFileSync(BUILDS[b])), input, { timeoutMs: 5000, isKnownSource: builtin });
      expect(roomy.accepted, b).toBe(true);
      if (roomy.accepted) expect(roomy.outcome, b).toMatchObject({ kind: "verdict", output: { status: "pass", reason: "InterfacesUp" } });
    }
  });
});

// The compile steps. Without a compiler they are skipped, and the name says why.
const toolchains = [
  ["net-interfaces-rust", rustc, recorded.rustc, "plugins/sdk-rust"],
  ["net-interfaces-c", clang, recorded.clang, "plugins/sdk-c"],
] as const;

describe("the committed example modules", () => {
  beforeAll(() => {
    for (const [name, tool] of toolchains) if (!tool.ok) console.warn(`skip: compiling ${name}: ${tool.why}`);
  });
  for (const [name, tool, recordedVersion, sdk] of toolchains) {
    const title = tool.ok
      ? `${name}.wasm is what its source builds to with ${tool.version} (built in another directory)`
      : `${name}.wasm is what its source builds to (skipped: ${tool.why})`;
    it.skipIf(!tool.ok)(
      title,
      async () => {
        // Another location, same layout: the build remaps paths, so bytes do not depend on the checkout.
        const tmp = mkdtempSync(join(tmpdir(), "pg-examples-"));
        try {
          cpSync(join(ROOT, sdk), join(tmp, sdk), { recursive: true });
          cpSync(join(EXAMPLES, name), join(tmp, "plugins", "examples", name), { recursive: true });
          const out = buildProject(join(tmp, "plugins", "examples", name)).wasm as string;
          const rebuilt = readFileSync(out);
          const committed = readFileSync(join(EXAMPLES, name, `${name}.wasm`));
          if (tool.version === recordedVersion) {
            expect(rebuilt.equals(committed), `${name}.wasm is stale: run npm run examples:build and commit it`).toBe(true);
          } else {
            // Another compiler version makes other bytes; what must hold is the behaviour.
            const r = await PluginUnderTest.load(new Uint8Array(rebuilt), out, catalog);
            expect(r.refusal).toBeNull();
            for (const f of fixtureFiles) {
              const c = await readFixture(join(FIXTURES, f));
              const [got, want] = [await r.plugin!.run(c), await loaded.assemblyscript.run(c)];
              if (!got.ok || !want.ok) throw new Error(`${f}: ${got.ok ? "" : got.problem} ${want.ok ? "" : want.problem}`);
              const { stable: _shipped, ...words } = want.verdict;
              expect(got.verdict, f).toEqual(words);
            }
            await r.plugin!.close();
          }
        } finally {
          rmSync(tmp, { recursive: true, force: true });
        }
      },
      120_000,
    );
  }
});
