// Fixture files: one YAML case per file, saying what a plugin must answer to
// a set of saved source outputs (the format is in docs/plugins.md).
//
// Unknown keys are errors naming the key and its line: a misspelt `stdot:`
// would otherwise leave the source empty and the case testing nothing.

import { readFile, readdir, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { isMap, LineCounter, parseDocument, type Document } from "yaml";
import { z } from "zod";
import { FAULT_KINDS, type SavedOutput } from "../../engine/sources/index.js";

export interface FixtureCase {
  file: string;
  name: string;
  mode: "node" | "controller";
  facts: Record<string, string>;
  /** The plugin's configuration for this case (validated against the manifest when run). */
  config?: Record<string, unknown>;
  /** Line of `config:`, for configuration problems. */
  configLine?: number;
  sources: Map<string, SavedOutput>;
  /** Source name → line of its key, for problems found later (e.g. an impossible fault). */
  sourceLines: Map<string, number>;
  /** `round: {epoch, previousEpoch}`; absent: a first round starting now. */
  round?: { epoch: number; previousEpoch: number };
  expect: Expectation;
}

export interface Expectation {
  status: "pass" | "warn" | "fail";
  reason?: string;
  /** A substring of the message. */
  message?: string;
  /** A subset of the facts. */
  facts?: Record<string, string>;
  /**
   * Storage and volume plugins: exactly these health entries, in this order
   * (`[]`: none); `message` is a substring, `fs` exact when given.
   */
  health?: Array<{ status: string; reason: string; message?: string; fs?: string }>;
  /** Exactly these events, in this order; fields given are compared exactly. */
  events?: Array<{ reason: string; fs?: string; target?: string; at?: number }>;
  /** Whether the plugin marks the verdict stable (absent in the output counts as false). */
  stable?: boolean;
}

export class FixtureError extends Error {}

const scalar = z.union([z.string(), z.number(), z.boolean()], { error: "must be a string (quote values holding commas in a {…} map)" }).transform(String);
const factMap = z.record(z.string(), scalar);

const sourceSchema = z
  .strictObject({
    stdout: z.string().optional(),
    stdoutFile: z.string().min(1).optional(),
    stderr: z.string().optional(),
    stderrFile: z.string().min(1).optional(),
    exitCode: z.number().int().min(-2147483648).max(2147483647).optional(),
    fault: z.enum(FAULT_KINDS).optional(),
  })
  .refine((s) => !(s.stdout !== undefined && s.stdoutFile !== undefined), { message: "give stdout or stdoutFile, not both" })
  .refine((s) => !(s.stderr !== undefined && s.stderrFile !== undefined), { message: "give stderr or stderrFile, not both" });

const epochSeconds = z.number().int().min(0).max(2 ** 53 - 1);

const caseSchema = z.strictObject({
  name: z.string().min(1).optional(),
  round: z.strictObject({ epoch: epochSeconds, previousEpoch: epochSeconds.default(0) }).optional(),
  mode: z.enum(["node", "controller"]).optional(),
  facts: factMap.optional(),
  config: z.record(z.string(), z.unknown(), { error: "must be a map of the plugin's configuration keys" }).optional(),
  // `NAME:` with nothing under it is a source that printed nothing.
  sources: z.record(z.string(), z.preprocess((v) => v ?? {}, sourceSchema)).optional(),
  expect: z.strictObject({
    status: z.enum(["pass", "warn", "fail"]),
    reason: z.string().min(1).optional(),
    message: scalar.optional(),
    facts: factMap.optional(),
    health: z
      .array(z.strictObject({ status: z.string().min(1), reason: z.string().min(1), message: scalar.optional(), fs: z.string().optional() }))
      .nullish()
      .transform((h) => (h === null ? [] : h)),
    events: z
      .array(z.strictObject({ reason: z.string().min(1), fs: z.string().optional(), target: z.string().optional(), at: z.number().int().optional() }))
      .nullish()
      .transform((e) => (e === null ? [] : e)),
    // custom, not z.boolean(): a wrong type must not read as "missing expect.stable".
    stable: z.custom<boolean>((v) => typeof v === "boolean", { message: "must be true or false" }).optional(),
  }),
});

/** Parses one fixture; throws FixtureError with `file:line: problem` lines. */
export async function readFixture(file: string): Promise<FixtureCase> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new FixtureError(`${file}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseFixture(text, file);
}

export async function parseFixture(text: string, file: string): Promise<FixtureCase> {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new FixtureError(doc.errors.map((e) => `${file}:${lc.linePos(e.pos[0]).line}: YAML syntax: ${e.message.split("\n")[0]}`).join("\n"));
  }
  const parsed = caseSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    throw new FixtureError(parsed.error.issues.map((i) => describeIssue(file, doc, lc, i)).join("\n"));
  }
  const c = parsed.data;
  const dir = dirname(file);
  const sources = new Map<string, SavedOutput>();
  const sourceLines = new Map<string, number>();
  for (const [name, s] of Object.entries(c.sources ?? {})) {
    const at = lineOfKey(doc, lc, ["sources"], name);
    sourceLines.set(name, at);
    const spec = s;
    const saved: SavedOutput = {
      stdout: spec.stdoutFile !== undefined ? await readSide(file, at, dir, spec.stdoutFile, "stdoutFile") : (spec.stdout ?? ""),
    };
    const stderr = spec.stderrFile !== undefined ? await readSide(file, at, dir, spec.stderrFile, "stderrFile") : spec.stderr;
    if (stderr !== undefined) saved.stderr = stderr;
    if (spec.exitCode !== undefined) saved.exitCode = spec.exitCode;
    if (spec.fault !== undefined) saved.fault = spec.fault;
    sources.set(name, saved);
  }
  const expect: Expectation = { status: c.expect.status };
  if (c.expect.reason !== undefined) expect.reason = c.expect.reason;
  if (c.expect.message !== undefined) expect.message = c.expect.message;
  if (c.expect.facts !== undefined) expect.facts = c.expect.facts;
  if (c.expect.health !== undefined) expect.health = c.expect.health;
  if (c.expect.events !== undefined) expect.events = c.expect.events;
  if (c.expect.stable !== undefined) expect.stable = c.expect.stable;
  return {
    file,
    name: c.name ?? basename(file).replace(/\.ya?ml$/, ""),
    mode: c.mode ?? "node",
    facts: c.facts ?? {},
    ...(c.config !== undefined ? { config: c.config, configLine: lineOfKey(doc, lc, [], "config") } : {}),
    sources,
    sourceLines,
    ...(c.round !== undefined ? { round: c.round } : {}),
    expect,
  };
}

async function readSide(file: string, line: number, dir: string, rel: string, key: string): Promise<string> {
  try {
    // Decoded as the gateway decodes output: invalid bytes become U+FFFD.
    return await readFile(resolve(dir, rel), "utf8");
  } catch (err) {
    throw new FixtureError(`${file}:${line}: ${key} ${rel}: cannot read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** Every *.yaml / *.yml under the given files and directories (recursively), sorted per directory. */
export async function collectFixtureFiles(paths: readonly string[], cwd: string): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    const abs = resolve(cwd, p);
    let st;
    try {
      st = await stat(abs);
    } catch {
      throw new FixtureError(`${p}: no such file or directory`);
    }
    if (st.isDirectory()) {
      const found = await walk(abs);
      if (found.length === 0) throw new FixtureError(`${p}: no *.yaml fixture files in this directory`);
      out.push(...found);
    } else out.push(abs);
  }
  return out;
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (e.name.startsWith(".")) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else if (/\.ya?ml$/.test(e.name)) out.push(p);
  }
  return out;
}

function describeIssue(file: string, doc: Document, lc: LineCounter, issue: z.core.$ZodIssue): string {
  const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
  const where = path.map(String).join(".");
  if (issue.code === "unrecognized_keys") {
    return issue.keys
      .map((k) => `${file}:${lineOfKey(doc, lc, path, k)}: unknown key ${JSON.stringify(k)}${where ? ` in ${where}` : ""} (${knownKeys(path)})`)
      .join("\n");
  }
  const line = lineOfPath(doc, lc, path);
  if (issue.code === "invalid_type" && issue.input === undefined) return `${file}:${line}: missing ${where}`;
  return `${file}:${line}: ${where || "fixture"}: ${issue.message}`;
}

function knownKeys(path: ReadonlyArray<string | number>): string {
  if (path.length === 0) return "known: name, mode, facts, config, round, sources, expect";
  if (path[0] === "round") return "known: epoch, previousEpoch";
  if (path[0] === "expect" && path[1] === "health") return "known: status, reason, message, fs";
  if (path[0] === "expect" && path[1] === "events") return "known: reason, fs, target, at";
  if (path[0] === "expect") return "known: status, reason, message, facts, health, events, stable";
  if (path[0] === "sources") return "known: stdout, stdoutFile, stderr, stderrFile, exitCode, fault";
  return "not allowed here";
}

function lineOfKey(doc: Document, lc: LineCounter, path: ReadonlyArray<string | number>, key: string): number {
  const node = path.length === 0 ? doc.contents : doc.getIn(path, true);
  if (isMap(node)) {
    for (const pair of node.items) {
      const k = pair.key as { value?: unknown; range?: [number, number, number] } | null;
      if (k && String(k.value) === key && k.range) return lc.linePos(k.range[0]).line;
    }
  }
  return lineOfPath(doc, lc, path);
}

function lineOfPath(doc: Document, lc: LineCounter, path: ReadonlyArray<string | number>): number {
  for (let n = path.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lc.linePos(range[0]).line;
  }
  return 1;
}
