#!/usr/bin/env node
// Compiles the command spawner (gateway/native/spawner.c) into
// dist/native/probegate-spawner with the first C compiler found (cc, gcc,
// clang; $CC first when set). Without one it says so and exits 0: the gateway
// then starts source commands itself (a fork per command; bench/README.md,
// "Fork cost"), so a fresh machine still builds, starts and tests.
//
//   node gateway/native/build.mjs
//
// Rebuilt only when the source, its header or these flags change; written to a temp file
// and renamed, so concurrent builders never leave half a binary.

import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = dirname(dirname(HERE));
const SRC = join(HERE, "spawner.c");
// The protocol's names, generated from gateway/src/exec/spawner-protocol.ts (npm run native:header).
const HEADER = join(HERE, "spawner-protocol.h");
const OUT_DIR = join(ROOT, "dist", "native");
const OUT = join(OUT_DIR, "probegate-spawner");
const STAMP = `${OUT}.hash`;
// Hardening as Debian builds it; the program is small, none of this costs anything measurable.
const FLAGS = [
  "-std=c11", "-O2", "-Wall", "-Wextra",
  "-fstack-protector-strong", "-D_FORTIFY_SOURCE=2", "-fPIE", "-pie", "-Wl,-z,relro,-z,now",
];

function findCompiler() {
  const candidates = [process.env.CC, "cc", "gcc", "clang"].filter(Boolean);
  for (const c of candidates) {
    const r = spawnSync(c, ["--version"], { stdio: "ignore" });
    if (r.status === 0) return c;
  }
  return undefined;
}

const cc = findCompiler();
if (!cc) {
  console.log("native: no C compiler (cc, gcc, clang) found: the command spawner is not built; the gateway starts source commands itself (costs a fork of the gateway per command)");
  process.exit(0);
}
const hash = createHash("sha256").update(readFileSync(SRC)).update(readFileSync(HEADER)).update(FLAGS.join(" ")).update(cc).digest("hex");
if (existsSync(OUT) && existsSync(STAMP) && readFileSync(STAMP, "utf8") === hash) process.exit(0);
mkdirSync(OUT_DIR, { recursive: true });
const tmp = `${OUT}.${process.pid}.tmp`;
const r = spawnSync(cc, [...FLAGS, "-o", tmp, SRC], { stdio: "inherit" });
if (r.status !== 0) {
  rmSync(tmp, { force: true });
  rmSync(OUT, { force: true });
  // A platform this C does not suit (no pipe2, no posix_spawn) still builds and runs, without the spawner.
  console.log(`native: ${cc} could not compile ${SRC}: the command spawner is not built; the gateway starts source commands itself`);
  process.exit(0);
}
renameSync(tmp, OUT);
writeFileSync(STAMP, hash);
console.log(`native: built ${OUT} with ${cc}`);
