// One plugin loaded the way the gateway loads it (same validation, same
// sandbox, same input builder, same source replay), run against test cases.
// `plugin test` uses it for a single run from flags and for fixture files.

import { buildCheckInput, type RoundInfo } from "../../checks/check-input.js";
import type { SavedOutput, SourceCatalog, SourceResult } from "../../engine/sources/index.js";
import { replayOutput, replayProblem } from "../../engine/sources/replay.js";
import { HOST_COMPOSED_SOURCES } from "../../engine/sources/host-sources.js";
import { callCheck, type CheckOutcome } from "../../runtime/check-call.js";
import { applyHealthFamily } from "../../runtime/plugin-output.js";
import { loadPlugin } from "../../runtime/loader.js";
import { Sandbox } from "../../runtime/sandbox.js";
import { configDefaults } from "../../runtime/schema.js";
import { withConfigFacts } from "../../checks/config-facts.js";
import type { CheckOutput, LoadedPlugin, PluginManifest, PluginRefusal } from "../../runtime/types.js";

/**
 * Sources the engine composes itself rather than the catalog (the HOST's
 * statfs prober implements `volume.statfs`): known here so fixtures of volume
 * plugins can give them; replayed as generated output (they cannot fail).
 */
const HOST_SOURCES = new Set(HOST_COMPOSED_SOURCES);
const HOST_SOURCE_CAP = 1024 * 1024;

export interface CaseSpec {
  mode: "node" | "controller";
  facts: Record<string, string>;
  sources: ReadonlyMap<string, SavedOutput>;
  /** The plugin's configuration, checked against its declaration as the gateway checks NAME.yaml. */
  config?: Record<string, unknown>;
  /** The round the case runs in; absent: a first round starting now (previousEpoch 0), as on a fresh gateway. */
  round?: RoundInfo;
}

export type CaseResult =
  | { ok: false; problem: string }
  | { ok: true; outcome: CheckOutcome; /** What the gateway would report for the case: a fault is a `fail` condition with the fault as reason. */
      verdict: CheckOutput; traces: string[]; notes: string[]; input: string };

export interface LoadOutcome {
  plugin: PluginUnderTest | null;
  refusal: PluginRefusal | null;
}

export class PluginUnderTest {
  private traces: string[] = [];
  /** Configuration for cases that give none (`plugin test --config FILE`); else the declared defaults. */
  defaultConfig: Record<string, unknown> | undefined;

  private constructor(
    private readonly sandbox: Sandbox,
    private readonly plugin: LoadedPlugin,
    private readonly catalog: SourceCatalog,
    private readonly timeoutMs: number | undefined,
  ) {}

  static async load(bytes: Uint8Array, file: string, catalog: SourceCatalog, timeoutMs?: number): Promise<LoadOutcome> {
    // The sandbox posts a call's trace lines before its reply, so the lines
    // gathered between the start and the end of run() belong to that call.
    let sink: ((m: string) => void) | null = null;
    const sandbox = new Sandbox({ timeoutMs, onTrace: (_label, m) => sink?.(m) });
    const r = await loadPlugin(bytes, file, { sandbox, timeoutMs, isKnownSource: (n) => catalog.has(n) || HOST_SOURCES.has(n) });
    if (!r.ok) {
      await sandbox.close();
      return { plugin: null, refusal: r.refusal };
    }
    const put = new PluginUnderTest(sandbox, r.plugin, catalog, timeoutMs);
    sink = (m) => put.traces.push(m);
    return { plugin: put, refusal: null };
  }

  get manifest(): PluginManifest {
    return this.plugin.manifest;
  }

  get sha256(): string {
    return this.plugin.sha256;
  }

  /**
   * Sources the plugin lists but the case does not give are failed reads, as `plugin test` always did.
   * A mode the plugin does not declare is a problem unless `anyMode` (a by-hand run may ask what it would say).
   */
  async run(c: CaseSpec, { anyMode = false } = {}): Promise<CaseResult> {
    const m = this.plugin.manifest;
    if (!anyMode && !m.modes.includes(c.mode)) {
      return { ok: false, problem: `${m.name} declares modes ${m.modes.join(", ")}; the gateway never runs it in mode ${c.mode}` };
    }
    for (const name of c.sources.keys()) {
      if (!this.catalog.has(name) && !HOST_SOURCES.has(name)) {
        return { ok: false, problem: `unknown source ${name} (known: ${[...this.catalog.names(), ...HOST_SOURCES].join(", ")})` };
      }
    }
    const notes: string[] = [];
    const now = Date.now();
    const sources: Array<[string, SourceResult]> = [];
    // Sources see the plugin's own configuration as the gateway gives it (checks/config-facts.ts).
    const configured = await this.configFor(c);
    const sourceFacts = withConfigFacts(c.facts, configured.ok ? configured.value : undefined);
    for (const name of m.sources) {
      const saved = c.sources.get(name);
      if (saved === undefined) {
        notes.push(`no saved output for ${name}; the plugin sees a failed read`);
        sources.push([name, { ok: false, exitCode: null, stdout: "", stderr: "", error: `no saved output for ${name}`, truncated: false, fetchedAtMs: now }]);
        continue;
      }
      const r = this.catalog.has(name) ? await this.catalog.replay(name, saved, sourceFacts) : replayHostSource(name, saved, now);
      if ("problem" in r) return { ok: false, problem: r.problem };
      if (!r.ok && r.error?.startsWith("fact ")) notes.push(`${name}: ${r.error}, so the gateway does not run it`);
      sources.push([name, { ...r, fetchedAtMs: now }]);
    }
    for (const name of c.sources.keys()) {
      if (!m.sources.includes(name)) notes.push(`${m.name} does not read source ${name}; ignored`);
    }
    const config = await this.configFor(c);
    if (!config.ok) return { ok: false, problem: config.problem };
    const round = c.round ?? { epoch: Math.floor(now / 1000), previousEpoch: 0 };
    const input = buildCheckInput(c.mode, sources, c.facts, now, config.value, round);
    this.traces = [];
    let outcome = await callCheck(this.sandbox, this.plugin, input, this.timeoutMs);
    if (outcome.kind === "verdict") {
      const kept = applyHealthFamily(m.probe, outcome.output);
      outcome = kept.ok ? { ...outcome, output: kept.output } : { kind: "fault", reason: "PluginBadOutput", message: kept.message, durationMs: outcome.durationMs };
    }
    const traces = this.traces;
    this.traces = [];
    const verdict: CheckOutput =
      outcome.kind === "verdict"
        ? outcome.output
        : { status: "fail", reason: outcome.reason, message: outcome.message, facts: {} };
    return { ok: true, outcome, verdict, traces, notes, input };
  }

  private async configFor(c: CaseSpec): Promise<{ ok: true; value: Record<string, unknown> | undefined } | { ok: false; problem: string }> {
    const decl = this.plugin.manifest.config;
    const raw = c.config ?? this.defaultConfig;
    if (raw === undefined) return { ok: true, value: decl ? configDefaults(decl) : undefined };
    const { checkPluginConfig } = await import("../../runtime/plugin-config.js");
    const r = checkPluginConfig(raw, "config", this.plugin.manifest.name, decl);
    if (!r.ok) return { ok: false, problem: `ConfigInvalid: ${r.message}` };
    return { ok: true, value: decl ? r.value : undefined };
  }

  async close(): Promise<void> {
    await this.sandbox.close();
  }
}

function replayHostSource(name: string, saved: SavedOutput, now: number): SourceResult | { problem: string } {
  const shape = { kind: "generated", maxOutputBytes: HOST_SOURCE_CAP } as const;
  const problem = replayProblem(shape, saved);
  if (problem) return { problem: `${name}: ${problem}` };
  const { outcome: _outcome, ...rest } = replayOutput(shape, saved);
  return { ...rest, fetchedAtMs: now };
}
