// One way to run check plugins, whatever they are about. A scope names what
// a check is about (the node; a volume; later a stuck operation or an LNet
// server) and keys its instances ("node", a volume id). For one key, the
// runner reads each plugin's sources, reuses its stable verdict while every
// input is equal or calls the sandbox, and, once the consumer takes the
// results (settle), remembers the verdict and the round's epoch for the next
// call's round.previousEpoch and counts the evaluation as run or reused.
// What a result means (a readiness condition, a health entry) is the
// consumer's business; how often a scope runs is its Rounds' (rounds.ts).

import { withConfigFacts } from "./config-facts.js";
import type { CheckOutcome, PluginRuntime } from "../runtime/runtime.js";
import type { LoadedPlugin, Mode } from "../runtime/types.js";
import type { SourceCatalog } from "../engine/sources/index.js";
import { missingTools, readPluginSources, runPluginOn } from "./run-plugin.js";
import { keptWith, remember, reuse, type StableVerdict } from "./stable-memo.js";

type Read = Pick<SourceCatalog, "read">;

export type RunnerRuntime = Pick<PluginRuntime, "runCheck" | "configFor" | "isQuarantined">;

/** One plugin's result for one key of a scope. */
export interface CheckResult {
  plugin: LoadedPlugin;
  outcome: CheckOutcome;
  /** Sources whose program could not be run. */
  missingTools: readonly string[];
  ranAt: Date;
  /** The plugin was not called: its stable verdict stood, nothing it reads had changed (stable-memo.ts). */
  reused: boolean;
}

/** A result and what it was computed from, until its consumer settles it. */
export interface PendingResult extends CheckResult {
  kept: StableVerdict | undefined;
}

export interface RunInput {
  /** Where the plugins' sources are read; a scope may narrow it to its key, per plugin. */
  catalog: Read | ((p: LoadedPlugin) => Read);
  /** Facts the scope knows of its key (volume.id, …). */
  facts?: Readonly<Record<string, string>>;
  /** Epoch seconds of the round (the plugins' round.epoch). */
  epoch: number;
  /**
   * Plugins reading a source that needs facts run second, with the facts the
   * first ones' verdicts gave (on a clash, the plugin first by name wins).
   */
  needsFacts?: (p: LoadedPlugin) => boolean;
}

export interface ScopeOptions {
  /** The plugins' runtime and the gateway's mode (the input's mode). */
  runtime: RunnerRuntime;
  mode: Mode;
  /** Called once per settled result: the scope's run/reused count. */
  counted(plugin: LoadedPlugin, reused: boolean): void;
}

/** What the runner keeps for one plugin at one key. */
interface Memory {
  /** The epoch of the last round that called it: its next round.previousEpoch. */
  lastEpoch: number;
  /** Its last verdict, while it is a stable one: reused while its inputs are equal. */
  stable: StableVerdict | undefined;
}

/** One scope of checks: what its keys' plugins last answered, and its count. */
export class CheckScope {
  /** key → plugin name → memory */
  private readonly memory = new Map<string, Map<string, Memory>>();

  constructor(private readonly opts: ScopeOptions) {}

  /**
   * Runs `plugins` for `key`. Nothing is remembered until settle(): the
   * consumer may drop the results (a plugin replaced, a volume forgotten
   * while they ran).
   */
  async run(key: string, plugins: readonly LoadedPlugin[], input: RunInput): Promise<PendingResult[]> {
    const base = input.facts ?? {};
    if (!input.needsFacts) return Promise.all(plugins.map((p) => this.runOne(key, p, input, base)));
    const first = await Promise.all(plugins.filter((p) => !input.needsFacts!(p)).map((p) => this.runOne(key, p, input, base)));
    const later = plugins.filter(input.needsFacts);
    if (later.length === 0) return first;
    const facts = { ...mergeFacts(first), ...base };
    const second = await Promise.all(later.map((p) => this.runOne(key, p, input, facts)));
    return [...first, ...second];
  }

  /**
   * Takes results for `key`: each one's stable verdict is kept (or
   * forgotten), a call's epoch becomes the plugin's next previousEpoch (a
   * reused verdict saw nothing new), and the evaluation is counted.
   */
  settle(key: string, results: readonly PendingResult[], epoch: number): void {
    let memo = this.memory.get(key);
    if (!memo) this.memory.set(key, (memo = new Map()));
    for (const r of results) {
      const name = r.plugin.manifest.name;
      const m = memo.get(name) ?? { lastEpoch: 0, stable: undefined };
      if (!r.reused) m.lastEpoch = epoch;
      m.stable = r.kept;
      memo.set(name, m);
      this.opts.counted(r.plugin, r.reused);
    }
  }

  /** Forgets a key (a volume gone), or one plugin at it (a check removed). */
  forget(key: string, plugin?: string): void {
    if (plugin === undefined) this.memory.delete(key);
    else this.memory.get(key)?.delete(plugin);
  }

  /** Forgets, at `key`, the plugins not named: they are no longer loaded. */
  retain(key: string, plugins: ReadonlySet<string>): void {
    const memo = this.memory.get(key);
    if (!memo) return;
    for (const name of [...memo.keys()]) if (!plugins.has(name)) memo.delete(name);
  }

  /**
   * Reads the plugin's sources, then calls it unless its last verdict was
   * stable and every input is equal (module, usable configuration, facts,
   * each source result): then that verdict stands and no input is built, no
   * sandbox called. A quarantined plugin faulted elsewhere: its verdicts
   * stand no longer (fail closed).
   */
  private async runOne(key: string, p: LoadedPlugin, input: RunInput, facts: Readonly<Record<string, string>>): Promise<PendingResult> {
    const name = p.manifest.name;
    const { runtime, mode } = this.opts;
    const catalog = typeof input.catalog === "function" ? input.catalog(p) : input.catalog;
    const config = runtime.configFor(p);
    const sources = await readPluginSources({ catalog }, p, withConfigFacts(facts, config.value));
    const missing = missingTools(sources);
    const mem = this.memory.get(key)?.get(name);
    const last = mem?.stable;
    const reused = runtime.isQuarantined(p) ? undefined : reuse(last, p, config, facts, sources);
    // The kept verdict takes this round's results: equal, but the ones it held may be a listing's older copy.
    if (reused) return { plugin: p, outcome: reused, missingTools: missing, ranAt: new Date(), reused: true, kept: last && keptWith(last, sources) };
    const round = { epoch: input.epoch, previousEpoch: mem?.lastEpoch ?? 0 };
    const outcome = await runPluginOn({ runtime, mode }, p, sources, facts, round);
    return { plugin: p, outcome, missingTools: missing, ranAt: new Date(), reused: false, kept: remember(p, config, facts, sources, outcome) };
  }
}

/** Facts from first-stage verdicts; on a clash the plugin first by name wins, so rounds are deterministic. */
function mergeFacts(results: readonly CheckResult[]): Record<string, string> {
  const facts: Record<string, string> = {};
  const ordered = [...results].sort((a, b) => a.plugin.manifest.name.localeCompare(b.plugin.manifest.name));
  for (const r of ordered) {
    if (r.outcome.kind !== "verdict") continue;
    for (const [k, v] of Object.entries(r.outcome.output.facts)) if (!(k in facts)) facts[k] = v;
  }
  return facts;
}
