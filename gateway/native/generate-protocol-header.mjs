#!/usr/bin/env node
// Writes gateway/native/spawner-protocol.h from the protocol's one definition
// (gateway/src/exec/spawner-protocol.ts, built to dist/ by `npm run ts:build`).
// The header is checked in so the spawner compiles before (or without) the
// TypeScript build; `--check` exits 1 when it is stale, and
// gateway/test/spawner-protocol.test.ts compares it too.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const target = path.join(here, "spawner-protocol.h");
const { spawnerProtocolHeader } = await import(path.join(root, "dist/gateway/src/exec/spawner-protocol.js"));
const text = spawnerProtocolHeader();

if (process.argv.includes("--check")) {
  let current = "";
  try {
    current = readFileSync(target, "utf8");
  } catch {
    // missing counts as stale
  }
  if (current !== text) {
    process.stderr.write(`${path.relative(process.cwd(), target)} is stale: run npm run native:header\n`);
    process.exit(1);
  }
} else {
  writeFileSync(target, text);
}
