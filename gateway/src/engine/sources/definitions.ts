// The shapes of catalog entries. A definition turns the current facts into
// either a ready-to-run read (plus the cache key that identifies it) or an
// immediate failure, so invalid parameters never reach a process or a path.

import { access, realpath } from "node:fs/promises";
import { join } from "node:path";
import { expandGlob, within } from "./glob-files.js";
import { readCapped, readKernelFile } from "./read-file.js";
import { RepeatedOutput } from "../../exec/repeated-output.js";
import type { ProcessRoom } from "../../exec/room.js";
import type { CommandResult } from "../../exec/run-command.js";
import type { KeepWhile } from "./keep-while.js";
import type { ProcessNamespace } from "../../exec/process-namespace.js";
import { isValidIfaceName, isValidNid, quoteForMessage } from "./validate.js";

/** What running a source produced: a command's result shape, shared by file sources. */
export type Produced = CommandResult;


export type Prepared = { key: string; run: () => Promise<Produced> } | { error: string };

export interface SourceDef {
  name: string;
  kind: "command" | "file";
  ttlMs: number;
  /** Facts the source needs (the engine runs such sources in its second stage). */
  params: string[];
  timeoutMs?: number;
  /** For describe(): the argv or path, with `{fact}` placeholders. */
  argv?: string[];
  path?: string;
  /** How a real run reports its failures, so saved outputs can be replayed faithfully (replay.ts). */
  replay: ReplayShape;
  /** A successful result is kept past its TTL while this key reads the same (keep-while.ts). */
  keepWhile?: KeepWhile;
  prepare(facts: Readonly<Record<string, string>>): Prepared;
}

/**
 * command: a process (exit status, stderr, deadline, output cap per stream);
 * file: one read of `path` (no exit status, no stderr, no deadline);
 * generated: output the gateway composes itself (operstate lines), which cannot fail by itself.
 */
export type ReplayShape =
  | { kind: "command"; program: string; label: string; timeoutMs: number; maxOutputBytes: number }
  | { kind: "file"; path: string; maxOutputBytes: number }
  | { kind: "generated"; maxOutputBytes: number };

export interface FactParam {
  fact: string;
  /** "a valid NID" — used in `fact X is not <what>: "…"`. */
  what: string;
  valid(value: string): boolean;
}

export const NID_PARAM = (fact: string): FactParam => ({ fact, what: "a valid NID", valid: isValidNid });

export interface CommandSourceSpec {
  name: string;
  argv: ReadonlyArray<string | FactParam>;
  label: string;
  timeoutMs: number;
  ttlMs: number;
  maxOutputBytes: number;
  keepWhile?: KeepWhile;
}

function factValue(facts: Readonly<Record<string, string>>, fact: string): string | undefined {
  const v = Object.hasOwn(facts, fact) ? facts[fact] : undefined;
  return typeof v === "string" && v.length > 0 ? v : undefined;
}

/** A command source: its argv (facts checked before anything runs) run in the process room, cached by the catalog. */
export function commandSource(spec: CommandSourceSpec, room: ProcessRoom): SourceDef {
  const repeated = new RepeatedOutput(room.spawner?.slotFor(spec.name));
  const params = spec.argv.filter((a): a is FactParam => typeof a !== "string").map((p) => p.fact);
  const where = room.place.describe();
  return {
    name: spec.name,
    kind: "command",
    ttlMs: spec.ttlMs,
    timeoutMs: spec.timeoutMs,
    params,
    argv: [...where, ...spec.argv.map((a) => (typeof a === "string" ? a : `{${a.fact}}`))],
    replay: {
      kind: "command",
      program: String(where[0] ?? spec.argv[0]),
      label: spec.label,
      timeoutMs: spec.timeoutMs,
      maxOutputBytes: spec.maxOutputBytes,
    },
    ...(spec.keepWhile ? { keepWhile: spec.keepWhile } : {}),
    prepare(facts) {
      const argv: string[] = [];
      for (const a of spec.argv) {
        if (typeof a === "string") {
          argv.push(a);
          continue;
        }
        const value = factValue(facts, a.fact);
        if (value === undefined) return { error: `fact ${a.fact} is not available` };
        if (!a.valid(value)) return { error: `fact ${a.fact} is not ${a.what}: ${quoteForMessage(value)}` };
        argv.push(value);
      }
      return {
        key: argv.join("\0"),
        run: () => room.run({ argv, label: spec.label, timeoutMs: spec.timeoutMs, maxOutputBytes: spec.maxOutputBytes, repeated }),
      };
    },
  };
}

/** One of the kernel's own small generated files (/proc/modules, a mount table, the release): read on the event loop (read-file.ts, readKernelFile). */
export function fileSource(name: string, path: string, ttlMs: number, maxOutputBytes: number): SourceDef {
  return {
    name,
    kind: "file",
    ttlMs,
    params: [],
    path,
    replay: { kind: "file", path, maxOutputBytes },
    prepare: () => ({ key: "", run: () => readFileSource(path, maxOutputBytes) }),
  };
}

/**
 * A per-process procfs file of the --exec-in-process target, e.g. its
 * `mounts`: the mount table of the namespace the commands run in, which is
 * where a driver that mounts volumes itself keeps them.
 */
export function processFileSource(
  name: string,
  ns: Pick<ProcessNamespace, "prefix" | "procfs" | "name">,
  file: string,
  ttlMs: number,
  maxOutputBytes: number,
): SourceDef {
  return {
    name,
    kind: "file",
    ttlMs,
    params: [],
    path: join(ns.procfs, `{pid of ${ns.name}}`, file),
    replay: { kind: "file", path: join(ns.procfs, `{pid of ${ns.name}}`, file), maxOutputBytes },
    prepare: () => ({
      key: "",
      run: async () => {
        const found = await ns.prefix();
        if (!found.ok) return fileFailure(found.error, "");
        return readFileSource(join(ns.procfs, String(found.pid), file), maxOutputBytes);
      },
    }),
  };
}

/** The kernel's own small files only (read-file.ts, readKernelFile). */
async function readFileSource(path: string, maxOutputBytes: number): Promise<Produced> {
  const r = readKernelFile(path, maxOutputBytes);
  if (!r.ok) return fileFailure(r.error, "");
  return fileOutput(r.text, r.truncated, maxOutputBytes, path);
}

export function fileFailure(error: string, stdout = ""): Produced {
  return { ok: false, exitCode: null, stdout, stderr: "", error, truncated: false, outcome: "error" };
}

export function fileOutput(text: string, truncated: boolean, cap: number, what: string): Produced {
  return truncated
    ? {
        ok: false,
        exitCode: null,
        stdout: text,
        stderr: "",
        error: `EFBIG: ${what} exceeded ${cap} bytes`,
        truncated: true,
        outcome: "truncated",
      }
    : { ok: true, exitCode: null, stdout: text, stderr: "", error: null, truncated: false, outcome: "ok" };
}

// The most interfaces one read covers. Generous on purpose: a limit must never
// fail a healthy node (a 1,024-NI multi-rail node has 1,024 interfaces), while
// a fact naming more is garbage; reading them costs one small file each.
export const MAX_OPERSTATE_INTERFACES = 4096;

/**
 * `<sysfs>/class/net/IFACE/operstate` for each interface named in a
 * comma-separated fact. Output: one `IFACE STATE` line each, STATE being the
 * trimmed file content or `absent` when the interface directory is missing.
 * Blank items (e.g. a trailing comma) are skipped; duplicates are read once.
 */
export function operstateSource(
  name: string,
  sysfs: string,
  fact: string,
  ttlMs: number,
  maxOutputBytes: number,
): SourceDef {
  const netDir = join(sysfs, "class", "net");
  return {
    name,
    kind: "file",
    ttlMs,
    params: [fact],
    path: join(netDir, "{IFACE}", "operstate"),
    replay: { kind: "generated", maxOutputBytes },
    prepare(facts) {
      const raw = Object.hasOwn(facts, fact) ? facts[fact] : undefined;
      if (typeof raw !== "string") return { error: `fact ${fact} is not available` };
      const names = [...new Set(raw.split(",").map((s) => s.trim()).filter((s) => s.length > 0))];
      if (names.length > MAX_OPERSTATE_INTERFACES) {
        return {
          error: `fact ${fact} names ${names.length} interfaces; at most ${MAX_OPERSTATE_INTERFACES} are read (MAX_OPERSTATE_INTERFACES)`,
        };
      }
      const bad = names.find((n) => !isValidIfaceName(n));
      if (bad !== undefined) return { error: `fact ${fact} contains an invalid interface name: ${quoteForMessage(bad)}` };
      return { key: names.join(","), run: () => readOperstates(netDir, names, maxOutputBytes) };
    },
  };
}

async function readOperstates(netDir: string, names: string[], cap: number): Promise<Produced> {
  const lines: string[] = [];
  for (const iface of names) {
    const r = readKernelFile(join(netDir, iface, "operstate"), cap);
    if (r.ok) {
      lines.push(`${iface} ${r.text.trim()}`);
      continue;
    }
    // A missing operstate file inside an existing interface directory is an
    // unexpected sysfs, not an absent interface: report it as an error.
    if (r.code === "ENOENT" && !(await exists(join(netDir, iface)))) {
      lines.push(`${iface} absent`);
      continue;
    }
    return fileFailure(r.error, lines.map((l) => `${l}\n`).join(""));
  }
  const text = lines.map((l) => `${l}\n`).join("");
  return fileOutput(text, false, cap, "operstate");
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

/** A sysfs attribute file is at most a page; more is not an attribute. */
const GLOB_FILE_CAP = 4096;

/**
 * Files matching GLOB under ROOT: one `PATH CONTENT` line per match (PATH
 * relative to the root, CONTENT the trimmed text with line breaks as spaces,
 * or `!CODE` such as `!EACCES` when the file cannot be read). More than
 * `maxFiles` matches, or more than `maxOutputBytes`, fails the read with the
 * lines so far (truncated). A match that resolves outside the root fails it.
 */
export function globFileSource(name: string, root: string, glob: string, ttlMs: number, maxOutputBytes: number, maxFiles: number): SourceDef {
  return {
    name,
    kind: "file",
    ttlMs,
    params: [],
    path: join(root, glob),
    // Composed by the gateway from many files, like operstate: a saved output is replayed as given.
    replay: { kind: "generated", maxOutputBytes },
    prepare: () => ({ key: "", run: () => readGlob(root, glob, maxOutputBytes, maxFiles) }),
  };
}

async function readGlob(root: string, glob: string, cap: number, maxFiles: number): Promise<Produced> {
  let rootReal: string;
  try {
    rootReal = await realpath(root);
  } catch (err) {
    return fileFailure(`${(err as NodeJS.ErrnoException).code ?? "EIO"}: ${root} cannot be read`, "");
  }
  let expansion;
  try {
    expansion = await expandGlob(root, glob, maxFiles);
  } catch (err) {
    return fileFailure(`E2BIG: ${glob}: ${(err as Error).message}`, "");
  }
  let text = "";
  for (const rel of expansion.matches) {
    const path = join(root, rel);
    let real: string;
    try {
      real = await realpath(path);
    } catch {
      continue; // gone since the expansion
    }
    if (!within(rootReal, real)) return fileFailure(`EXDEV: ${rel} resolves to ${real}, outside ${root}; refused`, text);
    const r = await readCapped(path, GLOB_FILE_CAP);
    const content = r.ok ? r.text.trim().replace(/\s*[\r\n]+\s*/g, " ").replace(/\p{Cc}/gu, "?") : `!${r.code}`;
    const line = `${rel} ${content}\n`;
    if (Buffer.byteLength(text) + Buffer.byteLength(line) > cap) {
      return { ok: false, exitCode: null, stdout: text, stderr: "", error: `EFBIG: ${glob} exceeded ${cap} bytes`, truncated: true, outcome: "truncated" };
    }
    text += line;
  }
  if (expansion.more) {
    return { ok: false, exitCode: null, stdout: text, stderr: "", error: `E2BIG: ${glob} matched more than ${maxFiles} files`, truncated: true, outcome: "truncated" };
  }
  return { ok: true, exitCode: null, stdout: text, stderr: "", error: null, truncated: false, outcome: "ok" };
}
