// A checked-in file generated from code (docs/flags.md, the spawner's protocol
// header): written, or with `--check` compared, exiting 1 with the command
// that regenerates it when the checked-in copy is stale.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";

export function writeOrCheck(target, text, regenerate) {
  if (!process.argv.includes("--check")) {
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, text);
    return;
  }
  let current = "";
  try {
    current = readFileSync(target, "utf8");
  } catch {
    // missing counts as stale
  }
  if (current !== text) {
    process.stderr.write(`${path.relative(process.cwd(), target)} is stale: run ${regenerate}\n`);
    process.exit(1);
  }
}
