// `probegate plugin new NAME`: writes a plugin skeleton that builds with
// `npm run plugins:build` (build.mjs discovers every plugins/<name>/index.ts).
import { existsSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Plugin names per plugins/ABI.md (also the file name of the built .wasm). */
export const PLUGIN_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** Directory names build.mjs does not treat as plugins. */
const RESERVED = new Set(["sdk", "test", "fixtures", "node_modules"]);
const DEFAULT_SOURCE = "proc.modules";

export interface ScaffoldOptions {
  /** Parent directory; the plugin goes to `<dir>/<name>/`. Use the repo's `plugins/` to build it with the others. */
  dir: string;
  /** Directory of the AssemblyScript SDK; found automatically when omitted. */
  sdkDir?: string;
  /** Catalog or operator-defined source the skeleton reads (default `proc.modules`). */
  source?: string;
}

/** Creates the skeleton and returns the paths written (absolute). */
export async function scaffoldPlugin(name: string, opts: ScaffoldOptions): Promise<string[]> {
  if (typeof name !== "string" || !PLUGIN_NAME_RE.test(name)) {
    throw new Error(
      `invalid plugin name ${JSON.stringify(name)}: use 1-63 lowercase letters, digits and inner hyphens (${PLUGIN_NAME_RE.source})`,
    );
  }
  if (RESERVED.has(name)) throw new Error(`invalid plugin name "${name}": reserved for the plugins tree`);
  const source = opts.source ?? DEFAULT_SOURCE;
  if (!/^[a-z][a-z0-9_.-]{0,62}$/.test(source)) throw new Error(`invalid source name ${JSON.stringify(source)}`);

  const parent = resolve(opts.dir);
  const target = join(parent, name);
  if (existsSync(target) && (await readdir(target)).length > 0) {
    throw new Error(`${target} already exists and is not empty; refusing to overwrite it`);
  }
  const sdkDir = opts.sdkDir ? resolve(opts.sdkDir) : findSdk(parent);
  if (!sdkDir) {
    throw new Error(`cannot find the plugin SDK (plugins/sdk/index.ts); pass sdkDir`);
  }
  let sdkImport = relative(target, sdkDir).split(sep).join("/");
  if (!sdkImport.startsWith(".")) sdkImport = `./${sdkImport}`;

  const files: Array<[string, string]> = [
    ["index.ts", indexTemplate(name, source, sdkImport)],
    [join("fixtures", "pass.txt"), "first line\nsecond line\n"],
    [join("fixtures", "fail.txt"), "only line\n"],
    ["README.md", readmeTemplate(name, source)],
  ];
  await mkdir(join(target, "fixtures"), { recursive: true });
  const written: string[] = [];
  for (const [rel, text] of files) {
    const path = join(target, rel);
    await writeFile(path, text, { flag: "wx" });
    written.push(path);
  }
  return written;
}

/** `<dir>/sdk` when scaffolding into plugins/, else the SDK of the repo this file belongs to. */
function findSdk(parent: string): string | null {
  if (existsSync(join(parent, "sdk", "index.ts"))) return join(parent, "sdk");
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 8; i++) {
    const candidate = join(dir, "plugins", "sdk");
    if (existsSync(join(candidate, "index.ts"))) return candidate;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

function indexTemplate(name: string, source: string, sdk: string): string {
  return `// ${name}: TODO say what this check proves and why it matters.
import { Manifest, Opened, Result, checkSource, parseError, splitLines } from "${sdk}";

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
  if (count == 0) return parseError(o.source, "no content");
  if (count < MIN_LINES) {
    return Result.fail("TooFewLines", SOURCE + " printed " + count.toString() + " line(s); need " + MIN_LINES.toString());
  }
  return Result.pass("Ok", SOURCE + " printed " + count.toString() + " line(s)");
}
`;
}

function readmeTemplate(name: string, source: string): string {
  return `# ${name}

TODO: what this check verifies, its reasons (\`Ok\`, \`TooFewLines\`, \`ParseError\`,
\`SourceFailed\`, …) and any facts it emits. See plugins/README.md.

Build (from the repository root; builds every plugin directory):

    npm run plugins:build        # -> dist/plugins/${name}.wasm

Try it against the fixtures (exit 0 pass, 1 fail, 2 error):

    probegate plugin test dist/plugins/${name}.wasm --source ${source}=plugins/${name}/fixtures/pass.txt
    probegate plugin test dist/plugins/${name}.wasm --source ${source}=plugins/${name}/fixtures/fail.txt

Deploy: copy the .wasm into the gateway's \`--plugins-dir\`; it is picked up without a restart.
`;
}
