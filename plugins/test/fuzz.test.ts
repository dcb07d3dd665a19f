// Properties: whatever a source prints, every plugin answers with a valid
// result and never traps.
import { beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES, ensureBuilt, fixture, generatedNetShow, input, loadPlugin, okSource, type LoadedPlugin } from "./harness";

beforeAll(() => ensureBuilt());

const PLUGINS: Record<string, { source: string; dir: string }> = {
  "kernel-modules": { source: "proc.modules", dir: "modules" },
  "lnet-nets": { source: "lnetctl.net_show", dir: "net_show" },
  "lnet-nids": { source: "lctl.list_nids", dir: "list_nids" },
  "lnet-self-ping": { source: "lnetctl.ping", dir: "ping" },
  "net-interfaces": { source: "sys.net.operstate", dir: "operstate" },
};

function assertValidResult(raw: string): void {
  expect(Buffer.byteLength(raw, "utf8")).toBeLessThanOrEqual(64 * 1024);
  const r = JSON.parse(raw);
  expect(["pass", "warn", "fail"]).toContain(r.status);
  expect(r.reason).toMatch(/^[A-Z][A-Za-z0-9]{0,63}$/);
  expect(typeof r.message).toBe("string");
  if (r.facts !== undefined) for (const v of Object.values(r.facts)) expect(typeof v).toBe("string");
  // The bundled readiness checks mark their verdicts stable (plugins/ABI.md, "Health"): `stable` is the one addition.
  expect(Object.keys(r).every((k) => ["status", "reason", "message", "facts", "stable"].includes(k))).toBe(true);
  if (r.stable !== undefined) expect(r.stable).toBe(true);
}

const allFixtures = ["net_show", "list_nids", "ping", "modules", "operstate"].flatMap((d) =>
  readdirSync(join(FIXTURES, d)).map((f) => fixture(`${d}/${f}`)),
);

const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
const mutation = fc.oneof(
  fc.record({ kind: fc.constant("cut" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("insert" as const), at: fc.nat(), text: fc.string({ unit, maxLength: 12 }) }),
  fc.record({ kind: fc.constant("bytes" as const), at: fc.nat(), text: fc.string({ unit: "binary-ascii", maxLength: 8 }) }),
  fc.record({ kind: fc.constant("unicode" as const), at: fc.nat(), text: fc.string({ unit: "grapheme", maxLength: 6 }) }),
  fc.record({ kind: fc.constant("delete" as const), at: fc.nat(), len: fc.nat({ max: 20 }) }),
  fc.record({ kind: fc.constant("crlf" as const) }),
  fc.record({ kind: fc.constant("indent" as const), at: fc.nat(), by: fc.integer({ min: -4, max: 8 }) }),
);
type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function mutate(text: string, m: Mutation): string {
  const at = "at" in m && text.length ? m.at % (text.length + 1) : 0;
  switch (m.kind) {
    case "cut":
      return text.slice(0, at);
    case "insert":
    case "bytes":
    case "unicode":
      return text.slice(0, at) + m.text + text.slice(at);
    case "delete":
      return text.slice(0, at) + text.slice(at + m.len);
    case "crlf":
      return text.replace(/\n/g, "\r\n");
    case "indent": {
      const lines = text.split("\n");
      const i = lines.length ? at % lines.length : 0;
      lines[i] = m.by >= 0 ? " ".repeat(m.by) + lines[i] : lines[i].slice(-m.by);
      return lines.join("\n");
    }
  }
}

const sourceShape = fc.record({
  ok: fc.boolean(),
  exitCode: fc.option(fc.integer({ min: -1, max: 255 }), { nil: null }),
  stderr: fc.oneof(fc.constant(""), fc.constantFrom(...allFixtures), fc.string({ unit, maxLength: 40 })),
  error: fc.option(fc.constantFrom("exit status 1", "ETIMEDOUT: timed out", "ENOENT: not found", "fact lnet.selfNid is not available"), { nil: null }),
  truncated: fc.boolean(),
});

describe.each(Object.entries(PLUGINS))("%s", (name, { source }) => {
  let plugin: LoadedPlugin;
  beforeAll(() => {
    plugin = loadPlugin(name);
  });
  const call = (stdout: string, shape: Partial<ReturnType<typeof okSource>> = {}, facts: Record<string, string> = { "lnet.selfNid": "10.1.0.4@tcp" }) => {
    const raw = plugin.checkRaw(JSON.stringify(input({ [source]: okSource(stdout, shape) }, facts)));
    assertValidResult(raw);
    return JSON.parse(raw);
  };

  it("mutated fixtures never trap and always yield a valid result", () => {
    fc.assert(
      fc.property(fc.constantFrom(...allFixtures), fc.array(mutation, { minLength: 1, maxLength: 4 }), (text, ms) => {
        call(ms.reduce(mutate, text));
      }),
      { numRuns: 300 },
    );
    expect(plugin.aborts).toEqual([]);
  });

  it("random text and random source envelopes never trap", () => {
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 200 }), sourceShape, (stdout, shape) => {
        const r = call(stdout, shape);
        if (!shape.ok) expect(r.status).toBe("fail");
      }),
      { numRuns: 300 },
    );
  });

  it("random input documents never trap", () => {
    const doc = fc.oneof(
      fc.string({ unit, maxLength: 80 }),
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
      fc.record({ mode: fc.jsonValue(), sources: fc.dictionary(fc.constantFrom(source, "x"), fc.jsonValue({ maxDepth: 2 })), facts: fc.jsonValue({ maxDepth: 2 }) }).map((v) => JSON.stringify(v)),
    );
    fc.assert(
      fc.property(doc, (text) => {
        const r = JSON.parse(plugin.checkRaw(text));
        assertValidResult(plugin.checkRaw(text));
        expect(r.status).toBe("fail");
      }),
      { numRuns: 200 },
    );
  });

  it("frees each call's memory (the minimal runtime's collection runs)", () => {
    const big = generatedNetShow(1024, { verbose: true });
    call(big);
    const after1 = plugin.memoryBytes();
    for (let i = 0; i < 40; i++) call(big);
    expect(plugin.memoryBytes()).toBeLessThanOrEqual(after1 + 1024 * 1024);
  });
});
