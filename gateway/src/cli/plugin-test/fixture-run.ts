// Runs fixture files against one plugin and reports golden-file style: one
// line per case, a side-by-side table of expected and actual for a mismatch
// (with the plugin's trace lines), then `N passed, N failed`.

import { relative } from "node:path";
import type { Expectation, FixtureCase } from "./fixture-file.js";
import { FixtureError, readFixture } from "./fixture-file.js";
import type { CheckOutput } from "../../runtime/types.js";
import type { PluginUnderTest } from "./plugin-under-test.js";

export interface FixtureSummary {
  passed: number;
  failed: number;
  errors: number;
}

export interface Writer {
  write(s: string): unknown;
}

interface Row {
  field: string;
  expected: string;
  actual: string;
  ok: boolean;
}

/**
 * A list the fixture gives exactly, in order: one row per position (a missing
 * or extra entry fails), or one passing row when both are empty.
 */
function compareEntries<W, H>(
  rows: Row[],
  field: string,
  want: readonly W[],
  got: readonly H[],
  how: { same(want: W, have: H): boolean; expected(x: W): string; actual(x: H): string },
): void {
  const n = Math.max(want.length, got.length);
  if (n === 0) rows.push({ field, expected: "(none)", actual: "(none)", ok: true });
  for (let i = 0; i < n; i++) {
    const w = want[i];
    const h = got[i];
    rows.push({
      field: `${field}[${i}]`,
      expected: w !== undefined ? how.expected(w) : "(none)",
      actual: h !== undefined ? how.actual(h) : "(none)",
      ok: w !== undefined && h !== undefined && how.same(w, h),
    });
  }
}

/** Field by field; only the fields the fixture names are compared. */
export function compareVerdict(e: Expectation, v: CheckOutput): Row[] {
  const rows: Row[] = [{ field: "status", expected: e.status, actual: v.status, ok: e.status === v.status }];
  if (e.reason !== undefined) rows.push({ field: "reason", expected: e.reason, actual: v.reason, ok: e.reason === v.reason });
  if (e.message !== undefined) {
    rows.push({ field: "message", expected: `…${e.message}…`, actual: v.message, ok: v.message.includes(e.message) });
  }
  for (const [k, want] of Object.entries(e.facts ?? {})) {
    const got = Object.hasOwn(v.facts, k) ? v.facts[k]! : "(absent)";
    rows.push({ field: `facts.${k}`, expected: want, actual: got, ok: Object.hasOwn(v.facts, k) && got === want });
  }
  if (e.health !== undefined) {
    type Entry = { status: string; reason: string; message?: string; fs?: string };
    const fs = (x: Entry) => (x.fs !== undefined ? ` fs=${x.fs}` : "");
    compareEntries(rows, "health", e.health, v.health ?? [], {
      same: (want, have) =>
        want.status === have.status &&
        want.reason === have.reason &&
        (want.message === undefined || have.message.includes(want.message)) &&
        (want.fs === undefined || want.fs === have.fs),
      expected: (x) => `${x.status} ${x.reason}${fs(x)}${x.message !== undefined ? ` …${x.message}…` : ""}`,
      actual: (x) => `${x.status} ${x.reason}${fs(x)} ${x.message}`,
    });
  }
  if (e.events !== undefined) {
    const show = (x: { reason: string; fs?: string; target?: string; at?: number }) =>
      [x.reason, x.fs !== undefined ? `fs=${x.fs}` : "", x.target !== undefined ? `target=${x.target}` : "", x.at !== undefined ? `at=${x.at}` : ""].filter(Boolean).join(" ");
    compareEntries(rows, "events", e.events, v.events ?? [], {
      same: (want, have) =>
        want.reason === have.reason &&
        (want.fs === undefined || want.fs === have.fs) &&
        (want.target === undefined || want.target === have.target) &&
        (want.at === undefined || want.at === have.at),
      expected: show,
      actual: show,
    });
  }
  if (e.stable !== undefined) {
    const got = v.stable === true;
    rows.push({ field: "stable", expected: String(e.stable), actual: String(got), ok: got === e.stable });
  }
  return rows;
}

function table(rows: Row[]): string {
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
  const fw = Math.max(5, ...rows.map((r) => r.field.length));
  const ew = Math.min(40, Math.max(8, ...rows.map((r) => r.expected.length)));
  const head = `      ${"".padEnd(fw)}  ${"expected".padEnd(ew)}  actual`;
  const lines = rows.map((r) => `    ${r.ok ? " " : "✗"} ${r.field.padEnd(fw)}  ${clip(r.expected, ew).padEnd(ew)}  ${clip(r.actual, 200)}`);
  return [head, ...lines].join("\n");
}

export async function runFixtureFiles(put: PluginUnderTest, files: readonly string[], cwd: string, out: Writer): Promise<FixtureSummary> {
  const sum: FixtureSummary = { passed: 0, failed: 0, errors: 0 };
  const shown = (f: string) => {
    const r = relative(cwd, f);
    return r && !r.startsWith("..") ? r : f;
  };
  for (const file of files) {
    let c: FixtureCase;
    try {
      c = await readFixture(file);
    } catch (err) {
      if (!(err instanceof FixtureError)) throw err;
      sum.errors++;
      out.write(`ERROR ${shown(file)}\n${indent(err.message.split(file).join(shown(file)))}\n`);
      continue;
    }
    const r = await put.run(c);
    if (!r.ok) {
      sum.errors++;
      const line = problemLine(c, r.problem);
      out.write(`ERROR ${c.name} (${shown(file)})\n    ${shown(file)}:${line}: ${r.problem}\n`);
      continue;
    }
    const rows = compareVerdict(c.expect, r.verdict);
    const v = r.verdict;
    const got = `${v.status} ${v.reason}${r.outcome.kind === "fault" ? " (plugin fault)" : ""}`;
    if (rows.every((row) => row.ok)) {
      sum.passed++;
      out.write(`ok    ${c.name} — ${got}\n`);
      continue;
    }
    sum.failed++;
    out.write(`FAIL  ${c.name} (${shown(file)}) — got ${got}\n${table(rows)}\n`);
    if (!c.expect.message && !rows.some((row) => row.field === "message")) out.write(`      message   ${v.message}\n`);
    for (const n of r.notes) out.write(`      note: ${n}\n`);
    for (const t of r.traces) out.write(`      trace: ${t}\n`);
  }
  const errors = sum.errors > 0 ? `, ${sum.errors} error${sum.errors === 1 ? "" : "s"}` : "";
  out.write(`${sum.passed} passed, ${sum.failed} failed${errors}\n`);
  return sum;
}

function problemLine(c: FixtureCase, problem: string): number {
  if (problem.startsWith("ConfigInvalid") && c.configLine !== undefined) return c.configLine;
  for (const [name, line] of c.sourceLines) if (problem.includes(name)) return line;
  return 1;
}

function indent(s: string): string {
  return s.split("\n").map((l) => `    ${l}`).join("\n");
}
