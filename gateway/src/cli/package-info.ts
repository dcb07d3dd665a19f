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

/** Where the image (deploy/Dockerfile) puts the same files: the first --plugins-dir of every shipped manifest. */
export const IMAGE_PLUGINS_DIR = "/etc/probegate/plugins";

/** The bundled Lustre node checks (plugins/*, the readiness ones; a test keeps this in step with dist/plugins). */
export const BUNDLED_CHECKS: readonly string[] = ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping", "net-interfaces"];
