// The operator's `--sources FILE`: extra command sources, in YAML.
//
//   - name: lnet.peer_show
//     argv: [lnetctl, peer, show]
//     timeout: 3s
//     ttl: 2s
//     maxOutput: 256KiB   # optional; bytes, KiB or MiB
//
// Unknown keys are errors (a misspelt "timout" must not silently become the
// default). Every message names the file, the line, the entry and the field,
// because this file is usually edited inside a ConfigMap far from any tooling.

import { readFile } from "node:fs/promises";
import { LineCounter, parseDocument, type Document } from "yaml";
import { z } from "zod";
import { SourcesFileError } from "./sources-file-error.js";
import { parseDuration, parseSize } from "./units.js";

export interface CustomSourceConfig {
  name: string;
  argv: string[];
  timeoutMs: number;
  ttlMs: number;
  maxOutputBytes: number | undefined;
}

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

const entrySchema = z.strictObject({
  name: z.string().regex(SOURCE_NAME, `must match ${SOURCE_NAME.source}`),
  argv: argvField,
  timeout: durationField("timeoutMs", "3s"),
  ttl: durationField("ttlMs", "2s"),
  maxOutput: sizeField.optional(),
});

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

  return parsed.data.map((e) => ({
    name: e.name,
    argv: e.argv,
    timeoutMs: e.timeout,
    ttlMs: e.ttl,
    maxOutputBytes: e.maxOutput,
  }));
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
  const message =
    issue.code === "unrecognized_keys" ? `unknown key(s) ${issue.keys.map((k) => JSON.stringify(k)).join(", ")}` : issue.message;
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
