// A volume check is handed only its own mount's Lustre imports
// (storage-health/scoped-sources.ts). The restriction must change the cost of a
// verdict, never the verdict: the bundled volume-lustre-health plugin (which
// reads the state listing, lctl.import_states) is run on every one of its
// fixtures, and on listings of several mounts in every Lustre version's
// format, once with the whole listing and once with the restricted one, and
// must answer byte for byte the same. The import listing (lctl.imports, for
// operators' checks) is scoped by the same index and checked for its own rules.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderGetname, renderImports, renderStates } from "../demo/lib/fake-lustre.js";
import { buildCheckInput } from "../src/checks/check-input.js";
import { scopeListing, volumeScopedCatalog } from "../src/storage-health/scoped-sources.js";
import type { SourceResult } from "../src/engine/sources/index.js";
import { keptWith, remember, reuse, type CallConfig, type StableVerdict } from "../src/checks/stable-memo.js";
import type { CheckOutcome } from "../src/runtime/runtime.js";
import type { LoadedPlugin } from "../src/runtime/types.js";
import { readFixture } from "../src/cli/plugin-test/fixture-file.js";
import { loadPlugin } from "../../plugins/test/harness.js";
import { ROOT } from "./helpers/gateway-process.js";

const FIXTURES = join(ROOT, "plugins", "volume-lustre-health", "fixtures");
const NOW = 1764000700_000;

function result(stdout: string, over: Partial<SourceResult> = {}): SourceResult {
  return Object.freeze({ ok: true, exitCode: 0, stdout, stderr: "", error: null, truncated: false, fetchedAtMs: NOW - 5, ...over });
}

type Sources = Record<string, SourceResult>;

/** The listing sources as the host now hands them to this volume's check. */
function scoped(sources: Sources, facts: Record<string, string>): Sources {
  const gn = sources["lfs.getname"];
  if (!gn) return sources;
  const paths = [facts["volume.stagingPath"], facts["volume.path"]].filter((p): p is string => !!p);
  const out = { ...sources };
  if (sources["lctl.imports"]) out["lctl.imports"] = scopeListing(sources["lctl.imports"], ".import=", gn, paths);
  if (sources["lctl.import_states"]) out["lctl.import_states"] = scopeListing(sources["lctl.import_states"], ".state=", gn, paths);
  return out;
}

const plugin = loadPlugin("volume-lustre-health");
const ORDER = ["proc.mounts", "lctl.imports", "lctl.import_states", "lfs.getname", "volume.statfs"];

function verdict(sources: Sources, facts: Record<string, string>, round: { epoch: number; previousEpoch: number }): string {
  const list = ORDER.filter((n) => sources[n]).map((n) => [n, sources[n]!] as const);
  return plugin.checkRaw(buildCheckInput("node", list, facts, NOW, { importGraceSeconds: 75 }, round));
}

/** Both verdicts, and how much of the listing the volume was given. */
function both(sources: Sources, facts: Record<string, string>, round = { epoch: 1764000700, previousEpoch: 1764000670 }) {
  const s = scoped(sources, facts);
  return {
    whole: verdict(sources, facts, round),
    scoped: verdict(s, facts, round),
    kept: (s["lctl.import_states"]?.stdout.length ?? 0) / Math.max(1, sources["lctl.import_states"]?.stdout.length ?? 0),
    sameListing: s["lctl.import_states"] === sources["lctl.import_states"],
  };
}

describe("volume-lustre-health answers the same with its mount's imports only", () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".yaml"));

  it.each(files)("fixture %s", async (file) => {
    const c = await readFixture(join(FIXTURES, file));
    const sources: Sources = {};
    for (const [name, saved] of c.sources) {
      const failed = saved.fault !== undefined && saved.fault !== "truncated";
      sources[name] = result(saved.stdout, {
        ok: !failed && (saved.exitCode ?? 0) === 0,
        exitCode: failed ? null : (saved.exitCode ?? 0),
        stderr: saved.stderr ?? "",
        error: failed ? `fault ${saved.fault}` : null,
        truncated: saved.fault === "truncated",
      });
    }
    const r = both(sources, c.facts, c.round);
    expect(r.scoped).toBe(r.whole);
    expect(JSON.parse(r.whole).status).toBe(c.expect.status);
  });

  it("the fixture with the same file system mounted twice really is narrowed, the MGC shared", async () => {
    const c = await readFixture(join(FIXTURES, "same-fs-other-instance-down.yaml"));
    const gn = result(c.sources.get("lfs.getname")!.stdout);
    const states = result(c.sources.get("lctl.import_states")!.stdout);
    const s = scopeListing(states, ".state=", gn, [c.facts["volume.path"]!, c.facts["volume.stagingPath"]!]);
    expect(s.stdout.length).toBeLessThan(states.stdout.length);
    expect(s.stdout).toContain("-ffff8f0a3b5c9000.state=");
    expect(s.stdout).not.toContain("-ffff8f0a3b5ca800.state=");
    expect(s.stdout).toMatch(/^mgc\.MGC10\.0\.0\.2@tcp\.state=\ncurrent_state: FULL\n/m);
  });
});

const T = 1764000000;
const VERSIONS = ["2.12", "2.15", "2.15.7", "2.16", "2.17", "master"] as const;
const inst = (i: number) => (0xffff8f0a3b5c0000n + BigInt(i) * 0x1000n).toString(16);
const mp = (i: number) => `/var/lib/kubelet/pods/p${i}/volumes/kubernetes.io~csi/pv${i}/mount`;

/** Three mounts of lustrefs (kubelet mounts each PV on its own) and one of scratch. */
function node(version: string, states: Array<Record<string, string>>, history: Array<Record<string, Array<[number, string]>>> = []) {
  const filesystems = [0, 1, 2, 3].map((i) => ({
    name: i === 3 ? "scratch" : "lustrefs",
    instance: inst(i),
    mountpoint: mp(i),
    mdts: i === 1 ? 2 : 1,
    osts: 6,
    states: states[i] ?? {},
    history: history[i] ?? {},
  }));
  const desc = { version, mgsNid: "10.0.0.2@tcp", since: T, filesystems };
  const mounts = filesystems.map((f) => `10.0.0.2@tcp:/${f.name} ${f.mountpoint} lustre rw,flock 0 0\n`).join("");
  return {
    sources: {
      "proc.mounts": result(mounts, { exitCode: null }),
      "lctl.imports": result(renderImports(desc)),
      "lctl.import_states": result(renderStates(desc)),
      "lfs.getname": result(renderGetname(desc)),
      "volume.statfs": result(filesystems.map((f) => `${f.mountpoint} ok bd00bd0 rw\n`).join(""), { exitCode: null }),
    } as Sources,
    facts: (i: number) => ({ "volume.id": `pv${i}`, "volume.path": mp(i), "volume.stagingPath": "", "volume.readOnly": "false" }),
  };
}

const SCENARIOS: Array<[string, Array<Record<string, string>>, Array<Record<string, Array<[number, string]>>>]> = [
  ["all healthy", [], []],
  ["an OST down on mount 1 only", [{}, { OST0003: "DISCONN" }], [{}, { OST0003: [[T + 100, "DISCONN"]] }]],
  ["mount 0's MDT evicted, mount 2's OSTs settling", [{ MDT0000: "EVICTED" }, {}, { OST0001: "CONNECTING", OST0002: "DISCONN" }], [{ MDT0000: [[T + 690, "EVICTED"]] }, {}, { OST0001: [[T + 680, "CONNECTING"]], OST0002: [[T + 400, "DISCONN"]] }]],
  ["one of mount 1's two MDTs down, scratch idle", [{}, { MDT0001: "REPLAY_WAIT" }, {}, { OST0000: "IDLE" }], [{}, { MDT0001: [[T + 10, "REPLAY_WAIT"]] }]],
];

describe("several mounts of one file system, every version's format", () => {
  for (const version of VERSIONS) {
    it.each(SCENARIOS)(`${version}: %s`, (_name, states, history) => {
      const n = node(version, states, history);
      for (const i of [0, 1, 2, 3]) {
        const r = both(n.sources, n.facts(i));
        expect(r.scoped, `pv${i}`).toBe(r.whole);
        // Each volume got about a quarter of the listing (its blocks and the MGC's).
        expect(r.kept, `pv${i}`).toBeLessThan(0.5);
      }
    });
  }
});

describe("the whole listing whenever in doubt", () => {
  const n = node("2.15", [{}, { OST0003: "DISCONN" }], [{}, { OST0003: [[T + 100, "DISCONN"]] }]);
  const imports = n.sources["lctl.imports"]!;
  const states = n.sources["lctl.import_states"]!;
  const gn = n.sources["lfs.getname"]!;
  const noCurrentState = states.stdout.replace(new RegExp(`(OST0002-osc-${inst(2)}.state=\\n)current_state: FULL\\n`), "$1");
  const lostHeader = states.stdout.replace(`osc.lustrefs-OST0002-osc-${inst(2)}.state=\n`, "");

  it.each([
    ["getname failed", { ...n.sources, "lfs.getname": result("", { ok: false, exitCode: null, error: "ENOENT: lfs not found on PATH" }) }, n.facts(1)],
    ["getname names none of its paths", n.sources, { ...n.facts(1), "volume.path": "/mnt/elsewhere" }],
    ["the listing was cut", { ...n.sources, "lctl.import_states": result(states.stdout, { truncated: true }) }, n.facts(1)],
    ["another mount's state block has no current_state (damage is everyone's to see)", { ...n.sources, "lctl.import_states": result(noCurrentState) }, n.facts(1)],
    ["another mount's parameter line lost (two current_state in one block)", { ...n.sources, "lctl.import_states": result(lostHeader) }, n.facts(1)],
    ["its mount has no import block", { ...n.sources, "lfs.getname": result(`${gn.stdout}lustrefs-ffff000000000001 /mnt/new\n`) }, { ...n.facts(1), "volume.path": "/mnt/new" }],
  ] as Array<[string, Sources, Record<string, string>]>)("%s", (_name, sources, facts) => {
    const r = both(sources, facts);
    expect(r.sameListing).toBe(true);
    expect(r.scoped).toBe(r.whole);
  });

  it("an import listing is given whole when an import block has no state: (the same rule for operators' checks)", () => {
    const damaged = result(imports.stdout.replace(new RegExp(`(OST0002-osc-${inst(2)}.import=\\nimport:\\n.*\\n.*\\n)    state: FULL\\n`), "$1"));
    expect(damaged.stdout.length).toBeLessThan(imports.stdout.length);
    expect(scopeListing(damaged, ".import=", gn, [mp(1)])).toBe(damaged);
    const s = scopeListing(imports, ".import=", gn, [mp(1)]);
    expect(s.stdout).toContain(`OST0003-osc-${inst(1)}.import=`);
    expect(s.stdout).not.toContain(inst(0));
    expect(s.stdout).toMatch(/^mgc\.MGC10\.0\.0\.2@tcp\.import=$/m);
  });

  it("the only mount there is gets the listing itself, not a copy", () => {
    const only = result(`lustrefs-${inst(1)} ${mp(1)}\n`);
    expect(scopeListing(states, ".state=", only, [mp(1)])).toBe(states);
    expect(scopeListing(states, ".state=", gn, [mp(1)])).not.toBe(states);
  });

  it("the damage cases above really are damage to the plugin", () => {
    for (const damaged of [noCurrentState, lostHeader]) {
      expect(damaged.length).toBeLessThan(states.stdout.length);
      const r = JSON.parse(both({ ...n.sources, "lctl.import_states": result(damaged) }, n.facts(1)).whole);
      expect(r.health).toEqual([expect.objectContaining({ status: "DEGRADED", reason: "HealthUnknown" })]);
    }
  });

  it("one-line `name=value` headers and CRLF line ends are split like the plugin splits them", () => {
    // 2.12–2.15 print short values on the header's line; a tool on Windows-style pipes adds CR.
    const oneLine = states.stdout.replaceAll(".state=\ncurrent_state:", ".state=current_state:").replaceAll("\n", "\r\n");
    const s = scopeListing(result(oneLine), ".state=", gn, [mp(1)]);
    expect(s.stdout.length).toBeLessThan(oneLine.length / 2);
    expect(s.stdout).toContain(`OST0003-osc-${inst(1)}.state=current_state: DISCONN\r\n`);
    expect(s.stdout).not.toContain(inst(0));
    const r = both({ ...n.sources, "lctl.import_states": result(oneLine) }, n.facts(1));
    expect(r.scoped).toBe(r.whole);
    expect(JSON.parse(r.scoped).health).toEqual([expect.objectContaining({ reason: "OstUnreachable" })]);
  });

  it("a plugin that does not read lfs.getname gets the catalog as is", async () => {
    const catalog = { read: async (name: string) => (name === "lctl.import_states" ? states : gn) };
    expect(volumeScopedCatalog(catalog, ["lctl.import_states", "proc.mounts"])).toBe(catalog);
    const c = volumeScopedCatalog(catalog, ["lctl.import_states", "lfs.getname"]);
    expect((await c.read("lctl.import_states", n.facts(1))).stdout).not.toContain(inst(0));
    expect(await c.read("lfs.getname", n.facts(1))).toBe(gn);
  });
});

describe("a kept verdict and its volume's restricted listing", () => {
  // The memo (stable-memo.ts) keeps a volume's sources for as long as its
  // verdict stands; a restricted listing is made when read, and two made from
  // equal listings for the same mounts compare equal without being made.
  const n = node("2.15", [{}, { OST0003: "DISCONN" }], [{}, { OST0003: [[T + 100, "DISCONN"]] }]);
  const gn = n.sources["lfs.getname"]!;
  const states = n.sources["lctl.import_states"]!;
  const facts = n.facts(1);
  const config: CallConfig = { value: { importGraceSeconds: 75 }, usable: true };
  const stable = { kind: "verdict", output: { status: "warn", reason: "OstUnreachable", message: "OST0003 unreachable", facts: {}, stable: true } } as CheckOutcome;
  const p = { manifest: { name: "volume-lustre-health" } } as unknown as LoadedPlugin;
  const scope = (listing: SourceResult) => scopeListing(listing, ".state=", gn, [mp(1)]);
  const keptFrom = (listing: SourceResult) => remember(p, config, facts, [["lctl.import_states", scope(listing)]], stable)!;
  const reusedOn = (kept: StableVerdict, listing: SourceResult) => reuse(kept, p, config, facts, [["lctl.import_states", scope(listing)]]);

  it("the same listing printed again (a new result, an equal text) gives the same key and text, and the verdict stands", () => {
    const again = result(`${states.stdout}`);
    const [a, b] = [scope(states), scope(again)];
    expect(a).not.toBe(states);
    expect(a.stdoutKey).toBeDefined();
    expect(b.stdoutKey).toBe(a.stdoutKey);
    expect(b.stdout).toBe(a.stdout);
    expect(a.stdout).toContain(`OST0003-osc-${inst(1)}.state=`);
    expect(a.stdout).not.toContain(inst(0));
    expect(reusedOn(keptFrom(states), again)).toBe(stable);
  });

  it("another mount's blocks changed: a new key, the volume's text compared and found equal, the verdict stands", () => {
    const other = node("2.15", [{}, { OST0003: "DISCONN" }, { OST0001: "EVICTED" }], [{}, { OST0003: [[T + 100, "DISCONN"]] }, { OST0001: [[T + 200, "EVICTED"]] }]).sources["lctl.import_states"]!;
    expect(other.stdout).not.toBe(states.stdout);
    expect(scope(other).stdoutKey).not.toBe(scope(states).stdoutKey);
    expect(scope(other).stdout).toBe(scope(states).stdout);
    expect(reusedOn(keptFrom(states), other)).toBe(stable);
  });

  it("its own mount's blocks changed: the verdict is asked for again", () => {
    const healed = node("2.15", [], [{}, { OST0003: [[T + 100, "DISCONN"], [T + 160, "FULL"]] }]).sources["lctl.import_states"]!;
    expect(scope(healed).stdout).not.toBe(scope(states).stdout);
    expect(reusedOn(keptFrom(states), healed)).toBeUndefined();
  });

  it("a verdict reused holds this round's results from then on, not the listing it was made from", () => {
    const kept = keptFrom(states);
    const now: Array<[string, SourceResult]> = [["lctl.import_states", scope(result(`${states.stdout}`))]];
    const next = keptWith(kept, now);
    expect(next.sources).toBe(now);
    expect(next.outcome).toBe(kept.outcome);
    expect(keptWith(next, now)).toBe(next);
  });
});
