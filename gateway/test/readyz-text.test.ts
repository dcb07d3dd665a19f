// The health endpoints' verdicts agree with Probe, and ?exclude= recomputes them.
import { describe, expect, it } from "vitest";
import { judge } from "../src/engine/readiness-verdict.js";
import { failing, type Condition, type ReadinessSnapshot } from "../src/engine/readiness.js";
import { oneLine } from "../src/support/one-line.js";
import { excludeSet, readyzView } from "../src/http/readyz-text.js";

const cond = (
  name: string,
  probe: Condition["probe"],
  status: Condition["status"],
  reason = "R",
  severity: Condition["severity"] = "required",
  fault = false,
): Condition => ({
  name,
  probe,
  severity,
  status,
  reason,
  message: `${name} says ${status}`,
  lastTransitionTime: "2026-11-21T00:00:00.000Z",
  lastRunTime: "2026-11-21T00:00:00.000Z",
  durationMs: 1,
  plugin: { name, version: "1.0.0", sha256: "0".repeat(64), file: `${name}.wasm` },
  fault,
});

const snap = (conditions: Condition[], over: Partial<ReadinessSnapshot> = {}): ReadinessSnapshot => ({
  phase: "ready",
  ready: true,
  live: true,
  conditions,
  refusals: [],
  generation: 1,
  ...over,
});

describe("readyzView", () => {
  it("follows the snapshot's verdict when nothing is excluded", () => {
    const s = snap([cond("a", "readiness", "fail")], { phase: "not-ready", ready: false });
    expect(readyzView(s, "readiness", new Set()).ok).toBe(false);
    expect(readyzView(s, "liveness", new Set()).ok).toBe(true);
    expect(readyzView(s, "readiness", new Set()).lines).toEqual(["[-]a failed: R: a says fail"]);
  });

  it("recomputes without excluded checks, for that request only", () => {
    const s = snap([cond("a", "readiness", "fail"), cond("b", "readiness", "pass")], { phase: "not-ready", ready: false });
    const v = readyzView(s, "readiness", excludeSet(["a"]));
    expect(v.ok).toBe(true);
    expect(v.lines).toEqual(["[+]a excluded: failed", "[+]b ok"]);
  });

  it("a faulting liveness plugin never fails /livez, as it never fails Probe", () => {
    const s = snap([cond("hb", "liveness", "fail", "PluginTimeout", "required", true)]);
    expect(readyzView(s, "liveness", new Set()).ok).toBe(true);
    expect(readyzView(s, "liveness", excludeSet(["other"])).ok).toBe(true);
    const judged = snap([cond("hb", "liveness", "fail", "DeviceGone")], { live: false });
    expect(readyzView(judged, "liveness", excludeSet(["other"])).ok).toBe(false);
    expect(readyzView(judged, "readiness", new Set()).ok).toBe(false);
  });

  it("is never ready while initializing, and lists refused plugins and advisory results", () => {
    const s = snap([cond("adv", "readiness", "fail", "Meh", "advisory")], { phase: "initializing", ready: false });
    s.refusals = [{ file: "bad.wasm", reason: "ForbiddenImport", message: "imports wasi", at: "" }] as never;
    const v = readyzView(s, "readiness", excludeSet(["adv"]));
    expect(v.ok).toBe(false);
    expect(v.lines[0]).toMatch(/^\[-\]initializing/);
    expect(v.lines).toContain("[!]bad.wasm refused: ForbiddenImport: imports wasi");
    const w = readyzView(snap([cond("adv", "readiness", "fail", "Meh", "advisory")]), "readiness", new Set());
    expect(w).toEqual({ ok: true, lines: ["[+]adv failed (advisory): Meh: adv says fail"] });
  });

  it("names the directory of a refused file when there are several, and lists overrides without failing", () => {
    const s = snap([cond("kernel-modules", "readiness", "pass")], {
      refusals: [{ file: "x.wasm", dir: "/etc/probegate/plugins.d", reason: "CompileError", message: "bad", at: "" }],
      overrides: [{ name: "kernel-modules", file: "/etc/probegate/plugins.d/km.wasm", replaced: "/etc/probegate/plugins/kernel-modules.wasm" }],
    });
    const v = readyzView(s, "readiness", new Set());
    expect(v.ok).toBe(true);
    expect(v.lines).toEqual([
      "[+]kernel-modules ok",
      "[!]/etc/probegate/plugins.d/x.wasm refused: CompileError: bad",
      "[+]plugin kernel-modules: /etc/probegate/plugins.d/km.wasm overrides /etc/probegate/plugins/kernel-modules.wasm",
    ]);
  });
});

describe("issue 31: liveness faults and one line per check", () => {
  it("a required liveness check that cannot run fails readiness (a [-] line), never liveness; excluding it restores readiness", () => {
    const c = cond("hb", "liveness", "fail", "PluginQuarantined", "required", true);
    const s = snap([c, cond("r", "readiness", "pass")], { phase: "not-ready", ready: judge([c], true).ready });
    expect(s.ready).toBe(false);
    const v = readyzView(s, "readiness", new Set());
    expect(v.ok).toBe(false);
    expect(v.lines).toContain("[-]hb (liveness) cannot run: PluginQuarantined: hb says fail");
    expect(readyzView(s, "liveness", new Set()).ok).toBe(true);
    expect(readyzView(s, "readiness", excludeSet(["hb"])).ok).toBe(true);
    // An advisory one does not count.
    expect(judge([{ ...c, severity: "advisory" }], true).ready).toBe(true);
    expect(failing(s, "readiness").map((x) => x.name)).toEqual(["hb"]);
    expect(failing(s, "liveness")).toEqual([]);
  });

  it("the renderers keep every line one line, whatever reached the snapshot", () => {
    const s = snap([{ ...cond("a", "readiness", "fail"), message: "x\n[+]b ok\u2028[+]c ok\u001b[2J" }], {
      phase: "not-ready",
      ready: false,
      refusals: [{ file: "evil\n[+]d ok.wasm", reason: "CompileError", message: "bad\r\n[+]e ok", at: "" }],
    });
    const lines = readyzView(s, "readiness", new Set()).lines;
    expect(lines).toEqual([String.raw`[-]a failed: R: x\n[+]b ok\u2028[+]c ok\u001b[2J`, String.raw`[!]evil\n[+]d ok.wasm refused: CompileError: bad\r\n[+]e ok`]);
  });

  it("oneLine bounds and escapes without splitting a surrogate pair", () => {
    expect(oneLine("a\tb\u0000c\u007f")).toBe(String.raw`a\tb\u0000c\u007f`);
    expect(oneLine("x".repeat(10), 5)).toBe("xxxx…");
    expect(oneLine(`ab${"😀"}d`, 4)).toBe("ab…");
    expect(oneLine("short", 5)).toBe("short");
  });
});
