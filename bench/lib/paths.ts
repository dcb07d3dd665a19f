import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Repository root, whether running from bench/ (vitest) or dist/bench/ (built). */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, "package.json")) && fs.existsSync(path.join(dir, "bench"))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error("cannot find the repository root");
}

/** Source file under bench/ (scripts, fixtures) */
export const benchSrc = (...p: string[]) => path.join(repoRoot(), "bench", ...p);
/** Compiled JS under dist/bench/ */
export const benchDist = (...p: string[]) => path.join(repoRoot(), "dist", "bench", ...p);
