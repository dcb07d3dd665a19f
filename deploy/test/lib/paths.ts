import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const DEPLOY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const REPO = path.resolve(DEPLOY, "..");
export const KUSTOMIZE_DIR = path.join(DEPLOY, "kustomize");
export const CLI_MAIN = path.join(REPO, "dist/gateway/src/cli/main.js");
/** The default plugin set (override with PROBEGATE_DIST_PLUGINS to test another set). */
export const DIST_PLUGINS = process.env.PROBEGATE_DIST_PLUGINS ?? path.join(REPO, "dist/plugins");

/** The build output the brief allows skipping on (the lead's CI always builds first). */
export const BUILT = existsSync(CLI_MAIN);
export const NOT_BUILT_MESSAGE =
  `skipped: ${path.relative(REPO, CLI_MAIN)} is missing; run \`npm run build\` first (CI always does)`;
