// The pure parts of node reporting: flag syntax, the desired conditions, the
// guarded patches and the retry pacing. The end-to-end behaviour is in kube-node.test.ts.
import { describe, expect, it } from "vitest";
import { Backoff, TokenBucket } from "../src/kube/backoff.js";
import { retryAfterMs } from "../src/kube/client/retry-after.js";
import type { ReadinessSnapshot } from "../src/engine/readiness.js";
import { camelReason, desiredState, MESSAGE_LIMIT } from "../src/kube/desired.js";
import { planConditions, planTaint } from "../src/kube/node-plan.js";
import type { NodeView } from "../src/kube/node-view.js";
import { parseTaint, qualifiedNameProblem } from "../src/kube/spec.js";

describe("flag syntax", () => {
  it("parses kubectl's taint syntax and refuses what the API server would", () => {
    expect(parseTaint("a.example.com/not-ready:NoSchedule")).toEqual({ key: "a.example.com/not-ready", effect: "NoSchedule" });
    expect(parseTaint("k=v:NoExecute")).toEqual({ key: "k", value: "v", effect: "NoExecute" });
    for (const bad of ["k", "k:Bad", "Bad_Prefix/k:NoSchedule", "k=v v:NoSchedule", ":NoSchedule"]) expect(() => parseTaint(bad), bad).toThrow();
    expect(qualifiedNameProblem("a.example.com/NodeReady", true)).toBeUndefined();
    expect(qualifiedNameProblem("NodeReady", true)).toMatch(/domain prefix/);
    expect(qualifiedNameProblem("a.example.com/x/y", true)).toMatch(/more than one/);
  });

  it("turns any reason into a CamelCase word", () => {
    expect(camelReason("NiDown", "X")).toBe("NiDown");
    expect(camelReason("ni down: eth0", "X")).toBe("NiDownEth0");
    expect(camelReason("42", "CheckFailed")).toBe("CheckFailed");
  });
});

const view = (conditions: NodeView["conditions"], taints?: NodeView["taints"]): NodeView => ({ resourceVersion: "7", conditions, taints });

describe("planConditions", () => {
  const want = [{ type: "a.io/R", status: "True" as const, reason: "AllChecksPassed", message: "ok" }];
  const t0 = Date.parse("2026-11-23T10:00:00Z");
  it("writes on change, keeps lastTransitionTime while the status holds, and re-sends on the heartbeat only", () => {
    const fresh = planConditions(view([]), want, [], t0, 300_000);
    expect(fresh.write).toEqual([{ ...want[0], lastHeartbeatTime: "2026-11-23T10:00:00Z", lastTransitionTime: "2026-11-23T10:00:00Z" }]);
    const on = view([{ ...want[0]!, lastHeartbeatTime: "2026-11-23T10:00:00Z", lastTransitionTime: "2026-01-01T00:00:00Z" }]);
    expect(planConditions(on, want, [], t0 + 60_000, 300_000).write).toEqual([]);
    expect(planConditions(on, want, [], t0 + 60_000, 300_000).nextDueMs).toBe(t0 + 300_000);
    const beat = planConditions(on, want, [], t0 + 300_000, 300_000).write[0]!;
    expect(beat.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    expect(beat.lastHeartbeatTime).toBe("2026-11-23T10:05:00Z");
    const msg = planConditions(on, [{ ...want[0]!, message: "other" }], [], t0 + 1000, 300_000).write[0]!;
    expect(msg.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    const flip = planConditions(on, [{ ...want[0]!, status: "False" }], [], t0 + 1000, 300_000).write[0]!;
    expect(flip.lastTransitionTime).toBe("2026-11-23T10:00:01Z");
  });
});

describe("planTaint", () => {
  const spec = { key: "a.io/not-ready", effect: "NoSchedule" as const };
  const other = { key: "b.io/x", effect: "NoExecute" };
  it("replaces the list guarded by a test of the list it was derived from, keeping the others", () => {
    const ops = planTaint(view([], [other, { key: "a.io/not-ready", effect: "NoSchedule" }]), spec, false, 0)!;
    expect(ops).toEqual([
      { op: "test", path: "/spec/taints", value: [other, { key: "a.io/not-ready", effect: "NoSchedule" }] },
      { op: "add", path: "/spec/taints", value: [other] },
    ]);
    expect(planTaint(view([], [other]), spec, false, 0)).toBeNull();
    expect(planTaint(view([], [other]), { ...spec, effect: "NoExecute" }, true, 0)![1]).toMatchObject({ value: [other, { key: "a.io/not-ready", effect: "NoExecute" }] });
  });
  it("guards by resourceVersion where there is no list yet", () => {
    expect(planTaint(view([], undefined), spec, true, 0)![0]).toEqual({ op: "test", path: "/metadata/resourceVersion", value: "7" });
  });
});

describe("pacing", () => {
  it("backs off exponentially with full jitter, capped", () => {
    const b = new Backoff(200, 30_000, () => 1);
    const waits = Array.from({ length: 12 }, () => b.next());
    expect(waits.slice(0, 4)).toEqual([200, 400, 800, 1600]);
    expect(Math.max(...waits)).toBe(30_000);
    const j = new Backoff(200, 30_000, () => 0.5);
    expect(j.next()).toBe(100);
  });
  it("reads Retry-After in seconds or as a date", () => {
    expect(retryAfterMs("3")).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 5_000)).toBe(5000);
    expect(retryAfterMs("soon")).toBeUndefined();
  });
  it("a token bucket allows the burst, then one per interval", () => {
    let now = 0;
    const tb = new TokenBucket(2, 1000, () => now);
    expect([tb.take(), tb.take()]).toEqual([0, 0]);
    expect(tb.take()).toBe(1000);
    now = 500;
    expect(tb.take()).toBe(500);
    now = 1000;
    expect(tb.take()).toBe(0);
  });
});

describe("desiredState (issue 31)", () => {
  const base = {
    severity: "required" as const,
    lastTransitionTime: "2026-11-25T00:00:00.000Z",
    lastRunTime: "2026-11-25T00:00:00.000Z",
    durationMs: 1,
    plugin: { name: "x", version: "1.0.0", sha256: "0".repeat(64), file: "x.wasm" },
  };
  it("a required liveness check that cannot run makes the condition False, naming it; messages stay one line and bounded", () => {
    const s: ReadinessSnapshot = {
      phase: "not-ready",
      ready: false,
      live: true,
      generation: 1,
      refusals: [],
      conditions: [
        { ...base, name: "hb", probe: "liveness", status: "fail", reason: "PluginTimeout", message: "late\n[+]hb ok", fault: true },
        { ...base, name: "r", probe: "readiness", status: "pass", reason: "Ok", message: `${"y".repeat(2000)}\r\nz`, fault: false },
      ],
    };
    const d = desiredState(s, "example.com/LustreReady", true);
    expect(d.ready).toBe(false);
    expect(d.failingChecks).toEqual(["hb"]);
    expect(d.conditions[0]).toMatchObject({ status: "False", reason: "PluginTimeout", message: String.raw`hb: PluginTimeout (late\n[+]hb ok)` });
    for (const c of d.conditions) {
      expect(c.message).not.toMatch(/[\r\n]/);
      expect(c.message.length).toBeLessThanOrEqual(MESSAGE_LIMIT);
    }
    expect(d.summary).not.toMatch(/[\r\n]/);
  });
});
