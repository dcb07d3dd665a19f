// The Lustre health plugins on inputs too large or too hostile for fixture
// files: 1,000 and 2,000 OSTs as state listings (short and full 16-entry
// histories), memory across repeated calls, and random damage to state blocks
// (never a trap, never "healthy" from text that is not state blocks).
import { beforeAll, describe, expect, it } from "vitest";
import { renderStates } from "../../gateway/demo/lib/fake-lustre.js";
import { ensureBuilt, input, loadPlugin, okSource } from "./harness";

beforeAll(() => ensureBuilt(), 120_000);

const INST = "ffff8f0a3b5c9000";
const big = (osts: number, states: Record<string, string>, historyLength = 2) => ({
  historyLength,
  mgsNid: "10.0.0.2@tcp",
  since: 1764000000,
  filesystems: [{ name: "lustrefs", instance: INST, mountpoint: "/mnt/lustre", mdts: 1, osts, states }],
});
const withRound = (sources: Parameters<typeof input>[0], epoch: number, previousEpoch: number, config?: object) => ({
  ...input(sources),
  round: { epoch, previousEpoch },
  ...(config ? { config } : {}),
});

describe("lustre-imports at scale", () => {
  it.each([2, 16])("1,000 OSTs with %i-entry histories, three down: one entry naming them", (historyLength) => {
    const d = big(1000, { OST0007: "DISCONN", OST01F4: "DISCONN", OST03E7: "CONNECTING" }, historyLength);
    const p = loadPlugin("lustre-imports");
    const r: any = p.check(withRound({ "lctl.import_states": okSource(renderStates(d)) }, 1764000700, 1764000670));
    expect(r.status).toBe("warn");
    expect(r.health).toEqual([
      {
        status: "STORAGE_DEGRADED",
        reason: "OstUnreachable",
        fs: "lustrefs",
        message: `lustrefs (instance ${INST}): OST0007 (DISCONN for 100 s), OST01F4 (DISCONN for 100 s) and OST03E7 (CONNECTING for 100 s) not FULL/IDLE beyond the 75 s grace (3 of 1000 OSTs)`,
      },
    ]);
  });

  it("2,000 OSTs all down: the message names ten and counts the rest; memory stays flat over calls", () => {
    const states: Record<string, string> = {};
    for (let i = 0; i < 2000; i++) states[`OST${i.toString(16).toUpperCase().padStart(4, "0")}`] = "DISCONN";
    const d = big(2000, states);
    const doc = JSON.stringify(withRound({ "lctl.import_states": okSource(renderStates(d)) }, 1764000700, 1764000670));
    const p = loadPlugin("lustre-imports");
    const first = JSON.parse(p.checkRaw(doc));
    expect(first.health[0].message).toMatch(/OST0009 \(DISCONN for 100 s\) and 1990 more not FULL\/IDLE beyond the 75 s grace \(2000 of 2000 OSTs\)$/);
    const after1 = p.memoryBytes();
    for (let i = 0; i < 5; i++) expect(JSON.parse(p.checkRaw(doc))).toEqual(first);
    expect(p.memoryBytes()).toBeLessThanOrEqual(after1 + 1024 * 1024);
  });
});

describe("damaged state blocks", () => {
  const healthy = renderStates(big(8, {}, 16));
  // Deterministic damage: cut, duplicate, drop, or scramble lines.
  let seed = 7;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const damaged = Array.from({ length: 60 }, (_, i) => {
    const lines = healthy.split("\n");
    switch (i % 4) {
      case 0:
        return healthy.slice(0, rnd(healthy.length));
      case 1:
        lines.splice(rnd(lines.length), 1 + rnd(20));
        return lines.join("\n");
      case 2:
        return lines.map((l) => (rnd(5) === 0 ? l.split("").reverse().join("") : l)).join("\n");
      default:
        return lines.map((l) => (rnd(3) === 0 ? "\u0000\uFFFD" + l : l)).join("\n");
    }
  });

  it.each(["lustre-imports", "volume-lustre-health"])("%s never traps and never calls damage healthy without saying so", (name) => {
    const p = loadPlugin(name);
    for (const text of damaged) {
      const raw = p.checkRaw(
        JSON.stringify({
          ...withRound({ "lctl.import_states": okSource(text), "proc.mounts": okSource(`10.0.0.2@tcp:/lustrefs /mnt/lustre lustre rw 0 0\n`, { exitCode: null }), "volume.statfs": okSource("/mnt/lustre ok bd00bd0 rw\n", { exitCode: null }), "lfs.getname": okSource(`lustrefs-${INST} /mnt/lustre\n`) }, 1764000700, 0),
          facts: { "volume.path": "/mnt/lustre", "volume.readOnly": "false" },
        }),
      );
      const r = JSON.parse(raw);
      expect(["pass", "warn", "fail"]).toContain(r.status);
      if (r.status === "pass") {
        // Only text that still holds whole, healthy state blocks may pass.
        expect(text).toMatch(/current_state: (FULL|IDLE)/);
        expect(r.health ?? []).toEqual([]);
      }
      for (const h of r.health ?? []) expect(h.message).not.toMatch(/[\n\r]/);
    }
    expect(p.aborts).toEqual([]);
  });
});

describe("round in the input", () => {
  it("a plugin reading events sees none without a round (epoch 0), and the host's round when given", () => {
    const t = 1764000600;
    const d = { ...big(2, {}), filesystems: [{ ...big(2, {}).filesystems[0]!, history: { OST0001: [[t, "EVICTED"], [t + 1, "FULL"]] as Array<[number, string]> } }] };
    const sources = { "lctl.import_states": okSource(renderStates(d)) };
    const p = loadPlugin("lustre-imports");
    expect((p.check(input(sources)) as any).events).toBeUndefined();
    expect((p.check(withRound(sources, t + 20, t - 10)) as any).events).toEqual([{ reason: "Evicted", fs: "lustrefs", target: "lustrefs-OST0001", at: t }]);
  });
});

describe("input handling of the storage checks", () => {
  const storage = ["lustre-imports", "lnet-health", "lustre-health-check"];
  it.each(storage)("%s: not JSON -> BadInput, and cannot tell is one HealthUnknown entry", (name) => {
    const r = JSON.parse(loadPlugin(name).checkRaw("{not json"));
    expect(r).toMatchObject({ status: "fail", reason: "BadInput" });
    expect(r.health).toEqual([expect.objectContaining({ status: "STORAGE_DEGRADED", reason: "HealthUnknown" })]);
  });
  it.each(storage)("%s: source absent -> SourceMissing, HealthUnknown", (name) => {
    const r: any = loadPlugin(name).check(input({}));
    expect(r).toMatchObject({ status: "fail", reason: "SourceMissing" });
    expect(r.health).toEqual([expect.objectContaining({ status: "STORAGE_DEGRADED", reason: "HealthUnknown" })]);
  });
  it("volume-lustre-health: not JSON -> BadInput with a DEGRADED HealthUnknown entry", () => {
    const r = JSON.parse(loadPlugin("volume-lustre-health").checkRaw("{not json"));
    expect(r).toMatchObject({ status: "fail", reason: "BadInput", health: [{ status: "DEGRADED", reason: "HealthUnknown" }] });
  });
});
