// SDK behaviour through a test-only wasm module compiled from plugins/sdk.
import { beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { loadSdkProbe } from "./harness";

let sdk: Awaited<ReturnType<typeof loadSdkProbe>>;
beforeAll(async () => {
  sdk = await loadSdkProbe();
});

const utf16Unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
const anyUtf16 = fc.string({ unit: utf16Unit, maxLength: 60 });

describe("JSON reader", () => {
  it("decodes all escapes, \\u and surrogate pairs", () => {
    const text = '{"a":"q\\"b\\\\s\\/f\\bx\\fy\\nz\\rw\\tv\\u00e9\\ud83d\\ude00\\udc00"}';
    expect(JSON.parse(sdk.jsonRoundtrip(text))).toEqual(JSON.parse(text));
  });
  it("handles numbers, bools, null, nesting and whitespace", () => {
    const text = ' { "n" : [0, -1, 2.5, 1e3, -0.25E-2, 123456789], "t":true, "f":false, "z":null, "o":{"p":{}} , "e":[] } ';
    expect(JSON.parse(sdk.jsonRoundtrip(text))).toEqual(JSON.parse(text));
  });
  it.each([
    "", "{", '{"a"}', '{"a":}', "[1,]", '"\\x"', '"\\u12"', '"a\nb"', "01", "1.", "-", "tru", "{} x", '{"a":1,}', "nul",
    "[".repeat(200) + "]".repeat(200),
  ])("reports an error, never traps: %j", (text) => {
    expect(sdk.jsonRoundtrip(text)).toMatch(/^ERR:/);
  });
  it("round-trips any JSON value (property)", () => {
    // Numbers with 16+ significant digits keep 15 (see json.ts toNumber), so
    // numbers compare with a relative tolerance; integers must match exactly.
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (v) => {
        const text = JSON.stringify(v);
        expectClose(JSON.parse(sdk.jsonRoundtrip(text)), JSON.parse(text));
      }),
      { numRuns: 300 },
    );
  });
  it("round-trips strings of arbitrary UTF-16, lone surrogates included (property)", () => {
    fc.assert(
      fc.property(anyUtf16, (s) => {
        expect(JSON.parse(sdk.jsonRoundtrip(JSON.stringify({ s })))).toEqual({ s });
      }),
      { numRuns: 300 },
    );
  });
  it("never traps on arbitrary text (property)", () => {
    fc.assert(fc.property(anyUtf16, (s) => void sdk.jsonRoundtrip(s)), { numRuns: 500 });
  });
});

describe("JSON writer", () => {
  it("escapes like JSON.stringify (well-formed) for any UTF-16 (property)", () => {
    fc.assert(
      fc.property(anyUtf16, (s) => {
        const q = sdk.quote(s);
        expect(JSON.parse(q)).toBe(s);
        expect(q).toBe(JSON.stringify(s));
      }),
      { numRuns: 500 },
    );
  });
});

describe("YAML-subset reader", () => {
  it("reads block mappings, both list styles, padding after the dash, quoted scalars, comments", () => {
    const text = [
      "# comment",
      "---",
      "top:",
      "    - a: 1",
      "      b: \"x: \\\"y\\\" \\u00e9\"",
      "    -     c: 2",
      "          d: 'it''s'",
      "list:",
      "- x",
      "- y   # trailing comment",
      "flow: [0,1]",
      "empty:",
      "ipv6: fe80::1@tcp",
      "descr: failed to ping 1.2.3.4@tcp: Input/output error",
      "nested:",
      "  - - deep",
      "    - deeper",
    ].join("\n");
    expect(sdk.yamlToJson(text)).toEqual({
      root: {
        top: [{ a: "1", b: 'x: "y" é' }, { c: "2", d: "it's" }],
        list: ["x", "y"],
        flow: "[0,1]",
        empty: null,
        ipv6: "fe80::1@tcp",
        descr: "failed to ping 1.2.3.4@tcp: Input/output error",
        nested: [["deep", "deeper"]],
      },
      stray: 0,
    });
  });
  it("tolerates CRLF, trailing blanks and counts stray lines", () => {
    const r = sdk.yamlToJson("noise before\r\na: 1  \r\n\tb: tabbed\r\nc:\r\n  d: 2 \r\njust words\r\n");
    expect(r.root).toEqual({ a: "1", c: { d: "2" } });
    expect(r.stray).toBe(3);
  });
  it("returns no root for text without structure", () => {
    expect(sdk.yamlToJson("hello world\nmore words").root).toBeNull();
  });
  it("survives pathological indentation without exhausting the stack", () => {
    const deep = Array.from({ length: 3000 }, (_, i) => " ".repeat(i) + "k:").join("\n");
    expect(sdk.yamlToJson(deep).stray).toBeGreaterThan(0);
    const dashes = Array.from({ length: 3000 }, (_, i) => " ".repeat(i * 2) + "-").join("\n");
    expect(() => sdk.yamlToJson(dashes)).not.toThrow();
  });
  it("never traps on arbitrary text (property)", () => {
    const yamlish = fc.array(
      fc.oneof(fc.constantFrom("- ", "-", ": ", ":", "  ", "\t", "\n", "\r\n", '"', "'", "\\", "#", "nid", "status: up", "-     "), anyUtf16),
      { maxLength: 40 },
    ).map((a) => a.join(""));
    fc.assert(fc.property(yamlish, (s) => void sdk.yamlToJson(s)), { numRuns: 500 });
  });
});

describe("NID and interface-name validation", () => {
  it.each([
    "0@lo", "10.1.0.4@tcp", "10.1.0.4@tcp1", "172.16.0.12@o2ib", "172.16.0.12@o2ib3", "2001:db8::4@tcp", "::1@tcp",
    "fe80::1:2:3:4@o2ib", "1:2:3:4:5:6:7:8@tcp", "::ffff:10.1.2.3@tcp", "255.255.255.255@tcp65535", "27@gni", "1234@kfi", "10.0.0.1@kfi2",
  ])("valid: %s", (nid) => expect(sdk.nidValid(nid)).toBe(true));
  it.each([
    "", "@tcp", "10.1.0.4", "10.1.0.4@", "10.1.0.4@TCP", "256.1.0.4@tcp", "10.1.0@tcp", "10.1.0.4.5@tcp", "1@lo", "0@lo1", "27@tcp",
    "10.1.0.4@tcp123456", "10.1.0.4@1tcp", "10.1.0.4@tc-p", "2001:db8:::4@tcp", "1:2:3:4:5:6:7:8:9@tcp", "1::2::3@tcp", "fe80::1%eth0@tcp",
    " 10.1.0.4@tcp", "10.1.0.4@tcp ", "10.1.0.4@@tcp", "abc@gni",
  ])("invalid: %j", (nid) => expect(sdk.nidValid(nid)).toBe(false));
  it("agrees with a reference IPv4 rule (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { minLength: 4, maxLength: 4 }), fc.constantFrom("tcp", "o2ib2"), (octets, net) => {
        expect(sdk.nidValid(`${octets.join(".")}@${net}`)).toBe(octets.every((o) => o <= 255));
      }),
    );
  });
  it("accepts every IPv6 address Node formats (property)", () => {
    fc.assert(
      fc.property(fc.ipV6(), (a) => {
        expect(sdk.ipv6Valid(a)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
  it.each(["eth0", "ens3f0np0", "ib0", "bond0.100", "a", "x".repeat(15), "lo", "veth-1_2@x"])("interface valid: %s", (n) =>
    expect(sdk.ifNameValid(n)).toBe(true),
  );
  it.each(["", ".", "..", "x".repeat(16), "eth/0", "eth 0", "eth0:1", "a,b", "eth\t0", "eth\u00000", "eth\u00e9"])(
    "interface invalid: %j",
    (n) => expect(sdk.ifNameValid(n)).toBe(false),
  );
});

describe("line splitting", () => {
  it.each<[string, number]>([["", 0], ["a", 1], ["a\n", 1], ["a\r\nb", 2], ["a\n\nb\n", 3], ["\r\n", 1]])("%j -> %d lines", (s, n) =>
    expect(sdk.lineCount(s)).toBe(n),
  );
});

describe("vector scans (scan.ts) against a per-character reference", () => {
  // Units the scans single out, plus ordinary ones, so every lane of an
  // 8-unit vector and every tail length gets a hit or a miss.
  const scanUnit = fc.constantFrom(":", " ", "\n", "-", '"', "\\", "\t", "\r", "\u0001", "\u007f", "\ufffd", "a", "é", "\ud83d", "\u000b");
  const reference = (s: string, from: number) => {
    const units = [...Array(s.length).keys()].map((i) => s.charCodeAt(i)).slice(from);
    const first = (pred: (c: number) => boolean) => {
      const k = units.findIndex(pred);
      return k < 0 ? s.length : from + k;
    };
    const count = (c: number) => units.filter((u) => u === c).length;
    const special = first((c) => c === 34 || c === 92 || c < 32);
    const backslash = first((c) => c === 92);
    return [
      first((c) => c === 58),
      first((c) => c !== 32),
      count(10),
      count(10),
      count(45),
      special,
      units.some((c) => c === 0xfffd || c === 0x7f || (c < 32 && c !== 9 && c !== 10 && c !== 13)),
      units.some((c) => c !== 32 && c !== 9 && c !== 10 && c !== 13),
      backslash,
      s.slice(from, backslash),
    ];
  };
  it("agree at every start offset on strings up to 40 units (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: scanUnit, maxLength: 40 }), (s) => {
        const rows = sdk.scanProbe(s);
        expect(rows.length).toBe(s.length + 1);
        rows.forEach((row, from) => expect(row).toEqual(reference(s, from)));
      }),
      { numRuns: 300 },
    );
  });
  it("find hits in the last lane of a vector and in the scalar tail", () => {
    for (const n of [7, 8, 9, 15, 16, 17, 24]) {
      const s = "a".repeat(n - 1) + ":";
      expect(sdk.scanProbe(s)[0]![0]).toBe(n - 1);
    }
  });
});

describe("UniqueList", () => {
  it("keeps the first of each name, in order, across table growth (property)", () => {
    const name = fc.string({ unit: fc.constantFrom("e", "t", "h", "0", "1", "2", "\u00e9"), minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(fc.array(name, { minLength: 1, maxLength: 300 }), (names) => {
        expect(sdk.uniqueProbe(names.join(","))).toBe([...new Set(names)].join(","));
      }),
      { numRuns: 100 },
    );
  });
});

function expectClose(actual: unknown, expected: unknown): void {
  if (typeof expected === "number") {
    expect(typeof actual).toBe("number");
    if (Number.isSafeInteger(expected)) expect(actual).toBe(expected);
    else expect(Math.abs((actual as number) - expected)).toBeLessThanOrEqual(Math.abs(expected) * 1e-14);
  } else if (Array.isArray(expected)) {
    expect(Array.isArray(actual)).toBe(true);
    expect((actual as unknown[]).length).toBe(expected.length);
    expected.forEach((e, i) => expectClose((actual as unknown[])[i], e));
  } else if (expected !== null && typeof expected === "object") {
    expect(Object.keys(actual as object)).toEqual(Object.keys(expected));
    for (const k of Object.keys(expected)) expectClose((actual as any)[k], (expected as any)[k]);
  } else {
    expect(actual).toBe(expected);
  }
}

describe("round and health (AssemblyScript SDK)", () => {
  const doc = (facts: Record<string, string>, round?: unknown) => ({ mode: "node", sources: {}, facts, ...(round !== undefined ? { round } : {}) });

  it("reads round.epoch and round.previousEpoch; absent or odd values read 0", () => {
    expect(sdk.healthProbe(doc({}, { epoch: 1764000700, previousEpoch: 1764000670 })).message).toBe("1764000700/1764000670");
    expect(sdk.healthProbe(doc({})).message).toBe("0/0");
    expect(sdk.healthProbe(doc({}, { epoch: -5, previousEpoch: "1" })).message).toBe("0/0");
    expect(sdk.healthProbe(doc({}, { epoch: 1e300, previousEpoch: 12.7 })).message).toBe("0/12");
    expect(sdk.healthProbe(doc({}, [1, 2])).message).toBe("0/0");
  });

  it("emits health entries (fs only when given, messages on one line) and events (at only when known)", () => {
    const r = sdk.healthProbe(doc({ n: "2", e: "2", status: "STORAGE_DEGRADED", msg: "line one\nline\ttwo ", fs: "lustrefs" }));
    expect(r.health).toEqual([
      { status: "STORAGE_DEGRADED", reason: "Reason0", message: "line one line two 0", fs: "lustrefs" },
      { status: "STORAGE_DEGRADED", reason: "Reason1", message: "line one line two 1", fs: "lustrefs" },
    ]);
    expect(r.events).toEqual([
      { reason: "Evicted", fs: "fs0", target: "fs-OST0" },
      { reason: "Evicted", fs: "fs1", target: "fs-OST1", at: 1 },
    ]);
    const noFs = sdk.healthProbe(doc({ n: "1", status: "INACCESSIBLE", msg: "m" }));
    expect(noFs.health).toEqual([{ status: "INACCESSIBLE", reason: "Reason0", message: "m0" }]);
    expect(noFs.events).toBeUndefined();
    expect(sdk.healthProbe(doc({})).health).toBeUndefined();
  });

  it("keeps at most 256 entries and 256 events, and stays under the output limit by cutting messages", () => {
    const r = sdk.healthProbe(doc({ n: "400", e: "300", status: "DEGRADED", msg: "x".repeat(3000) }));
    expect(r.health).toHaveLength(256);
    expect(r.health[0].message.length).toBeLessThanOrEqual(1024);
    const raw = JSON.stringify(r);
    expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(64 * 1024);
    // Short entries keep every event and full messages.
    const small = sdk.healthProbe(doc({ n: "3", e: "300", status: "DEGRADED", msg: "short" }));
    expect(small.events).toHaveLength(256);
    expect(small.health[2].message).toBe("short2");
  });
});
