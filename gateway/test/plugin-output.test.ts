// Which health statuses a plugin's probe kind allows (shared by the engine and `plugin test`).
import { describe, expect, it } from "vitest";
import { applyHealthFamily } from "../src/runtime/plugin-output.js";
import { parseCheckOutput } from "../src/runtime/schema.js";
import type { CheckOutput } from "../src/runtime/types.js";

const out = (health: CheckOutput["health"], events?: CheckOutput["events"]): CheckOutput => ({
  status: "warn",
  reason: "X",
  message: "m",
  facts: {},
  ...(health ? { health } : {}),
  ...(events ? { events } : {}),
});

describe("applyHealthFamily", () => {
  it("keeps storage statuses from storage plugins and volume statuses from volume plugins", () => {
    const s = out([{ status: "STORAGE_DEGRADED", reason: "OstUnreachable", message: "a" }], [{ reason: "Evicted", at: 5 }]);
    expect(applyHealthFamily("storage", s)).toEqual({ ok: true, output: s });
    const v = out([{ status: "INACCESSIBLE", reason: "NotMounted", message: "b" }]);
    expect(applyHealthFamily("volume", v)).toEqual({ ok: true, output: v });
  });

  it("refuses the other family", () => {
    const r = applyHealthFamily("storage", out([{ status: "STORAGE_DEGRADED", reason: "A", message: "" }, { status: "DEGRADED", reason: "B", message: "" }]));
    expect(r).toEqual({ ok: false, message: 'health status DEGRADED is not allowed for a probe "storage" plugin (allowed: STORAGE_DEGRADED, STORAGE_UNREACHABLE)' });
    expect(applyHealthFamily("volume", out([{ status: "STORAGE_UNREACHABLE", reason: "A", message: "" }])).ok).toBe(false);
  });

  it("drops health and events from readiness and liveness plugins, keeping the verdict", () => {
    const r = applyHealthFamily("readiness", out([{ status: "STORAGE_UNREACHABLE", reason: "A", message: "" }], [{ reason: "Evicted" }]));
    expect(r).toEqual({ ok: true, output: { status: "warn", reason: "X", message: "m", facts: {} } });
  });

  it("keeps `stable` (a boolean) for every probe kind: the engine reuses any check's stable verdict", () => {
    const text = '{"status":"pass","reason":"LustreMounted","message":"m","health":[],"stable":true}';
    const parsed = parseCheckOutput(text);
    if (!parsed.ok) throw new Error(parsed.message);
    expect(applyHealthFamily("volume", parsed.output)).toEqual({ ok: true, output: { status: "pass", reason: "LustreMounted", message: "m", facts: {}, health: [], stable: true } });
    expect(applyHealthFamily("storage", parsed.output)).toMatchObject({ ok: true, output: { stable: true } });
    for (const kind of ["readiness", "liveness"] as const) {
      expect(applyHealthFamily(kind, parsed.output)).toEqual({ ok: true, output: { status: "pass", reason: "LustreMounted", message: "m", facts: {}, stable: true } });
    }
    const plain = parseCheckOutput('{"status":"pass","reason":"Ok","message":"m"}');
    expect(plain.ok && "stable" in plain.output).toBe(false);
    expect(parseCheckOutput('{"status":"pass","reason":"Ok","message":"m","stable":"yes"}')).toMatchObject({ ok: false, message: expect.stringContaining("stable") });
  });
});
