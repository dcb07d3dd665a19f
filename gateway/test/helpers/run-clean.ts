import { spawn } from "node:child_process";

/** A child's environment without the npm_* variables of a surrounding `npm test`, as on a fresh shell. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
}

/** Runs argv (no shell) in cwd with cleanEnv(); stdout and stderr together. */
export function runClean(argv: string[], cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, out }));
  });
}
