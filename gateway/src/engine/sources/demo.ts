// Locating the demo node (fake lnetctl/lctl + scenario trees) shipped in
// gateway/demo. This module runs both as gateway/src/engine/sources/demo.ts
// (vitest, tsx) and as dist/gateway/src/engine/sources/demo.js (compiled),
// at different depths, so walk up to the directory that holds gateway/demo
// instead of counting "..".

import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const DEMO_RELATIVE = join("gateway", "demo");
const SCENARIO_NAME = /^[a-z0-9][a-z0-9_-]*$/;

let cachedRoot: string | undefined;

/** The gateway/demo directory of this checkout or installed package. */
export function demoRootDir(): string {
  if (cachedRoot) return cachedRoot;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, DEMO_RELATIVE);
    if (existsSync(join(candidate, "scenarios"))) return (cachedRoot = candidate);
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`demo files not found: no ${DEMO_RELATIVE}/scenarios above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** Directory holding the fake `lnetctl` and `lctl`; put it first in PATH. */
export function demoBinDir(): string {
  return join(demoRootDir(), "bin");
}

export function listDemoScenarios(): string[] {
  const dir = join(demoRootDir(), "scenarios");
  return readdirSync(dir)
    .filter((name) => SCENARIO_NAME.test(name) && statSync(join(dir, name)).isDirectory())
    .sort();
}

/**
 * gateway/demo/scenarios/<name>, for PROBEGATE_FAKE_LNET, --path.procfs
 * (<dir>/proc) and --path.sysfs (<dir>/sys).
 */
export function demoScenarioDir(name: string): string {
  const available = listDemoScenarios();
  if (!SCENARIO_NAME.test(name) || !available.includes(name)) {
    throw new Error(`unknown demo scenario ${JSON.stringify(name)}; available: ${available.join(", ")}`);
  }
  return join(demoRootDir(), "scenarios", name);
}
