// Saved outputs turned into the source results a real run would have given:
// same error texts, same caps, same `truncated`/`exitCode` rules. `plugin test`
// and fixture files go through here, so a verdict seen offline is the verdict
// the gateway reaches on a node that printed the same thing.

import type { Produced, ReplayShape } from "./definitions.js";
import { fileOutput } from "./definitions.js";
import { notFoundError } from "../../exec/path-lookup.js";
import { missingFileError } from "./read-file.js";
import { capUtf8 } from "../../support/decode.js";
import { exitError, overflowError, timeoutError } from "../../exec/run-command.js";

export const FAULT_KINDS = ["timeout", "not-found", "truncated"] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface SavedOutput {
  stdout: string;
  /** Commands only. */
  stderr?: string;
  /** Commands only; default 0. Absent when the command did not exit (a fault). */
  exitCode?: number;
  /** The source did not produce a normal result: how it failed. */
  fault?: FaultKind;
}

/** Why this saved output cannot happen for a source of this shape, or null. */
export function replayProblem(shape: ReplayShape, saved: SavedOutput): string | null {
  const f = saved.fault;
  if (shape.kind !== "command") {
    if (saved.stderr) return "only command sources have stderr";
    if (saved.exitCode !== undefined) return "only command sources have an exit status";
    if (f === "timeout") return "file sources have no deadline, so they cannot time out";
    if (shape.kind === "generated" && f !== undefined) return `this source is composed by the gateway and cannot fail with ${f}`;
  }
  if (f !== undefined && saved.exitCode !== undefined) return `an exit status means the command exited; fault ${f} means it did not`;
  if (f === "not-found" && (saved.stdout || saved.stderr)) return "a program that was not found prints nothing";
  return null;
}

/** Call replayProblem() first: an impossible combination is replayed as best it can be. */
export function replayOutput(shape: ReplayShape, saved: SavedOutput): Produced {
  const cap = shape.maxOutputBytes;
  const out = capUtf8(saved.stdout, cap);
  if (shape.kind !== "command") {
    if (saved.fault === "not-found" && shape.kind === "file") {
      return { ok: false, exitCode: null, stdout: "", stderr: "", error: missingFileError(shape.path), truncated: false, outcome: "error" };
    }
    const what = shape.kind === "file" ? shape.path : "operstate";
    return fileOutput(out.text, out.cut || saved.fault === "truncated", cap, what);
  }
  const err = capUtf8(saved.stderr ?? "", cap);
  const base = { stdout: out.text, stderr: err.text, truncated: out.cut || err.cut };
  switch (saved.fault) {
    case "not-found":
      return { ok: false, exitCode: null, stdout: "", stderr: "", error: notFoundError(shape.program), truncated: false, outcome: "error" };
    case "timeout":
      // What the command printed before it was killed reaches the plugin.
      return { ...base, ok: false, exitCode: null, error: timeoutError(shape.label, shape.timeoutMs), outcome: "timeout" };
    case "truncated":
      return { ...base, ok: false, exitCode: null, truncated: true, error: overflowError(shape.label, cap), outcome: "truncated" };
    default: {
      // Output beyond the cap gets the command killed: its exit status is lost.
      if (base.truncated) return { ...base, ok: false, exitCode: null, error: overflowError(shape.label, cap), outcome: "truncated" };
      const code = saved.exitCode ?? 0;
      return code === 0
        ? { ...base, ok: true, exitCode: 0, error: null, outcome: "ok" }
        : { ...base, ok: false, exitCode: code, error: exitError(code), outcome: "error" };
    }
  }
}
