// The operator's `--sources FILE`: extra sources, in YAML. Commands:
//
//   - name: lnet.peer_show
//     argv: [lnetctl, peer, show]
//     timeout: 3s
//     ttl: 2s
//     maxOutput: 256KiB   # optional; bytes, KiB or MiB
//
// and read-only files under --path.sysfs or --path.procfs, by glob (one
// `PATH CONTENT` line per match; only * and ? as wildcards):
//
//   - name: ib.port_state
//     sysfs: class/infiniband/*/ports/*/state
//     ttl: 5s             # optional (default 1s)
//     maxFiles: 64        # optional (default 64)
//
// Unknown keys are errors (a misspelt "timout" must not silently become the
// default). Every message names the file, the line, the entry and the field,
// because this file is usually edited inside a ConfigMap far from any tooling.

import { readFile } from "node:fs/promises";
import { LineCounter, parseDocument, type Document } from "yaml";
import { z } from "zod";
import { SourcesFileError } from "./sources-file-error.js";
import { parseDuration, parseSize } from "./units.js";

export interface CustomCommandConfig {
  kind: "command";
  name: string;
  argv: string[];
  timeoutMs: number;
  ttlMs: number;
  maxOutputBytes: number | undefined;
  /** 1-based line of the entry, for messages about it after parsing. */
  line: number | "?";
}

export interface CustomFileConfig {
  kind: "file";
  name: string;
  root: "sysfs" | "procfs";
  /** Relative to the root; validated by globProblem(). */
  glob: string;
  ttlMs: number | undefined;
  maxOutputBytes: number | undefined;
  maxFiles: number;
  line: number | "?";
}

export type CustomSourceConfig = CustomCommandConfig | CustomFileConfig;

export const DEFAULT_MAX_FILES = 64;
const MAX_GLOB_SEGMENTS = 16;

/** Why GLOB cannot be a file source's pattern, or "" when it can. */
export function globProblem(glob: string): string {
  const example = "e.g. class/infiniband/*/ports/*/state";
  if (glob.length === 0) return `must name files, ${example}`;
  if (glob.startsWith("/")) return `must be relative to the root (--path.sysfs or --path.procfs), ${example}`;
  if (glob.includes("\0")) return "must not contain NUL characters";
  const segments = glob.split("/");
  if (segments.length > MAX_GLOB_SEGMENTS) return `at most ${MAX_GLOB_SEGMENTS} path segments`;
  for (const seg of segments) {
    if (seg === "") return "has an empty path segment (a doubled or trailing /)";
    if (seg === "." || seg === "..") return `"${seg}" segments are refused: a file source stays inside its root`;
    if (seg.includes("**")) return "** is not supported; use one * per directory level";
    if (/[[\]{}\\]/.test(seg)) return "only * and ? are supported as wildcards";
  }
  return "";
}

const globField = z
  .string()
  .max(4096)
  .superRefine((g, ctx) => {
    const problem = globProblem(g);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

export const SOURCE_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
// A bare name is looked up in PATH; anything with a slash must be absolute so
// the meaning of the file does not depend on the gateway's working directory.
const BARE_PROGRAM = /^[A-Za-z0-9_+][A-Za-z0-9._+-]*$/;

const LIMITS = {
  timeoutMs: { min: 1, max: 5 * 60_000 },
  ttlMs: { min: 0, max: 60 * 60_000 },
  maxOutputBytes: { min: 1, max: 64 * 1024 * 1024 },
};

function durationField(what: keyof typeof LIMITS, example: string) {
  const { min, max } = LIMITS[what];
  return z.union([z.string(), z.number()]).transform((v, ctx) => {
    if (typeof v === "number") {
      ctx.addIssue({ code: "custom", message: `needs a unit, e.g. "${example}" (a bare number is ambiguous)` });
      return z.NEVER;
    }
    const ms = parseDuration(v);
    if (ms === null) {
      ctx.addIssue({ code: "custom", message: `${JSON.stringify(v)} is not a duration like "500ms", "3s" or "1m"` });
      return z.NEVER;
    }
    if (ms < min || ms > max) {
      ctx.addIssue({ code: "custom", message: `must be between ${min} ms and ${max} ms, got ${ms} ms` });
      return z.NEVER;
    }
    return ms;
  });
}

const sizeField = z.union([z.string(), z.number()]).transform((v, ctx) => {
  const bytes = parseSize(v);
  const { min, max } = LIMITS.maxOutputBytes;
  if (bytes === null) {
    ctx.addIssue({ code: "custom", message: `${JSON.stringify(v)} is not a size like 65536, "64KiB" or "1MiB"` });
    return z.NEVER;
  }
  if (bytes < min || bytes > max) {
    ctx.addIssue({ code: "custom", message: `must be between ${min} and ${max} bytes, got ${bytes}` });
    return z.NEVER;
  }
  return bytes;
});

const argvField = z
  .array(
    z
      .string()
      .max(4096)
      .refine((s) => !s.includes("\0"), "must not contain NUL characters"),
  )
  .min(1, "must name a program")
  .max(64, "at most 64 arguments")
  .superRefine((argv, ctx) => {
    const program = argv[0];
    if (program === undefined) return;
    if (!(BARE_PROGRAM.test(program) || (program.startsWith("/") && !program.endsWith("/")))) {
      ctx.addIssue({
        code: "custom",
        path: [0],
        message: `${JSON.stringify(program)} must be a bare command name (found on PATH) or an absolute path`,
      });
    }
  });

const entrySchema = z
  .strictObject({
    name: z.string().regex(SOURCE_NAME, `must match ${SOURCE_NAME.source}`),
    argv: argvField.optional(),
    sysfs: globField.optional(),
    procfs: globField.optional(),
    timeout: durationField("timeoutMs", "3s").optional(),
    ttl: durationField("ttlMs", "2s").optional(),
    maxOutput: sizeField.optional(),
    maxFiles: z.number().int("must be a whole number").min(1).max(1024).optional(),
  })
  .superRefine((e, ctx) => {
    const kinds = (["argv", "sysfs", "procfs"] as const).filter((k) => e[k] !== undefined);
    if (kinds.length === 0) {
      ctx.addIssue({
        code: "custom",
        message: "needs argv (a command, e.g. argv: [lnetctl, peer, show]) or a read-only file source (sysfs: GLOB or procfs: GLOB)",
      });
      return;
    }
    if (kinds.length > 1) {
      ctx.addIssue({ code: "custom", path: [kinds[1]!], message: `takes one of argv, sysfs and procfs; this entry also has ${kinds[0]}` });
      return;
    }
    if (kinds[0] === "argv") {
      if (e.timeout === undefined) ctx.addIssue({ code: "custom", path: ["timeout"], message: "required, a duration such as 5s" });
      if (e.ttl === undefined) ctx.addIssue({ code: "custom", path: ["ttl"], message: "required, a duration such as 2s" });
      if (e.maxFiles !== undefined) ctx.addIssue({ code: "custom", path: ["maxFiles"], message: "only for sysfs and procfs sources" });
    } else if (e.timeout !== undefined) {
      ctx.addIssue({ code: "custom", path: ["timeout"], message: "only for argv sources (file reads have no timeout)" });
    }
  });

/** What a missing key should say: what it is and an example. */
const REQUIRED_HINTS: Record<string, string> = {
  name: "a source name such as lnet.peer_show",
  argv: "a command such as [lnetctl, peer, show]",
  timeout: "a duration such as 5s",
  ttl: "a duration such as 2s",
};

const fileSchema = z.array(entrySchema, { error: "expected a list of sources" }).max(256);


export async function loadSourcesFile(file: string, reservedNames: ReadonlySet<string>): Promise<CustomSourceConfig[]> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "EIO";
    throw new SourcesFileError(`cannot read sources file ${file}: ${code}`);
  }
  return parseSourcesYaml(text, file, reservedNames);
}

/** Exposed for tests; `file` is only used in messages. */
export function parseSourcesYaml(
  text: string,
  file: string,
  reservedNames: ReadonlySet<string>,
): CustomSourceConfig[] {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => {
      const line = lineCounter.linePos(e.pos[0]).line;
      return `${file}:${line}: YAML syntax: ${e.message.split("\n")[0]}`;
    });
    throw fail(file, problems);
  }

  const parsed = fileSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => describeIssue(file, doc, lineCounter, issue));
    throw fail(file, problems);
  }

  const problems: string[] = [];
  const seen = new Map<string, number>();
  parsed.data.forEach((entry, i) => {
    const where = `${file}:${lineOf(doc, lineCounter, [i, "name"])}: entry ${i} (${JSON.stringify(entry.name)}): name`;
    if (reservedNames.has(entry.name)) problems.push(`${where}: shadows the built-in source ${entry.name}`);
    const first = seen.get(entry.name);
    if (first !== undefined) problems.push(`${where}: duplicates entry ${first}`);
    else seen.set(entry.name, i);
  });
  if (problems.length > 0) throw fail(file, problems);

  return parsed.data.map((e, i): CustomSourceConfig => {
    const line = lineOf(doc, lineCounter, [i]);
    if (e.argv !== undefined) {
      return { kind: "command", name: e.name, argv: e.argv, timeoutMs: e.timeout!, ttlMs: e.ttl!, maxOutputBytes: e.maxOutput, line };
    }
    const root = e.sysfs !== undefined ? "sysfs" : "procfs";
    return {
      kind: "file",
      name: e.name,
      root,
      glob: (e.sysfs ?? e.procfs)!,
      ttlMs: e.ttl,
      maxOutputBytes: e.maxOutput,
      maxFiles: e.maxFiles ?? DEFAULT_MAX_FILES,
      line,
    };
  });
}

function fail(file: string, problems: string[]): SourcesFileError {
  return new SourcesFileError(`invalid sources file ${file}:\n  ${problems.join("\n  ")}`);
}

function describeIssue(file: string, doc: Document, lc: LineCounter, issue: z.core.$ZodIssue): string {
  const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
  const line = lineOf(doc, lc, path);
  if (path.length === 0) return `${file}:${line}: ${issue.message}`;
  const [index, ...field] = path;
  const name = doc.getIn([index, "name"]);
  const entry = `entry ${String(index)}${typeof name === "string" ? ` (${JSON.stringify(name)})` : ""}`;
  const fieldText = field.length > 0 ? `: ${field.map(String).join(".")}` : "";
  const missing = issue.code === "invalid_type" && field.length === 1 && doc.getIn(path) === undefined && typeof field[0] === "string";
  const message =
    issue.code === "unrecognized_keys"
      ? `unknown key(s) ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}`
      : missing
        ? `required, ${REQUIRED_HINTS[field[0] as string] ?? "see the --sources documentation"}`
        : issue.message;
  return `${file}:${line}: ${entry}${fieldText}: ${message}`;
}

/** Line of the deepest node on `path` that exists (a missing field points at its entry). */
function lineOf(doc: Document, lc: LineCounter, path: ReadonlyArray<string | number>): number | "?" {
  for (let n = path.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
    if (range) return lc.linePos(range[0]).line;
  }
  return "?";
}
