import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { ReadinessEngine } from "../../src/engine/readiness-engine.js";
import type { SourceResult } from "../../src/engine/sources/index.js";
import type { Metrics } from "../../src/observability/metrics.js";
import { pluginMetricHooks } from "../../src/runtime/plugin-metrics.js";
import { PluginRuntime, type RuntimeOptions } from "../../src/runtime/runtime.js";

export const silentLogger = pino({ level: "silent" });

/** Polls until `fn` returns a truthy value; the deadline is generous on purpose (shared CI cores). */
export async function waitFor<T>(fn: () => T | Promise<T>, what: string, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function tempDir(prefix = "probegate-test-"): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

/**
 * A source catalog stand-in: `t.a`, `t.b`, `t.live` answer whatever the test
 * put in `outputs` (default "pass"); `t.nid` needs the fact lnet.selfNid and
 * answers with its value, like lnetctl.ping would need a NID.
 */
export class FakeCatalog {
  readonly outputs = new Map<string, string>();
  readonly reads: Array<{ name: string; facts: Record<string, string> }> = [];
  private readonly known = ["t.a", "t.b", "t.live", "t.nid"];

  has(name: string): boolean {
    return this.known.includes(name);
  }
  names(): string[] {
    return [...this.known];
  }
  requiredFacts(name: string): string[] {
    return name === "t.nid" ? ["lnet.selfNid"] : [];
  }
  async read(name: string, facts: Readonly<Record<string, string>>): Promise<SourceResult> {
    this.reads.push({ name, facts: { ...facts } });
    const now = Date.now();
    if (name === "t.nid") {
      const nid = facts["lnet.selfNid"];
      return nid
        ? { ok: true, exitCode: 0, stdout: nid, stderr: "", error: null, truncated: false, fetchedAtMs: now }
        : { ok: false, exitCode: null, stdout: "", stderr: "", error: "fact lnet.selfNid is not available", truncated: false, fetchedAtMs: now };
    }
    return { ok: true, exitCode: 0, stdout: this.outputs.get(name) ?? "pass", stderr: "", error: null, truncated: false, fetchedAtMs: now - 5 };
  }
}

/**
 * A ReadinessEngine over one plugin directory, wired as the gateway wires it
 * (cli/checks.ts): the runtime built first, with the plugin metric hooks, and
 * injected. Not started; engine.stop() also stops the runtime.
 */
export function engineOver(
  dir: string,
  opts: { catalog: FakeCatalog; metrics: Metrics; mode?: "node" | "controller"; checkIntervalMs?: number; runtime?: Partial<RuntimeOptions> },
): ReadinessEngine {
  const runtime = new PluginRuntime({
    dir,
    isKnownSource: (name) => opts.catalog.has(name),
    logger: silentLogger,
    ...pluginMetricHooks(opts.metrics),
    ...opts.runtime,
  });
  return new ReadinessEngine({
    mode: opts.mode ?? "node",
    catalog: opts.catalog,
    runtime,
    checkIntervalMs: opts.checkIntervalMs ?? 60_000,
    logger: silentLogger,
    metrics: opts.metrics,
  });
}
