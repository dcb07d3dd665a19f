// The two-build comparison's command line and report arithmetic (no gateway
// is started here; the bench itself is run by hand, see bench/compare-builds.ts).
import path from "node:path";
import { describe, expect, it } from "vitest";
import { median, parseCompareArgs, renderMarkdown, roundFlags, summarize, type RunInfo, type Sample } from "../compare-builds.js";

const built = new Set(["/w/base/bin/probegate.js", "/w/base/dist", "/w/sub/bin/probegate.js", "/w/sub/dist"]);
const exists = (p: string) => built.has(p);

describe("compare-builds arguments", () => {
  it("resolves both directories against the working directory, with defaults for the rest", () => {
    const a = parseCompareArgs(["--base", "../base", "--subject", "."], "/w/sub", exists);
    expect(a).toMatchObject({ base: "/w/base", subject: "/w/sub", quick: false, reps: 2 });
    expect(a.out.endsWith(path.join("bench", "results", "compare-builds-latest.md"))).toBe(true);
  });

  it("takes --flag=value, --quick, --reps and --out", () => {
    const a = parseCompareArgs(["--quick", "--base=/w/base", "--subject=/w/sub", "--reps=3", "--out", "r.md"], "/tmp", exists);
    expect(a).toEqual({ base: "/w/base", subject: "/w/sub", quick: true, reps: 3, out: "/tmp/r.md" });
  });

  it("refuses a missing or unbuilt directory, an unknown argument, a flag without its value and a bad --reps", () => {
    expect(() => parseCompareArgs(["--subject", "/w/sub"], "/", exists)).toThrow(/--base is required/);
    expect(() => parseCompareArgs(["--base", "/w/none", "--subject", "/w/sub"], "/", exists)).toThrow(/--base \/w\/none: no bin\/probegate.js/);
    expect(() => parseCompareArgs(["--base", "/w/base", "--subject", "/w/sub", "--fast"], "/", exists)).toThrow(/unknown argument "--fast"/);
    expect(() => parseCompareArgs(["--base", "--subject", "/w/sub"], "/", exists)).toThrow(/--base needs a value/);
    expect(() => parseCompareArgs(["--base", "/w/base", "--subject"], "/", exists)).toThrow(/--subject needs a value/);
    for (const reps of ["0", "1.5", "x", "21"]) {
      expect(() => parseCompareArgs(["--base", "/w/base", "--subject", "/w/sub", "--reps", reps], "/", exists)).toThrow(/--reps must be an integer/);
    }
  });
});

describe("compare-builds report", () => {
  it("takes the middle value, or the mean of the two middle ones", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  const samples: Sample[] = [
    { build: "base", rep: 1, values: { probeCpuUs: 10, roundMs: 4 }, notes: [] },
    { build: "subject", rep: 1, values: { probeCpuUs: 9, roundMs: 5 }, notes: [] },
    { build: "base", rep: 2, values: { probeCpuUs: 14, roundMs: 6 }, notes: [] },
    { build: "subject", rep: 2, values: { probeCpuUs: 11, roundMs: Number.NaN }, notes: ["subject rep 2, round: no round"] },
  ];

  it("gives medians per build and subject/base of the medians, leaving out what was not measured", () => {
    const rows = summarize(samples);
    const probe = rows.find((r) => r.key === "probeCpuUs")!;
    expect(probe).toMatchObject({ base: [10, 14], subject: [9, 11], baseMedian: 12, subjectMedian: 10 });
    expect(probe.ratio).toBeCloseTo(10 / 12, 10);
    const round = rows.find((r) => r.key === "roundMs")!;
    expect(round).toMatchObject({ base: [4, 6], subject: [5], baseMedian: 5, subjectMedian: 5, ratio: 1 });
    const stats = rows.find((r) => r.key === "statsCpuUs")!;
    expect(stats.base).toEqual([]);
    expect(stats.ratio).toBeNaN();
  });

  it("renders one table row per measure, n/a where nothing was measured, and the notes", () => {
    const info: RunInfo = {
      base: "/w/base",
      subject: "/w/sub",
      baseCommit: "fe52e4f x",
      subjectCommit: "abc1234 y",
      quick: true,
      reps: 2,
      loadStart: 1.5,
      loadEnd: 2,
      startedAt: "2026-11-27T21:40:00.000Z",
      seconds: 100,
      node: "v20.19.0",
      cpus: 2,
    };
    const md = renderMarkdown(info, summarize(samples), ["subject rep 2, round: no round"]);
    expect(md).toContain("| Probe CPU per call (unix socket, 8 concurrent, one connection) | µs | 12.0 | 10.0 | 0.833 | 10.0, 14.0 | 9.0, 11.0 |");
    expect(md).toContain("| ms | 5.00 | 5.00 | 1.000 | 4.00, 6.00 | 5.00 |");
    expect(md).toMatch(/forwarded NodeGetVolumeStats CPU per call \(gateway mode\) \| µs \| n\/a \| n\/a \| n\/a \| n\/a \| n\/a \|/);
    expect(md).toContain("load average 1.50 at the start and 2.00 at the end");
    expect(md).toContain("- subject rep 2, round: no round");
    expect(md.split("\n").filter((l) => l.startsWith("| ") && !l.startsWith("| measure")).length).toBe(6);
  });
});

describe("compare-builds round flags", () => {
  it("gives --health-interval the round's interval only to a build whose --help lists it, so every round evaluates the volumes in both", () => {
    expect(roundFlags("Checks:\n  --check-interval DURATION\n      How often…\n")).toEqual([]);
    expect(roundFlags("Checks:\n  --check-interval DURATION\n  --health-interval DURATION\n      How often storage…\n")).toEqual(["--health-interval=5s"]);
    // A flag merely mentioned in another's help is not the flag.
    expect(roundFlags("  --check-interval DURATION\n      unlike --health-interval, …\n")).toEqual([]);
  });
});
