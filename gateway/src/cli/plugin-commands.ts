import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { pino } from "pino";
import { buildCheckInput } from "../engine/check-input.js";
import { SourceCatalog, type SourceResult } from "../engine/sources/index.js";
import { inspectPlugin, runPluginOnce, type InspectResult } from "../runtime/inspect.js";
import { sha256Hex } from "../runtime/loader.js";
import { DEFAULTS, type PluginManifest } from "../runtime/types.js";

export interface PluginCommandIo {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  cwd: string;
}

const EXIT = { ok: 0, fail: 1, error: 2 } as const;
/** Same bound the catalog puts on a command's output. */
const SOURCE_FILE_CAP = 1024 * 1024;

const USAGE = `usage: probegate plugin <command> [options]

commands:
  new NAME [--dir DIR]          scaffold a new AssemblyScript check plugin (default dir ./plugins)
  test PLUGIN.wasm [options]    run a plugin once against saved source outputs
  inspect PLUGIN.wasm [--json]  show manifest, imports, exports, and whether the gateway accepts it

Run "probegate plugin <command> --help" for a command's options.
`;

const HELP: Record<string, string> = {
  new: `usage: probegate plugin new NAME [--dir DIR]

Creates an AssemblyScript plugin project named NAME under DIR (default ./plugins).
NAME: lowercase letters, digits and dashes.
`,
  test: `usage: probegate plugin test PLUGIN.wasm [options]

Runs PLUGIN.wasm once in the gateway's sandbox against saved outputs and prints its verdict.

options:
  --source NAME=FILE       stdout of source NAME is the content of FILE (repeatable)
  --source-exit NAME=CODE  exit status of source NAME (default 0; non-zero makes it not ok)
  --fact KEY=VALUE         a fact passed to the plugin (repeatable), e.g. lnet.selfNid=10.1.0.4@tcp
  --sources FILE           operator-defined sources (the gateway's --sources YAML), so their names are known
  --config FILE            the plugin's configuration (NAME.yaml or NAME.json), validated as the gateway does;
                           without it the plugin gets its declared defaults
  --mode node|controller   the gateway mode to simulate (default node)
  --timeout MS             per-call deadline (default ${DEFAULTS.timeoutMs})
  --json                   print the result as JSON

Sources the plugin lists but no --source gives are reported to it as failed reads.
exit status: 0 pass or warn, 1 fail, 2 error (refused or faulting plugin, bad arguments, missing file)
`,
  inspect: `usage: probegate plugin inspect PLUGIN.wasm [--config FILE] [--sources FILE] [--json]

Prints the plugin's manifest (configuration keys included), imports, exports,
size and sha256, and whether the gateway would load it (and why not).
--config FILE: validate a configuration file as the gateway would and show the
configuration the plugin would get (default: NAME.yaml or NAME.json beside the
.wasm file, if there is one). --sources FILE: judge source names against the
gateway's --sources YAML too. exit status: 0 accepted, 1 refused (plugin or
configuration), 2 error.
`,
};

class UsageError extends Error {}

export async function runPluginCommand(argv: string[], io: PluginCommandIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "new":
        return await cmdNew(rest, io);
      case "test":
        return await cmdTest(rest, io);
      case "inspect":
        return await cmdInspect(rest, io);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.stdout.write(USAGE);
        return command === undefined ? EXIT.error : EXIT.ok;
      default:
        throw new UsageError(`unknown plugin command ${JSON.stringify(command)} (new, test, inspect)`);
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`probegate plugin${command && HELP[command] ? ` ${command}` : ""}: ${err.message}\n`);
      return EXIT.error;
    }
    throw err;
  }
}

function parse<T extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: T) {
  try {
    return parseArgs({ args, options: { ...options, help: { type: "boolean", short: "h" } }, allowPositionals: true, strict: true });
  } catch (err) {
    const msg = (err as Error).message;
    const flag = /'(-{1,2}[^' ]+)/.exec(msg)?.[1];
    const code = (err as { code?: string }).code;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && flag) throw new UsageError(`unknown flag ${flag}`);
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && flag) throw new UsageError(`flag ${flag} needs a value`);
    throw new UsageError(msg.split("\n")[0]!);
  }
}

function onePositional(positionals: string[], what: string): string {
  if (positionals.length === 0) throw new UsageError(`missing ${what}`);
  if (positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}`);
  return positionals[0]!;
}

async function readPluginFile(path: string, io: PluginCommandIo): Promise<Uint8Array | null> {
  try {
    return new Uint8Array(await readFile(resolve(io.cwd, path)));
  } catch (err) {
    io.stderr.write(`probegate plugin: cannot read ${path}: ${(err as Error).message}\n`);
    return null;
  }
}

async function cmdNew(args: string[], io: PluginCommandIo): Promise<number> {
  const { values, positionals } = parse(args, { dir: { type: "string" } });
  if (values.help) {
    io.stdout.write(HELP.new!);
    return EXIT.ok;
  }
  const name = onePositional(positionals, "plugin NAME");
  const { scaffoldPlugin } = await import("./plugin-new.js");
  try {
    const files = await scaffoldPlugin(name, { dir: resolve(io.cwd, values.dir ?? "plugins") });
    for (const f of files) io.stdout.write(`created ${f}\n`);
    return EXIT.ok;
  } catch (err) {
    io.stderr.write(`probegate plugin new: ${(err as Error).message}\n`);
    return EXIT.error;
  }
}

function keyValues(list: string[] | undefined, flag: string): Array<[string, string]> {
  return (list ?? []).map((item) => {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new UsageError(`${flag} expects NAME=VALUE, got ${JSON.stringify(item)}`);
    return [item.slice(0, eq), item.slice(eq + 1)];
  });
}

/** The built-in catalog, plus the operator's --sources file when given (same validation as the gateway). */
async function catalogWith(sourcesFile: string | undefined, io: PluginCommandIo): Promise<SourceCatalog> {
  try {
    return await SourceCatalog.create({
      procfs: "/proc",
      sysfs: "/sys",
      sourcesFile: sourcesFile === undefined ? undefined : resolve(io.cwd, sourcesFile),
      logger: pino({ level: "silent" }),
    });
  } catch (err) {
    throw new UsageError(`--sources: ${(err as Error).message}`);
  }
}

async function cmdTest(args: string[], io: PluginCommandIo): Promise<number> {
  const { values, positionals } = parse(args, {
    source: { type: "string", multiple: true },
    "source-exit": { type: "string", multiple: true },
    fact: { type: "string", multiple: true },
    sources: { type: "string" },
    mode: { type: "string" },
    timeout: { type: "string" },
    config: { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) {
    io.stdout.write(HELP.test!);
    return EXIT.ok;
  }
  const file = onePositional(positionals, "PLUGIN.wasm");
  const mode = values.mode ?? "node";
  if (mode !== "node" && mode !== "controller") throw new UsageError(`--mode must be node or controller, got ${JSON.stringify(mode)}`);
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) throw new UsageError("--timeout expects a positive number of milliseconds");

  const catalog = await catalogWith(values.sources, io);
  const kinds = new Map(catalog.describe().map((d) => [d.name, d.kind]));
  const exits = new Map<string, number>();
  for (const [name, code] of keyValues(values["source-exit"], "--source-exit")) {
    if (!kinds.has(name)) throw new UsageError(`unknown source ${name} in --source-exit`);
    if (!/^-?\d+$/.test(code)) throw new UsageError(`--source-exit ${name} expects an integer exit code`);
    exits.set(name, Number(code));
  }
  const outputs = new Map<string, string>();
  for (const [name, path] of keyValues(values.source, "--source")) {
    if (!kinds.has(name)) throw new UsageError(`unknown source ${name} (known: ${[...kinds.keys()].join(", ")})`);
    try {
      outputs.set(name, await readFile(resolve(io.cwd, path), "utf8"));
    } catch (err) {
      io.stderr.write(`probegate plugin test: cannot read --source ${name}=${path}: ${(err as Error).message}\n`);
      return EXIT.error;
    }
  }
  const facts = Object.fromEntries(keyValues(values.fact, "--fact"));

  const bytes = await readPluginFile(file, io);
  if (!bytes) return EXIT.error;
  // The manifest decides which sources the input carries, so inspect first
  // (same validation the gateway does), then build the input and run.
  const info = await inspectPlugin(bytes, { file, timeoutMs, isKnownSource: (n) => catalog.has(n) });
  if (!info.accepted || !info.manifest) {
    io.stderr.write(`probegate plugin test: the gateway would refuse ${file}: ${info.refusal?.reason}: ${info.refusal?.message}\n`);
    return EXIT.error;
  }
  const manifest = info.manifest;
  if (!manifest.modes.includes(mode)) {
    io.stderr.write(`note: ${manifest.name} declares modes ${manifest.modes.join(",")}; the gateway would not run it in --mode ${mode}\n`);
  }
  const now = Date.now();
  const sources: Array<[string, SourceResult]> = manifest.sources.map((name) => {
    const stdout = outputs.get(name);
    if (stdout === undefined) {
      io.stderr.write(`note: no --source ${name}=FILE given; the plugin sees a failed read\n`);
      return [name, { ok: false, exitCode: null, stdout: "", stderr: "", error: `no saved output for ${name}`, truncated: false, fetchedAtMs: now }];
    }
    const isFile = kinds.get(name) === "file";
    const exitCode = isFile ? null : (exits.get(name) ?? 0);
    const truncated = Buffer.byteLength(stdout) > SOURCE_FILE_CAP;
    return [name, {
      ok: exitCode === null || exitCode === 0,
      exitCode,
      stdout: truncated ? Buffer.from(stdout).subarray(0, SOURCE_FILE_CAP).toString("utf8") : stdout,
      stderr: "",
      error: exitCode !== null && exitCode !== 0 ? `exit status ${exitCode}` : null,
      truncated,
      fetchedAtMs: now,
    }];
  });
  for (const name of outputs.keys()) {
    if (!manifest.sources.includes(name)) io.stderr.write(`note: ${manifest.name} does not read source ${name}; ignored\n`);
  }
  const config = await resolveConfig(values.config, undefined, file, manifest, io);
  if (!config.ok) {
    io.stderr.write(`probegate plugin test: ConfigInvalid: ${config.message}\n`);
    return EXIT.error;
  }
  const input = buildCheckInput(mode, sources, facts, now, config.value);
  const run = await runPluginOnce(bytes, input, { file, timeoutMs, isKnownSource: (n) => catalog.has(n) });
  if (!run.accepted) {
    io.stderr.write(`probegate plugin test: refused: ${run.refusal.reason}: ${run.refusal.message}\n`);
    return EXIT.error;
  }
  const o = run.outcome;
  const code = o.kind === "fault" ? EXIT.error : o.output.status === "fail" ? EXIT.fail : EXIT.ok;
  if (values.json) {
    io.stdout.write(`${JSON.stringify({ plugin: { ...manifest, sha256: run.sha256, file }, input: JSON.parse(input), outcome: o }, null, 2)}\n`);
    return code;
  }
  io.stdout.write(`${manifest.name} ${manifest.version} (${manifest.probe}, ${manifest.severity})\n`);
  if (o.kind === "fault") {
    io.stdout.write(`fault: ${o.reason}: ${o.message}\n`);
  } else {
    io.stdout.write(`${o.output.status}: ${o.output.reason}: ${o.output.message}\n`);
    for (const [k, v] of Object.entries(o.output.facts)) io.stdout.write(`fact ${k}=${v}\n`);
  }
  return code;
}

async function cmdInspect(args: string[], io: PluginCommandIo): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: "boolean" }, sources: { type: "string" }, config: { type: "string" } });
  if (values.help) {
    io.stdout.write(HELP.inspect!);
    return EXIT.ok;
  }
  const file = onePositional(positionals, "PLUGIN.wasm");
  const catalog = await catalogWith(values.sources, io);
  const bytes = await readPluginFile(file, io);
  if (!bytes) return EXIT.error;
  const info = await inspectPlugin(bytes, { file, isKnownSource: (n) => catalog.has(n) });
  let config: ResolvedConfig | null = null;
  if (info.manifest) config = await resolveConfig(values.config, dirname(resolve(io.cwd, file)), file, info.manifest, io);
  const out = { ...info, config: config === null ? null : config.ok ? { file: config.file ?? null, sha256: config.sha256 ?? null, value: config.value ?? null } : { error: config.message } };
  io.stdout.write(values.json ? `${JSON.stringify(out, null, 2)}\n` : formatInspect(info, config));
  return info.accepted && (config === null || config.ok) ? EXIT.ok : EXIT.fail;
}

type ResolvedConfig =
  | { ok: true; value: Record<string, unknown> | undefined; file?: string; sha256?: string }
  | { ok: false; message: string };

/**
 * The configuration the gateway would give this plugin: FILE when given, else
 * (for inspect) NAME.yaml/NAME.json in `besideDir`, else the declared defaults.
 */
async function resolveConfig(
  given: string | undefined,
  besideDir: string | undefined,
  wasmFile: string,
  manifest: PluginManifest,
  io: PluginCommandIo,
): Promise<ResolvedConfig> {
  const { parsePluginConfig, configDefaults, configFileNames } = await import("../runtime/plugin-config.js");
  let path: string | undefined = given === undefined ? undefined : resolve(io.cwd, given);
  if (path === undefined && besideDir !== undefined) {
    for (const name of configFileNames(manifest.name)) {
      const candidate = join(besideDir, name);
      if (candidate !== resolve(io.cwd, wasmFile) && existsSync(candidate)) path = candidate;
    }
  }
  if (path === undefined) return { ok: true, value: manifest.config ? configDefaults(manifest.config) : undefined };
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    return { ok: false, message: `cannot read ${path}: ${(err as Error).message}` };
  }
  if (bytes.length > DEFAULTS.maxConfigBytes) return { ok: false, message: `${path}: ${bytes.length} bytes; the cap is ${DEFAULTS.maxConfigBytes} bytes` };
  const r = parsePluginConfig(bytes.toString("utf8"), path, manifest.name, manifest.config);
  if (!r.ok) return r;
  return { ok: true, value: manifest.config ? r.value : undefined, file: path, sha256: sha256Hex(bytes) };
}

function formatInspect(i: InspectResult, config: ResolvedConfig | null): string {
  const lines = [
    `file:     ${i.file}`,
    `size:     ${i.size} bytes`,
    `sha256:   ${i.sha256}`,
    `accepted: ${i.accepted ? "yes" : `no — ${i.refusal?.reason}: ${i.refusal?.message}`}`,
  ];
  if (i.manifest) {
    const m = i.manifest;
    lines.push(
      `manifest:`,
      `  name:        ${m.name}`,
      `  version:     ${m.version}`,
      `  description: ${m.description}`,
      `  probe:       ${m.probe}`,
      `  severity:    ${m.severity}`,
      `  modes:       ${m.modes.join(", ")}`,
      `  sources:     ${m.sources.join(", ") || "(none)"}`,
    );
    const decl = Object.entries(m.config ?? {});
    lines.push(`  config:      ${decl.length === 0 ? "(none: this plugin takes no configuration)" : ""}`.trimEnd());
    for (const [k, d] of decl) {
      const def = d.default === undefined ? "no default" : `default ${JSON.stringify(d.default)}`;
      lines.push(`    ${k} (${d.type}${d.min !== undefined ? `, min ${d.min}` : ""}${d.max !== undefined ? `, max ${d.max}` : ""}; ${def}): ${d.description}`);
    }
  }
  if (config) {
    if (!config.ok) lines.push(`configuration: refused — ConfigInvalid: ${config.message}`);
    else if (config.file) lines.push(`configuration: ${config.file} (sha256 ${config.sha256})`, `  ${JSON.stringify(config.value ?? {})}`);
    else if (config.value !== undefined) lines.push(`configuration: defaults`, `  ${JSON.stringify(config.value)}`);
  }
  lines.push(`imports:  ${i.imports.map((x) => `${x.module}.${x.name} (${x.kind})`).join(", ") || "(none)"}`);
  lines.push(`exports:  ${i.exports.map((x) => `${x.name} (${x.kind})`).join(", ") || "(none)"}`);
  return `${lines.join("\n")}\n`;
}
