// `probegate plugin new NAME [--lang assemblyscript|rust|c]`: writes a
// standalone plugin project that builds and tests on its own, in any
// directory. AssemblyScript (ABI v1): `npm install && npm run build && npm
// test`; until @probegate/plugin-sdk is published, the project gets a copy of
// the SDK packed by this probegate installation (vendor/*.tgz), so it needs
// nothing but the npm registry (for AssemblyScript) and no path back to here.
// Rust and C (ABI v2, plugin-new-native.ts): `npm test` (or `node
// tools/build.mjs test`) builds with the system's compiler and runs the
// fixtures; no registry at all.
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { copyFile, mkdir, readdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Plugin names per plugins/ABI.md (also the file name of the built .wasm). */
export const PLUGIN_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
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
    return writeProject(target, nativeProjectFiles(lang, name, source, probegateRoot(), [passFixture(source), failFixture(source)]));
  }
  const sdk = opts.sdkTarball ? describeTarball(resolve(opts.sdkTarball)) : findPackedSdk();
  const vendored = `vendor/${basename(sdk.tarball)}`;

  const files: Array<[string, string]> = [
    ["package.json", packageJson(name, sdk, vendored)],
    ["asconfig.json", `${JSON.stringify({ extends: `./node_modules/${sdk.name}/asconfig.json`, options: {} }, null, 2)}\n`],
    [join("assembly", "index.ts"), indexTemplate(name, source, sdk.name)],
    [join("assembly", "tsconfig.json"), `${JSON.stringify({ extends: "assemblyscript/std/assembly.json", include: ["./**/*.ts"] }, null, 2)}\n`],
    [join("fixtures", "two-lines.yaml"), passFixture(source)],
    [join("fixtures", "one-line.yaml"), failFixture(source)],
    [".gitignore", "node_modules/\nbuild/\n"],
    ["README.md", readmeTemplate(name, source, sdk, vendored)],
  ];
  return writeProject(target, [...files.map(([rel, text]) => ({ rel, text })), { rel: vendored, from: sdk.tarball }]);
}

/** A file of a new project: its text, or a file to copy. */
export type ProjectFile = { rel: string; text: string } | { rel: string; from: string };

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

function packageJson(name: string, sdk: PackedSdk, vendored: string): string {
  return `${JSON.stringify(
    {
      name,
      version: "0.1.0",
      private: true,
      description: `probegate check plugin ${name}`,
      type: "module",
      scripts: {
        build: `probegate-plugin build assembly/index.ts --out build/${name}.wasm`,
        test: `probegate-plugin test build/${name}.wasm --fixtures fixtures`,
      },
      devDependencies: {
        [sdk.name]: `file:${vendored}`,
        assemblyscript: sdk.assemblyscript,
      },
    },
    null,
    2,
  )}\n`;
}

function indexTemplate(name: string, source: string, sdk: string): string {
  return `// ${name}: TODO say what this check proves and why it matters.
import { Manifest, Opened, Result, checkSource, log, parseError, splitLines } from "${sdk}";

const SOURCE = "${source}";
// TODO replace this rule: the source must print at least MIN_LINES non-empty lines.
const MIN_LINES = 2;

export function manifest(): string {
  return new Manifest("${name}", "0.1.0", "TODO one-line description")
    .source(SOURCE)
    .toJson();
}

// checkSource() answers bad input, a missing or failed source and empty or
// binary output itself, and ends through respond(), which serialises the
// result and frees the call's memory (plugins use the minimal runtime).
export function check(input: string): string {
  return checkSource(input, SOURCE, evaluate);
}

function evaluate(o: Opened): Result {
  let count = 0;
  const lines = splitLines(o.text);
  for (let i = 0; i < lines.length; i++) if (lines[i].trim().length > 0) count++;
  // Shown by \`npm test\` when a case fails, and in the gateway log at --log-level debug.
  log(SOURCE + ": " + count.toString() + " non-empty line(s)");
  if (count == 0) return parseError(o.source, "no content");
  if (count < MIN_LINES) {
    return Result.fail("TooFewLines", SOURCE + " printed " + count.toString() + " line(s); need " + MIN_LINES.toString());
  }
  return Result.pass("Ok", SOURCE + " printed " + count.toString() + " line(s)");
}
`;
}

function passFixture(source: string): string {
  return `# A saved output the check must accept. Format: README.md, "Fixtures".
name: two lines pass
sources:
  ${source}:
    stdout: |
      first line
      second line
expect:
  status: pass
  reason: Ok
  message: "2 line(s)"
`;
}

function failFixture(source: string): string {
  return `# A saved output the check must reject, and why.
name: one line fails
sources:
  ${source}:
    stdout: |
      only line
expect:
  status: fail
  reason: TooFewLines
  message: "need 2"
`;
}

function readmeTemplate(name: string, source: string, sdk: PackedSdk, vendored: string): string {
  return `# ${name}

A probegate check plugin. TODO: what it verifies, its reasons (\`Ok\`,
\`TooFewLines\`, and the SDK's \`BadInput\`, \`SourceMissing\`, \`SourceFailed\`,
\`ParseError\`) and any facts it emits.

## The loop

    npm install        # AssemblyScript ${sdk.assemblyscript} from the registry, the SDK from ${vendored}
    npm run build      # -> build/${name}.wasm (compiler options, ABI checks and warnings from the SDK)
    npm test           # every fixtures/*.yaml through the gateway's own sandbox; exit 0/1/2

Edit \`assembly/index.ts\`, add a fixture for every case that matters (a
saved output from a real node is best), and repeat. A failing case prints
expected and actual side by side, with the plugin's \`log()\` lines.

One case by hand, with its traces (\`npx probegate-plugin test --help\` lists the flags):

    npx probegate-plugin test build/${name}.wasm --source ${source}=saved-output.txt
    npx probegate-plugin test build/${name}.wasm --source-fault ${source}=not-found

## Fixtures

One case per file in \`fixtures/\`:

\`\`\`yaml
name: one NI down                  # optional, default: the file name
mode: node                         # optional
facts: {lnet.selfNid: 10.0.0.10@tcp}
sources:
  ${source}:
    stdout: |                      # or stdoutFile: a path relative to this file
      ...
    stderr: ""                     # optional (commands only); or stderrFile
    exitCode: 0                    # optional (commands only), default 0
    fault: not-found               # optional: timeout | not-found | truncated
expect:
  status: fail                     # pass | warn | fail
  reason: TooFewLines              # optional
  message: "need 2"                # optional, a substring
  facts: {}                        # optional, a subset
\`\`\`

## Deploy

Copy \`build/${name}.wasm\` into the gateway's \`--plugins-dir\` (on Kubernetes:
add it to the plugins ConfigMap); it is loaded within seconds, without a
restart, and listed by \`curl -s 'localhost:29763/readyz?verbose'\`. A source
that is not built in must be declared to the gateway with \`--sources FILE\`
(and passed to \`probegate-plugin test\` with the same flag).

## The SDK

\`${sdk.name}\` ${sdk.version} (its major version is the plugin ABI) comes from
\`${vendored}\`, packed by the probegate installation that created this
project. Once the SDK is published, change this one line in \`package.json\`:

    "${sdk.name}": "file:${vendored}"   ->   "${sdk.name}": "^${sdk.version}"

and delete \`vendor/\`. Its README (\`node_modules/${sdk.name}/README.md\`)
documents the API and the reason-code conventions.
`;
}
