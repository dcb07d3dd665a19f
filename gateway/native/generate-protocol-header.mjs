#!/usr/bin/env node
// Writes gateway/native/spawner-protocol.h from the protocol's one definition
// (gateway/src/exec/spawner-protocol.ts, built to dist/ by `npm run ts:build`).
// The header is checked in so the spawner compiles before (or without) the
// TypeScript build; `--check` exits 1 when it is stale, and
// gateway/test/spawner-protocol.test.ts compares it too.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeOrCheck } from "../generated-file.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..", "..");
const target = path.join(here, "spawner-protocol.h");
const { spawnerProtocolHeader } = await import(path.join(root, "dist/gateway/src/exec/spawner-protocol.js"));
const text = spawnerProtocolHeader();

writeOrCheck(target, text, "npm run native:header");
