import { oneLine } from "../support/one-line.js";
import type { Sandbox } from "./sandbox.js";
import { applyHealthFamily } from "./plugin-output.js";
import { parseCheckOutput } from "./schema.js";
import type { CheckOutput, FaultReason, LoadedPlugin } from "./types.js";

export type CheckOutcome =
  | { kind: "verdict"; output: CheckOutput; durationMs: number }
  | { kind: "fault"; reason: FaultReason | "PluginQuarantined"; message: string; durationMs: number };

const FAULT_MESSAGE_MAX = 2048;

/** The one path from an input string to a validated verdict: the engine and `plugin test` share it. */
export async function callCheck(sandbox: Sandbox, p: LoadedPlugin, input: string, timeoutMs?: number): Promise<CheckOutcome> {
  const r = await sandbox.call(p.key, "check", input, timeoutMs);
  // A fault's message quotes the plugin (abort text, a panic message): one line like a verdict's.
  if (!r.ok) return { kind: "fault", reason: r.reason, message: oneLine(r.message, FAULT_MESSAGE_MAX), durationMs: r.durationMs };
  const parsed = parseCheckOutput(r.output);
  if (!parsed.ok) return { kind: "fault", reason: "PluginBadOutput", message: oneLine(parsed.message, FAULT_MESSAGE_MAX), durationMs: r.durationMs };
  // The wrong family's status is bad output (counted towards quarantine like any);
  // a readiness or liveness plugin's health and events are dropped.
  const family = applyHealthFamily(p.manifest.probe, parsed.output);
  return family.ok
    ? { kind: "verdict", output: family.output, durationMs: r.durationMs }
    : { kind: "fault", reason: "PluginBadOutput", message: oneLine(family.message, FAULT_MESSAGE_MAX), durationMs: r.durationMs };
}
