#!/usr/bin/env node
// Writes docs/flags.md from the flag specs (gateway/src/cli/flags.ts, built to
// dist/ by `npm run ts:build`), so the reference and `probegate --help` cannot
// drift: both are generated from one list. `--check` exits 1 (naming the file)
// when the checked-in page is stale; gateway/test/docs.test.ts compares it too.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const target = path.join(root, "docs", "flags.md");
const { flagsMarkdown } = await import(path.join(root, "dist/gateway/src/cli/flags.js"));
const text = flagsMarkdown();

if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(target, "utf8");
  } catch {
    // missing counts as stale
  }
  if (current !== text) {
    process.stderr.write(`${path.relative(process.cwd(), target)} is stale: run npm run docs:flags\n`);
    process.exit(1);
  }
} else {
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, text);
}
