// The check input document is built by hand (a shared lctl output is escaped
// once per round, not once per plugin call): it must stay byte for byte what
// JSON.stringify of the documented shape gives.
import { describe, expect, it } from "vitest";
import { buildCheckInput } from "../src/checks/check-input.js";
import type { SourceResult } from "../src/engine/sources/index.js";

function plain(sources: Array<[string, SourceResult]>, facts: Record<string, string>, nowMs: number, config?: object, round?: { epoch: number; previousEpoch: number }): string {
  const out: Record<string, unknown> = {};
  for (const [n, r] of sources) {
    out[n] = { ok: r.ok, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, error: r.error, truncated: r.truncated, ageMs: Math.max(0, Math.round(nowMs - r.fetchedAtMs)) };
  }
  const doc: Record<string, unknown> = { mode: "node", sources: out, facts };
  if (config !== undefined) doc.config = config;
  if (round !== undefined) doc.round = { epoch: Math.max(0, Math.trunc(round.epoch)), previousEpoch: Math.max(0, Math.trunc(round.previousEpoch)) };
  return JSON.stringify(doc);
}

describe("buildCheckInput", () => {
  const shared = Object.freeze({ ok: true, exitCode: 0, stdout: 'osc.fs-OST0000-osc-ffff.import=\n    state: FULL\n"quoted" \\ \u2028', stderr: "", error: null, truncated: false, fetchedAtMs: 1_000 });
  const failed: SourceResult = { ok: false, exitCode: null, stdout: "", stderr: "x", error: "ETIMEDOUT: lctl timed out", truncated: true, fetchedAtMs: 2_000 };

  it("is JSON.stringify of the documented shape, for every combination of parts", () => {
    const cases: Array<Parameters<typeof plain>> = [
      [[], {}, 0],
      [[["lctl.imports", shared]], { "volume.id": "pv\"1" }, 1_500],
      [[["lctl.imports", shared], ["volume.statfs", failed], ["lctl.imports", shared]], {}, 500, { grace: 75, list: ["a"] }],
      [[["volume.statfs", failed]], { a: "b" }, 3_000, undefined, { epoch: 1764000000.7, previousEpoch: -3 }],
    ];
    for (const c of cases) expect(buildCheckInput("node", ...(c as [Array<[string, SourceResult]>, Record<string, string>, number, Record<string, unknown>?, { epoch: number; previousEpoch: number }?]))).toBe(plain(...c));
  });

  it("a shared (frozen) result gives the same text every call, with its own age", () => {
    const a = buildCheckInput("node", [["s", shared]], {}, 1_100);
    const b = buildCheckInput("node", [["s", shared]], {}, 1_900);
    expect(JSON.parse(a).sources.s.ageMs).toBe(100);
    expect(JSON.parse(b).sources.s.ageMs).toBe(900);
    expect(JSON.parse(b).sources.s.stdout).toBe(shared.stdout);
  });
});
