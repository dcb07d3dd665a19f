// `probegate plugin new NAME [--lang assemblyscript|rust|c]`: writes a
// standalone plugin project that builds and tests on its own, in any
// directory. AssemblyScript (ABI v1): `npm install && npm run build && npm
// test`; until @probegate/plugin-sdk is published, the project gets a copy of
// the SDK packed by this probegate installation (vendor/*.tgz), so it needs
// nothing but the npm registry (for AssemblyScript) and no path back to here.
// Rust and C (ABI v2, plugin-new-native.ts): `npm test` (or `node
// tools/build.mjs test`) builds with the system's compiler and runs the
// fixtures; no registry at all. The project files themselves are
// plugins/templates/<lang>/ (plugin-templates.ts fills them in).
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { copyFile, mkdir, readdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type ProjectFile, templateFiles } from "./plugin-templates.js";
import { PLUGIN_NAME_RE } from "../runtime/schema.js";

/** Directory names the in-repo plugins/ tree reserves. */
const RESERVED = new Set(["sdk", "test", "fixtures", "node_modules"]);
const DEFAULT_SOURCE = "proc.modules";

export interface ScaffoldOptions {
  /** Parent directory; the project goes to `<dir>/<name>/`. */
  dir: string;
  /** The packed SDK (`npm pack` output); default: the one this installation built (dist/sdk/). */
  sdkTarball?: string;
  /** Catalog or operator-defined source the skeleton reads (default `proc.modules`, a file source). */
  source?: string;
  /** The plugin's language (default assemblyscript). */
  lang?: PluginLang;
}

export const PLUGIN_LANGS = ["assemblyscript", "rust", "c"] as const;
export type PluginLang = (typeof PLUGIN_LANGS)[number];

export interface PackedSdk {
  tarball: string;
  name: string;
  version: string;
  assemblyscript: string;
}

/** Creates the project and returns the paths written (absolute). */
export async function scaffoldPlugin(name: string, opts: ScaffoldOptions): Promise<string[]> {
  if (typeof name !== "string" || !PLUGIN_NAME_RE.test(name)) {
    throw new Error(
      `invalid plugin name ${JSON.stringify(name)}: use 1-63 lowercase letters, digits and inner hyphens (${PLUGIN_NAME_RE.source})`,
    );
  }
  if (RESERVED.has(name)) throw new Error(`invalid plugin name "${name}": reserved for the plugins tree`);
  const source = opts.source ?? DEFAULT_SOURCE;
  if (!/^[a-z][a-z0-9_.-]{0,62}$/.test(source)) throw new Error(`invalid source name ${JSON.stringify(source)}`);
  const lang = opts.lang ?? "assemblyscript";
  if (!PLUGIN_LANGS.includes(lang)) throw new Error(`invalid language ${JSON.stringify(lang)}: use ${PLUGIN_LANGS.join(", ")}`);

  const target = join(resolve(opts.dir), name);
  if (existsSync(target) && (await readdir(target)).length > 0) {
    throw new Error(`${target} already exists and is not empty; refusing to overwrite it`);
  }
  if (lang !== "assemblyscript") {
    const { nativeProjectFiles } = await import("./plugin-new-native.js");
    return writeProject(target, nativeProjectFiles(lang, name, source, probegateRoot()));
  }
  const sdk = opts.sdkTarball ? describeTarball(resolve(opts.sdkTarball)) : findPackedSdk();
  const vendored = `vendor/${basename(sdk.tarball)}`;

  const vars = { name, source, sdk: sdk.name, sdkVersion: sdk.version, assemblyscript: sdk.assemblyscript, vendored };
  return writeProject(target, [...templateFiles(probegateRoot(), "assemblyscript", vars), { rel: vendored, from: sdk.tarball }]);
}

async function writeProject(target: string, files: ProjectFile[]): Promise<string[]> {
  const written: string[] = [];
  for (const f of files) {
    const path = join(target, f.rel);
    await mkdir(dirname(path), { recursive: true });
    if ("text" in f) await writeFile(path, f.text, { flag: "wx" });
    else await copyFile(f.from, path);
    written.push(path);
  }
  return written;
}

/** The probegate tree (checkout or installation) this file belongs to. */
export function probegateRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, "utf8")).name === "probegate") return dir;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  throw new Error("cannot find the probegate installation this command runs from (no package.json named probegate above it)");
}

/** The SDK packed by `npm run build` of the probegate tree this file belongs to. */
export function findPackedSdk(): PackedSdk {
  const dir = probegateRoot();
  const out = join(dir, "dist", "sdk");
  const tgz = existsSync(out) ? readdirSync(out).filter((f) => f.endsWith(".tgz")) : [];
  if (tgz.length !== 1) {
    throw new Error(`the packed plugin SDK is missing from ${out}; run \`npm run build\` (or \`npm run sdk:pack\`) in ${dir}`);
  }
  return describeTarball(join(out, tgz[0]!));
}

/** Name, version and compiler pin from the package.json staged beside the tarball (pack-sdk.mjs leaves it there). */
function describeTarball(tarball: string): PackedSdk {
  if (!existsSync(tarball)) throw new Error(`no packed SDK at ${tarball}`);
  const staged = join(dirname(tarball), "package", "package.json");
  if (!existsSync(staged)) throw new Error(`${staged} is missing; re-run \`npm run sdk:pack\``);
  const pkg = JSON.parse(readFileSync(staged, "utf8")) as { name: string; version: string; peerDependencies?: Record<string, string> };
  const as = pkg.peerDependencies?.assemblyscript;
  if (!as) throw new Error(`${staged} declares no assemblyscript peer dependency`);
  return { tarball, name: pkg.name, version: pkg.version, assemblyscript: as };
}
