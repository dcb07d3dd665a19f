import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The package root, found by walking up from this file: the same code runs as
 * TypeScript under gateway/src (tests) and compiled under dist/gateway/src.
 */
export const PACKAGE_ROOT: string = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, "package.json");
    if (existsSync(candidate) && JSON.parse(readFileSync(candidate, "utf8")).name === "probegate") return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("probegate package.json not found above " + fileURLToPath(import.meta.url));
    dir = parent;
  }
})();

export const VERSION: string = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")).version;

/** Where `npm run plugins:build` puts the bundled plugins. */
export const BUNDLED_PLUGINS_DIR = path.join(PACKAGE_ROOT, "dist", "plugins");
