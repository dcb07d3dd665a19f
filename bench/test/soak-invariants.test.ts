// The soak's judges on their own: the readiness oracle, the deadline
// classification and the slope, fed with hand-made histories.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HealthOracle, ReadinessOracle } from "../soak/oracle.js";
import { PlainDir, PluginChurn, type CompiledKind } from "../soak/plugin-churn.js";
import { Rng } from "../soak/rng.js";
import { Recorder } from "../soak/recorder.js";
import { theilSen, windowMinima } from "../soak/stats.js";
import { memorySplit, slopeFitFrom } from "../soak/report.js";
import type { ProcSample } from "../soak/gateway-proc.js";
import { parseV8Metrics } from "../soak/v8-metrics.js";

const bounds = { checkMs: 10_000, upstreamMs: 3_000, recoverMs: 20_000 };

describe("readiness oracle", () => {
  it("flags a ready answer only once a cause has outlived its bound", () => {
    const o = new ReadinessOracle("t", bounds, 0);
    const cause = { what: "lnet:broken", since: 1_000 };
    o.note([cause], 1_000);
    o.observe("probe", 5_000, true, [cause]); // within the bound: the gateway may not know yet
    expect(o.violationCount).toBe(0);
    o.observe("probe", 11_500, true, [cause]);
    expect(o.violationCount).toBe(1);
    expect(o.violations[0]).toMatchObject({ observer: "probe", cause: "lnet:broken", afterMs: 10_500 });
    o.observe("probe", 12_000, false, [cause]);
    expect(o.violationCount).toBe(1);
  });

  it("uses the upstream bound for the driver being down", () => {
    const o = new ReadinessOracle("t", bounds, 0);
    const cause = { what: "upstream:down", since: 0 };
    o.observe("probe", 3_500, true, [cause]);
    expect(o.violationCount).toBe(1);
  });

  it("measures detection from the cause to the first not-ready answer asked for after it", () => {
    const o = new ReadinessOracle("t", bounds, 0);
    const cause = { what: "plugin:trap", since: 2_000 };
    o.observe("probe", 2_500, true, [cause]);
    o.observe("probe", 2_900, false, [cause]);
    o.observe("probe", 3_500, false, [cause]);
    expect(o.detection.plugin).toEqual([900]);
  });

  it("counts a node still not ready long after every cause went away, once per all-clear", () => {
    const o = new ReadinessOracle("t", bounds, 0);
    o.note([{ what: "lnet:hanging", since: 0 }], 0);
    o.note([], 5_000);
    o.observe("probe", 10_000, false, []);
    expect(o.stuck).toBe(0);
    o.observe("probe", 26_000, false, []);
    o.observe("probe", 27_000, false, []);
    expect(o.stuck).toBe(1);
    o.note([{ what: "lnet:garbage", since: 30_000 }], 30_000);
    o.note([], 40_000);
    o.observe("probe", 41_000, true, []);
    expect(o.recovery).toEqual([1_000]);
  });
});

describe("request recorder", () => {
  it("tells answers in time, late answers, lost calls and failures during a restart apart", () => {
    const r = new Recorder(0, 30_000, 1_000);
    expect(r.record("k", { outcome: "ok", ms: 3_900, deadlineMs: 3_000 })).toBe("ok");
    expect(r.record("k", { outcome: "clean-error", ms: 4_100, deadlineMs: 3_000 })).toBe("late");
    expect(r.record("k", { outcome: "lost", ms: 30_000, deadlineMs: 3_000 })).toBe("lost");
    r.record("k", { outcome: "broken", ms: 5, deadlineMs: 3_000, outage: true });
    expect(r.kinds.k).toMatchObject({ sent: 4, ok: 1, late: 1, lost: 1, broken: 0, duringOutage: 1 });
    expect(r.totals().violations).toBe(2);
  });
});

describe("slope of window minima", () => {
  const hour = 3_600_000;
  it("reads a steady climb as its rate and a one-off spike as nothing", () => {
    const climb = Array.from({ length: 600 }, (_, i) => ({ t: i * 1000, v: 100 + (i * 1000 * 12) / hour + (i % 7) }));
    const w = windowMinima(climb, 30_000);
    expect(theilSen(w.map((p) => p.t / hour), w.map((p) => p.v))).toBeCloseTo(12, 0);
    const flat = Array.from({ length: 600 }, (_, i) => ({ t: i * 1000, v: i > 540 ? 140 : 100 + (i % 5) }));
    const f = windowMinima(flat, 30_000);
    expect(Math.abs(theilSen(f.map((p) => p.t / hour), f.map((p) => p.v)))).toBeLessThan(1);
  });
});

describe("storage/volume health oracle", () => {
  const hb = { detectMs: 10_000, hungMs: 15_000, recoverMs: 20_000 };
  const U = { status: "STORAGE_UNREACHABLE", reason: "Evicted" };
  const unknown = { status: "STORAGE_DEGRADED", reason: "HealthUnknown" };

  it("an evicted MDT must show past its bound: empty or only degraded is a violation, cannot-tell is not while lctl is gone", () => {
    const o = new HealthOracle(hb, 0);
    const fault = { state: "mdt-evicted", since: 1_000 };
    o.storage(5_000, [], fault, 0, undefined); // within the bound
    expect(o.violationCount).toBe(0);
    o.storage(12_000, [], fault, 0, undefined);
    o.storage(12_000, [unknown], fault, 0, undefined);
    expect(o.violationCount).toBe(2);
    o.storage(12_000, [unknown], fault, undefined, undefined); // lctl gone
    o.storage(12_000, [unknown], fault, 8_000, undefined); // back, its failure may still be cached
    o.storage(12_000, [], fault, undefined, undefined);
    expect(o.violationCount).toBe(3);
    o.storage(12_000, [U], fault, 0, undefined);
    expect(o.violationCount).toBe(3);
  });

  it("a hung mount must make its volume INACCESSIBLE past its bound; Lustre entries must go after recovery", () => {
    const o = new HealthOracle(hb, 0);
    o.volume(10_000, "v", [], 1_000, undefined, 0);
    expect(o.violationCount).toBe(0);
    o.volume(17_000, "v", [], 1_000, undefined, 0);
    o.volume(17_000, "v", [{ status: "DEGRADED", reason: "HealthUnknown" }], 1_000, undefined, 0);
    expect(o.violationCount).toBe(2);
    o.volume(17_000, "v", [{ status: "INACCESSIBLE", reason: "MountHung" }], 1_000, undefined, 0);
    // lctl gone: the check can only say it cannot tell, which is adverse; empty is still a violation.
    o.volume(17_000, "v", [{ status: "DEGRADED", reason: "HealthUnknown" }], 1_000, undefined, undefined);
    expect(o.violationCount).toBe(2);
    o.volume(17_000, "v", [], 1_000, undefined, undefined);
    expect(o.violationCount).toBe(3);
    // Recovered at 30 s: stale MountHung / Evicted within the bound is fine, after it is not.
    o.volume(40_000, "v", [{ status: "INACCESSIBLE", reason: "MountHung" }], undefined, 30_000, 0);
    o.storage(40_000, [U], { state: "healthy", since: 30_000 }, 0, 30_000);
    expect(o.violationCount).toBe(3);
    o.volume(51_000, "v", [{ status: "INACCESSIBLE", reason: "MountHung" }], undefined, 30_000, 0);
    o.storage(51_000, [U], { state: "healthy", since: 30_000 }, 0, 30_000);
    o.storage(51_000, [{ status: "STORAGE_DEGRADED", reason: "LnetNiDegraded" }], { state: "healthy", since: 30_000 }, 0, 30_000);
    expect(o.violationCount).toBe(5);
    expect(o.seen["STORAGE_UNREACHABLE/Evicted"]).toBe(2);
  });
});

/** Hands PluginChurn the draws a test scripts, so each step takes a known branch. */
class ScriptedRng extends Rng {
  constructor(readonly draws: number[]) {
    super(1);
  }
  override next(): number {
    const d = this.draws.shift();
    if (d === undefined) throw new Error("the script ran out of draws");
    return d;
  }
}

describe("plugin churn: what the oracle counts as in force", () => {
  const kind = (id: string, cause: boolean, refused: boolean): CompiledKind => ({ id, cause, refused, family: id, bytes: new Uint8Array([0, 97, 115, 109, id.length]) });
  const kinds = [kind("trap", true, false), kind("wasi", false, true), kind("soak-pass-1", false, false)];

  it("keeps a faulting plugin's cause, and its start, while its file holds content the gateway refuses", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "soak-churn-"));
    try {
      // add: r ≥ 0.55, a cause allowed, the first option (trap)
      const rng = new ScriptedRng([0.9, 0, 0]);
      const churn = new PluginChurn(new PlainDir(dir), new Map(), kinds, rng);
      const told: string[] = [];
      churn.onKept = (what, file, ms) => told.push(`${what} ${file} ${ms}`);
      expect(churn.step(0)).toBe("add-hostile");
      expect(churn.causes()).toEqual([{ what: "plugin:trap", since: 0 }]);
      // not overdue (19.9 s), replace (0.35 ≤ r < 0.55) the trap with the first option left: wasi, refused at load
      rng.draws.push(0.99, 0.45, 0, 0);
      expect(churn.step(1_000)).toBe("replace-hostile-kept");
      expect(fs.readFileSync(path.join(dir, "x0-trap.wasm"))).toEqual(Buffer.from(kinds[1].bytes));
      expect(churn.causes()).toEqual([{ what: "plugin:trap (kept; file now wasi)", since: 0 }]);
      // overdue (5 s), removed: only now is the cause gone
      rng.draws.push(0, 0);
      expect(churn.step(25_000)).toBe("remove-hostile");
      expect(churn.causes()).toEqual([]);
      expect(told).toEqual(["kept x0-trap.wasm 0", "ended x0-trap.wasm 24000"]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("keeps the cause when a plugin of another name is written over it (the gateway refuses it: NameChanged)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "soak-churn-"));
    try {
      const rng = new ScriptedRng([0.9, 0, 0]);
      const churn = new PluginChurn(new PlainDir(dir), new Map(), kinds, rng);
      churn.step(0);
      // replace with the second option left: soak-pass-1, which loads on its own but not over trap
      rng.draws.push(0.99, 0.45, 0, 0.9);
      expect(churn.step(1_000)).toBe("replace-hostile-kept");
      expect(churn.causes()).toEqual([{ what: "plugin:trap (kept; file now soak-pass-1)", since: 0 }]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("ends the cause when the file's new content loads: the same plugin, fixed", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "soak-churn-"));
    try {
      const fixed: CompiledKind = { ...kind("trap-fixed", false, false), family: "trap" };
      const rng = new ScriptedRng([0.9, 0, 0]);
      const churn = new PluginChurn(new PlainDir(dir), new Map(), [kinds[0]!, fixed], rng);
      churn.step(0);
      // replace with the one option left: trap's fixed version, which loads
      rng.draws.push(0.99, 0.45, 0, 0);
      expect(churn.step(1_000)).toBe("replace");
      expect(churn.causes()).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("readiness oracle: stuck episodes", () => {
  it("names what had been in force before the all-clear", () => {
    const o = new ReadinessOracle("t", bounds, 0);
    const seen: string[] = [];
    o.onStuck = (obs) => seen.push(obs);
    o.note([{ what: "plugin:trap", since: 0 }, { what: "lnet:broken", since: 100 }], 100);
    o.note([], 5_000);
    o.observe("readyz", 26_000, false, []);
    expect(o.stuckEpisodes).toEqual([{ clearedAt: 5_000, observer: "readyz", lastCauses: ["plugin:trap", "lnet:broken"] }]);
    expect(seen).toEqual(["readyz"]);
  });
});

describe("the memory slope's fit window", () => {
  const o = { floodEveryMs: 4 * 60_000, floodMs: 8_000 };
  const min = 60_000;

  it("starts once every flood kind has run, when that leaves half of the run", () => {
    // Floods at 2, 6, 10 and 14 min: the fourth kind's first one ends at 14 min 8 s.
    expect(slopeFitFrom(o, 4, 30 * min).fromMs).toBe(14 * min + 8_000);
    expect(slopeFitFrom(o, 4, 60 * min).fromMs).toBe(14 * min + 8_000);
    expect(slopeFitFrom(o, 4, 30 * min).label).toContain("every flood kind");
  });

  it("starts after the third round of every flood kind when floods come often enough for that to leave half the run", () => {
    // Every minute from 30 s: the third round's last flood (the 12th) starts at 11 min 30 s, ends 8 s later.
    const often = { floodEveryMs: min, floodMs: 8_000 };
    expect(slopeFitFrom(often, 4, 30 * min)).toEqual({ fromMs: 11 * min + 38_000, label: "from 12 min, once every flood kind has run 3 times" });
    // Too late for a 20-minute run: after the first round instead (3 min 38 s).
    expect(slopeFitFrom(often, 4, 20 * min).fromMs).toBe(3 * min + 38_000);
  });

  it("fits the last 80% of a run too short for that", () => {
    expect(slopeFitFrom(o, 4, 10 * min)).toEqual({ fromMs: 2 * min, label: "last 80%" });
    expect(slopeFitFrom(o, 4, 28 * min).fromMs).toBeCloseTo(0.2 * 28 * min);
  });

  it("reads a first-flood step as a plateau and steady growth as growth", () => {
    // RSS minima each 30 s over 30 min: a 17 MiB step at the first PING flood (6 min), flat after.
    const step = Array.from({ length: 60 }, (_, i) => [i * 30_000, i * 30_000 < 6 * min ? 70 : 87] as const);
    const from = slopeFitFrom(o, 4, 30 * min).fromMs;
    const fitted = step.filter(([t]) => t >= from);
    expect(theilSen(fitted.map(([t]) => t / 3_600_000), fitted.map(([, v]) => v))).toBe(0);
    // A leak of 20 MiB/h still shows over the same window.
    const leak = fitted.map(([t, v]) => [t, v + (20 * t) / 3_600_000] as const);
    expect(theilSen(leak.map(([t]) => t / 3_600_000), leak.map(([, v]) => v))).toBeCloseTo(20, 5);
  });
});

describe("RSS told apart into V8 heap and native", () => {
  const min = 60_000;
  // 20 minutes of 2 s samples; GC makes the heap swing within each 30 s window.
  const samples = (f: (t: number, i: number) => { rss: number; used?: number; total?: number; external?: number }): ProcSample[] =>
    Array.from({ length: 600 }, (_, i) => {
      const t = i * 2_000;
      const x = f(t, i);
      return { t, rssMiB: x.rss, fds: 30, threads: 12, children: 0, heapUsedMiB: x.used, heapTotalMiB: x.total, externalMiB: x.external };
    });
  const h = (t: number) => t / 3_600_000;

  it("puts native growth outside the heap and heap growth in it", () => {
    const native = memorySplit(samples((t, i) => ({ rss: 100 + 12 * h(t) + (i % 5), used: 15 + (i % 5), total: 25, external: 4 })), 5 * min, 30_000);
    expect(native.heapTotal.slopeMiBPerHour).toBe(0);
    expect(native.heapUsed.slopeMiBPerHour).toBe(0);
    expect(native.outsideHeap.slopeMiBPerHour).toBeCloseTo(12, 0);
    expect(native.heapTotal.endMiB).toBe(25);
    const heap = memorySplit(samples((t, i) => ({ rss: 100 + 12 * h(t) + (i % 5), used: 15 + 12 * h(t), total: 25 + 12 * h(t), external: 4 })), 5 * min, 30_000);
    expect(heap.heapTotal.slopeMiBPerHour).toBeCloseTo(12, 0);
    expect(heap.heapUsed.slopeMiBPerHour).toBeCloseTo(12, 0);
    expect(Math.abs(heap.outsideHeap.slopeMiBPerHour)).toBeLessThan(1);
  });

  it("fits only the samples that carry V8 numbers, and says NaN when none do", () => {
    // Every third sample lost its /metrics answer: the rest still fit.
    const gappy = memorySplit(samples((t, i) => (i % 3 ? { rss: 100 + 12 * h(t), used: 15, total: 25 + 6 * h(t), external: 4 } : { rss: 100 + 12 * h(t) })), 5 * min, 30_000);
    expect(gappy.heapTotal.slopeMiBPerHour).toBeCloseTo(6, 0);
    expect(gappy.outsideHeap.slopeMiBPerHour).toBeCloseTo(6, 0);
    const none = memorySplit(samples((t) => ({ rss: 100 + 12 * h(t) })), 5 * min, 30_000);
    expect(none.heapTotal.slopeMiBPerHour).toBeNaN();
    expect(none.outsideHeap.endMiB).toBeNaN();
  });
});

describe("V8 numbers from /metrics", () => {
  it("reads heap used, committed, external and the spaces, NaN for what is missing", () => {
    const m = parseV8Metrics(
      [
        "# HELP nodejs_heap_size_total_bytes Process heap size from Node.js in bytes.",
        "nodejs_heap_size_total_bytes 26214400",
        "nodejs_heap_size_used_bytes 15728640",
        'nodejs_heap_space_size_used_bytes{space="old"} 12582912',
        'nodejs_heap_space_size_used_bytes{space="code"} 2097152',
        'nodejs_heap_space_size_total_bytes{space="old"} 20971520',
        "nodejs_external_memory_bytes 4194304",
      ].join("\n"),
    );
    expect(m).toEqual({ heapUsed: 15728640, heapTotal: 26214400, external: 4194304, spaces: { old: 12582912, code: 2097152 } });
    expect(parseV8Metrics("process_resident_memory_bytes 1\n").heapTotal).toBeNaN();
  });
});
