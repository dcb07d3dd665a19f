// Resolving a program name ourselves, instead of letting spawn() do it, turns
// "lnetctl is not installed" into a clean, stable error text
// (`ENOENT: lnetctl not found on PATH`) that plugins can match on, rather than
// an asynchronous spawn error whose wording depends on libuv.

import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { isAbsolute, join } from "node:path";

export type Resolution = { ok: true; path: string } | { ok: false; error: string };

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    if (!(await stat(path)).isFile()) return false;
  } catch {
    return false;
  }
  return isExecutable(path);
}

/**
 * Where a bare name was last found, per PATH. A round starts the same few
 * programs every time, and a search costs a stat and an access per PATH
 * entry tried (~9 ms of a minute's main-thread CPU profile on the LNet node,
 * docs/performance.md). resolveProgram checks a found one with one access;
 * locateProgram trusts it, and the start that follows is the check. The full
 * search runs again when either fails, and at least every FOUND_TTL_MS, so a
 * program installed earlier in PATH later is still picked up.
 */
const found = new Map<string, { path: string; at: number }>();
const FOUND_TTL_MS = 60_000;
const FOUND_MAX = 64;

/**
 * `program` is a bare name (searched in PATH) or an absolute path.
 * Empty PATH entries are skipped: POSIX reads them as "current directory",
 * and a gateway must never run whatever happens to sit in its cwd.
 */
export async function resolveProgram(program: string, envPath: string | undefined): Promise<Resolution> {
  const known = rememberedPath(program, envPath);
  if (known !== undefined && (await isExecutable(known))) return { ok: true, path: known };
  return searchProgram(program, envPath);
}

/**
 * Where a bare name was last found on this PATH, trusted without a check:
 * for a caller that starts the program at once, where the start is the
 * check. Such a caller must call searchProgram when a start from a
 * `remembered` path fails as a missing or non-executable file would
 * (run-command.ts), so the result is what a search would have given.
 * Saves the access() per command (a thread-pool round trip each).
 */
export async function locateProgram(program: string, envPath: string | undefined): Promise<Resolution & { remembered?: true }> {
  const known = rememberedPath(program, envPath);
  if (known !== undefined) return { ok: true, path: known, remembered: true };
  return searchProgram(program, envPath);
}

const keyOf = (program: string, envPath: string | undefined): string => `${envPath ?? ""}\0${program}`;

function rememberedPath(program: string, envPath: string | undefined): string | undefined {
  const known = found.get(keyOf(program, envPath));
  return known && Date.now() - known.at < FOUND_TTL_MS ? known.path : undefined;
}

/** Searches PATH again, whatever was remembered of `program` (which is forgotten first). */
export async function searchProgram(program: string, envPath: string | undefined): Promise<Resolution> {
  if (isAbsolute(program)) {
    return (await isExecutableFile(program))
      ? { ok: true, path: program }
      : { ok: false, error: notFoundError(program) };
  }
  if (program.length === 0 || program.includes("/")) {
    return { ok: false, error: `ENOENT: ${program} is neither a bare command name nor an absolute path` };
  }
  const key = keyOf(program, envPath);
  found.delete(key);
  for (const dir of (envPath ?? "").split(":")) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, program);
    if (await isExecutableFile(candidate)) {
      if (found.size >= FOUND_MAX) found.clear();
      found.set(key, { path: candidate, at: Date.now() });
      return { ok: true, path: candidate };
    }
  }
  return { ok: false, error: notFoundError(program) };
}

/** What a run of a program that is not installed reports (bare names; see resolveProgram). */
export function notFoundError(program: string): string {
  return isAbsolute(program) ? `ENOENT: ${program} not found or not executable` : `ENOENT: ${program} not found on PATH`;
}
