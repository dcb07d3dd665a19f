#!/usr/bin/env node
// Writes docs/flags.md from the flag specs (gateway/src/cli/flags.ts, built to
// dist/ by `npm run ts:build`), so the reference and `probegate --help` cannot
// drift: both are generated from one list. `--check` exits 1 (naming the file)
// when the checked-in page is stale; gateway/test/docs.test.ts compares it too.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeOrCheck } from "./generated-file.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const target = path.join(root, "docs", "flags.md");
const { flagsMarkdown } = await import(path.join(root, "dist/gateway/src/cli/flags.js"));
const text = flagsMarkdown();

writeOrCheck(target, text, "npm run docs:flags");
