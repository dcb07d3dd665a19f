// The YAML reader's lazy tree: keys compared in place, scalars built on read,
// and the helpers built on it (textIs, YamlDoc.hasKey), checked against the
// fully materialised tree (yamlToJson) and against plain JS.
import { beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { loadSdkProbe } from "./harness";

let sdk: Awaited<ReturnType<typeof loadSdkProbe>>;
beforeAll(async () => {
  sdk = await loadSdkProbe();
});

describe("lazy YAML lookups", () => {
  const doc = [
    "status: up",
    "nid: 10.1.0.4@tcp # comment",
    '"quoted key": "a\\tb"',
    "'single': 'it''s'",
    "empty:",
    "tilde: ~",
    "dup: first",
    "dup: second",
    "nested:",
    "  errno: -100",
    "list:",
    "  - status: down",
  ].join("\n");

  it("reads plain, quoted, null and duplicate entries", () => {
    expect(sdk.yamlLookup("status", "up", doc)).toMatchObject({ getText: "up", textIs: true, has: true, hasKey: true });
    expect(sdk.yamlLookup("status", "u", doc)).toMatchObject({ textIs: false });
    expect(sdk.yamlLookup("status", "upp", doc)).toMatchObject({ textIs: false });
    expect(sdk.yamlLookup("nid", "10.1.0.4@tcp", doc)).toMatchObject({ getText: "10.1.0.4@tcp", textIs: true });
    expect(sdk.yamlLookup("quoted key", "a\tb", doc)).toMatchObject({ getText: "a\tb", textIs: true, has: true, hasKey: true });
    expect(sdk.yamlLookup("single", "it's", doc)).toMatchObject({ getText: "it's", textIs: true });
    expect(sdk.yamlLookup("empty", "", doc)).toMatchObject({ getText: "<none>", textIs: false, has: true });
    expect(sdk.yamlLookup("tilde", "~", doc)).toMatchObject({ getText: "<none>", textIs: false, has: true });
    expect(sdk.yamlLookup("dup", "second", doc)).toMatchObject({ getText: "second", textIs: true });
    expect(sdk.yamlLookup("nested", "", doc)).toMatchObject({ getText: "<none>", has: true, textIs: false });
    expect(sdk.yamlLookup("missing", "", doc)).toMatchObject({ getText: "<none>", has: false, hasKey: false, textIs: false });
    expect(sdk.yamlLookup("", "", doc)).toMatchObject({ has: false, hasKey: false });
  });

  it("finds keys at any depth with hasKey, but not in values or stray text", () => {
    expect(sdk.yamlLookup("errno", "", doc)).toMatchObject({ has: false, hasKey: true });
    expect(sdk.yamlLookup("errno", "", "descr: errno is -1\nnoise errno: x")).toMatchObject({ hasKey: false });
    expect(sdk.yamlLookup("errno", "", "a:\n  - b:\n      - \"errno\": -5")).toMatchObject({ hasKey: true });
  });

  it("lists keys in order, decoding quoted ones", () => {
    expect(sdk.yamlLookup("x", "", doc).keys).toEqual(["status", "nid", "quoted key", "single", "empty", "tilde", "dup", "dup", "nested", "list"]);
  });

  it("agrees with the materialised tree on random flat documents (property)", () => {
    const key = fc.constantFrom("status", "nid", "a", "b c", "'q'", '"d"');
    const value = fc.oneof(
      fc.constantFrom("up", "down", "", "~", "null", "up # c", "'u''p'", '"u\\x70"', '"up', "x: y", "[0,1]"),
      fc.string({ unit: fc.constantFrom("a", "u", "p", " ", "#", "'", '"', "\\", ":"), maxLength: 8 }),
    );
    const entry = fc.tuple(key, value).map(([k, v]) => `${k}: ${v}`);
    const docs = fc.array(entry, { minLength: 1, maxLength: 6 }).map((a) => a.join("\n"));
    fc.assert(
      fc.property(docs, fc.constantFrom("status", "nid", "a", "b c", "q", "d"), fc.constantFrom("up", "down", "", "u'p", "x: y"), (text, k, want) => {
        const tree = sdk.yamlToJson(text).root as Record<string, unknown> | null;
        const r = sdk.yamlLookup(k, want, text);
        const v = tree !== null && typeof tree === "object" && Object.prototype.hasOwnProperty.call(tree, k) ? tree[k] : undefined;
        expect(r.has).toBe(v !== undefined);
        expect(r.getText).toBe(typeof v === "string" ? v : "<none>");
        expect(r.textIs).toBe(v === want);
        if (tree !== null && typeof tree === "object") expect([...new Set(r.keys)]).toEqual(Object.keys(tree));
      }),
      { numRuns: 400 },
    );
  });
});

describe("joinStrings and humanList", () => {
  it.each([
    ["", "", ""],
    ["a", "a", "a"],
    ["a|b", "a, b", "a and b"],
    ["a|b|c", "a, b, c", "a, b and c"],
    ["a|b|c|d|e", "a, b, c, d, e", "a, b, c and 2 more"],
    ["|x|", ", x, ", ", x and "],
  ])("%j", (input, joined, human) => {
    expect(sdk.joinProbe(input)).toEqual([joined, human]);
  });
  it("matches Array#join on many parts (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 6 }).filter((s) => !s.includes("|")), { maxLength: 300 }), (parts) => {
        const input = parts.join("|");
        const expected = input.length == 0 ? [] : input.split("|");
        expect(sdk.joinProbe(input)[0]).toBe(expected.join(", "));
      }),
      { numRuns: 100 },
    );
  });
});

describe("JSON integers beyond 15 digits", () => {
  it.each(["[1388617509139421]", "[-9007199254740991]", "[9007199254740993]", "[123456789012345678]", "[1234567890123456789012]"])("%s", (text) => {
    const got = JSON.parse(sdk.jsonRoundtrip(text))[0] as number;
    const want = JSON.parse(text)[0] as number;
    if (Number.isSafeInteger(want)) expect(got).toBe(want);
    else expect(Math.abs(got - want)).toBeLessThanOrEqual(Math.abs(want) * 1e-14);
  });
});
