import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { pino } from "pino";
import { isHostComposedSource } from "../engine/sources/host-sources.js";
import { FAULT_KINDS, parseDuration, SourceCatalog, type SavedOutput } from "../engine/sources/index.js";
import type { CaseSpec } from "./plugin-test/plugin-under-test.js";
import { abiDescriptor } from "../runtime/abi/index.js";
import { inspectPlugin, type InspectResult } from "../runtime/inspect.js";
import { sha256Hex } from "../runtime/loader.js";
import { DEFAULTS, type PluginManifest } from "../runtime/types.js";

export interface PluginCommandIo {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
  cwd: string;
}

const EXIT = { ok: 0, fail: 1, error: 2 } as const;

const USAGE = `usage: probegate plugin <command> [options]

commands:
  new NAME [--dir DIR] [--lang assemblyscript|rust|c]
                                create a standalone plugin project in DIR/NAME (default DIR: .)
  test PLUGIN.wasm [options]    run a plugin once against saved source outputs
  inspect PLUGIN.wasm [--json]  show manifest, imports, exports, and whether the gateway accepts it
  lock DIR [--sign KEY]         write DIR/plugins.lock (sha256 of each module and configuration file)
  pack DIR --output FILE        write DIR as an OCI image layout archive (oci-archive) to push and mount

Run "probegate plugin <command> --help" for a command's options.
`;

const HELP: Record<string, string> = {
  new: `usage: probegate plugin new NAME [--dir DIR] [--lang assemblyscript|rust|c]

Creates a standalone plugin project in DIR/NAME (default DIR: the current
directory) with fixtures/ holding a passing and a failing case, and a README.

--lang assemblyscript (default; plugin ABI v1): package.json (AssemblyScript
pinned, the plugin SDK packed by this installation in vendor/), asconfig.json,
assembly/index.ts. Then, in DIR/NAME:

  npm install && npm run build && npm test

--lang rust | c (plugin ABI v2): src/lib.rs and Cargo.toml | src/check.c, the
SDK's sources in vendor/, tools/build.mjs (finds rustc with the wasm32 target |
clang and wasm-ld) and the gateway's fixture runner in tools/. Then, in DIR/NAME:

  npm test          (node tools/build.mjs test: build, then every fixture)

NAME: lowercase letters, digits and inner dashes (it names the check and the .wasm).
`,
  test: `usage: probegate plugin test PLUGIN.wasm [options]
       probegate plugin test PLUGIN.wasm --fixtures PATH... [--sources FILE] [--timeout DURATION]

Runs PLUGIN.wasm in the gateway's own sandbox against saved source outputs, which
reach it exactly as the gateway would hand them over (same error texts, caps and
missing-fact failures). Its trace() lines are printed.

options:
  --fixtures PATH            fixture files (*.yaml) or directories of them (repeatable); prints one
                             line per case and "N passed, N failed" (format: docs/plugins.md)
  --source NAME=FILE         stdout of source NAME is the content of FILE (repeatable)
  --source-stderr NAME=FILE  stderr of command source NAME is the content of FILE
  --source-exit NAME=CODE    exit status of command source NAME (default 0; non-zero makes it not ok)
  --source-fault NAME=KIND   source NAME failed: timeout | not-found | truncated (the given output
                             is what was read before the deadline or the cap)
  --fact KEY=VALUE           a fact passed to the plugin (repeatable), e.g. lnet.selfNid=10.1.0.4@tcp
  --sources FILE             operator-defined sources (the gateway's --sources YAML), so their names are known
  --config FILE              the plugin's configuration (NAME.yaml or NAME.json), validated as the gateway does;
                             without it the plugin gets its declared defaults (with --fixtures: the default
                             for cases that have no config: key)
  --mode node|controller     the gateway mode to simulate (default node)
  --timeout DURATION         per-call deadline, e.g. 500ms or 2s; a bare number is milliseconds (default ${DEFAULTS.timeoutMs}ms)
  --json                     print the input, the outcome and the traces as JSON

Sources the plugin lists but no --source gives are reported to it as failed reads.
exit status: 0 pass or warn, 1 fail, 2 error (refused or faulting plugin, bad arguments, missing file)
with --fixtures: 0 every case passed, 1 a case did not match, 2 an error (refused plugin, bad fixture)
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
  lock: `usage: probegate plugin lock DIR [--sign KEY.pem] [--output FILE] [--sources FILE]

Writes DIR/plugins.lock (or FILE): each .wasm module's file name, plugin name,
ABI and sha256, and each configuration file's (NAME.yaml, NAME.yml, NAME.json)
sha256. A gateway given --plugins-lock loads only what it lists. Every module
is first judged as the gateway would (a module it would refuse is not locked:
exit 1, nothing written); --sources FILE makes an operator's source names known.
--sign KEY.pem: an unencrypted PEM private key, ECDSA P-256 or Ed25519; writes
the detached signature beside the lock (FILE.sig, base64 of a DER ECDSA or a
raw Ed25519 signature, as cosign sign-blob --key writes it), for a gateway
given --plugins-lock-key. exit status: 0 written, 1 a module refused, 2 error.
`,
  pack: `usage: probegate plugin pack DIR --output FILE [--compression stored|deflate] [--sources FILE]

Writes an OCI image layout archive (oci-archive) of DIR's modules, configuration
files and plugins.lock/plugins.lock.sig (when present) as one layer, files at
its root, so an image volume of it is directly a plugin directory. Reproducible:
the same files give the same digest (no timestamps, owners or names that vary).
The layer is gzip of stored blocks, the same bytes on any machine; --compression
deflate makes it smaller, reproducible only with the same Node build and CPU.
Prints the image index's digest: pin it.
Modules the gateway would refuse are not packed (exit 1). Push it with, e.g.,
  skopeo copy --all oci-archive:FILE docker://REGISTRY/REPO:TAG
and pin REGISTRY/REPO@DIGEST (docs/plugins.md, "Distributing plugins").
exit status: 0 written, 1 a module refused, 2 error.
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
      case "lock":
        return await cmdLock(rest, io);
      case "pack":
        return await cmdPack(rest, io);
      case undefined:
      case "help":
      case "--help":
      case "-h":
        io.stdout.write(USAGE);
        return command === undefined ? EXIT.error : EXIT.ok;
      default:
        throw new UsageError(`unknown plugin command ${JSON.stringify(command)} (new, test, inspect, lock, pack)`);
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

/**
 * A command taking flags and one argument: its flags and that argument, or
 * null once `--help` has been answered (help wins over a missing argument).
 */
function oneArgCommand<T extends NonNullable<ParseArgsConfig["options"]>>(args: string[], io: PluginCommandIo, command: string, options: T, what: string) {
  const { values, positionals } = parse(args, options);
  if ((values as { help?: boolean }).help) {
    io.stdout.write(HELP[command]!);
    return null;
  }
  return { values, arg: onePositional(positionals, what) };
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
  const parsed = oneArgCommand(args, io, "new", { dir: { type: "string" }, lang: { type: "string" } }, "plugin NAME");
  if (!parsed) return EXIT.ok;
  const { values, arg: name } = parsed;
  const { scaffoldPlugin, PLUGIN_LANGS } = await import("./plugin-new.js");
  const lang = (values.lang ?? "assemblyscript") as (typeof PLUGIN_LANGS)[number];
  if (!PLUGIN_LANGS.includes(lang)) throw new UsageError(`--lang must be one of ${PLUGIN_LANGS.join(", ")}, got ${JSON.stringify(values.lang)}`);
  try {
    const dir = resolve(io.cwd, values.dir ?? ".");
    const files = await scaffoldPlugin(name, { dir, lang });
    for (const f of files) io.stdout.write(`created ${f}\n`);
    const next = lang === "assemblyscript" ? "npm install && npm run build && npm test" : "npm test";
    io.stdout.write(`\nnext:\n  cd ${join(dir, name)}\n  ${next}\n`);
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

type TestFlags = ReturnType<typeof parseTestFlags>["values"];

function parseTestFlags(args: string[]) {
  return parse(args, {
    fixtures: { type: "string", multiple: true },
    source: { type: "string", multiple: true },
    "source-exit": { type: "string", multiple: true },
    "source-stderr": { type: "string", multiple: true },
    "source-fault": { type: "string", multiple: true },
    fact: { type: "string", multiple: true },
    sources: { type: "string" },
    config: { type: "string" },
    mode: { type: "string" },
    timeout: { type: "string" },
    json: { type: "boolean" },
  });
}

async function cmdTest(args: string[], io: PluginCommandIo): Promise<number> {
  const { values, positionals } = parseTestFlags(args);
  if (values.help) {
    io.stdout.write(HELP.test!);
    return EXIT.ok;
  }
  // `--fixtures a.yaml b.yaml dir/`: paths after the plugin are fixtures too.
  const fixtures = values.fixtures ? [...values.fixtures, ...positionals.slice(1)] : [];
  const file = onePositional(fixtures.length > 0 ? positionals.slice(0, 1) : positionals, "PLUGIN.wasm");
  const timeoutMs = parseTimeout(values.timeout);
  if (fixtures.length > 0) {
    const clash = (["source", "source-exit", "source-stderr", "source-fault", "fact", "mode", "json"] as const).find((f) => values[f] !== undefined);
    if (clash) throw new UsageError(`--${clash} cannot be combined with --fixtures (a fixture file says it per case)`);
  }
  const mode = values.mode ?? "node";
  if (mode !== "node" && mode !== "controller") throw new UsageError(`--mode must be node or controller, got ${JSON.stringify(mode)}`);
  const catalog = await catalogWith(values.sources, io);
  const configFile = values.config;
  if (fixtures.length > 0) return testFixtures(file, fixtures, catalog, timeoutMs, configFile, io);
  const saved = await savedFromFlags(values, catalog, io);
  if (!saved) return EXIT.error;
  const facts = Object.fromEntries(keyValues(values.fact, "--fact"));
  return testOnce(file, { mode, facts, sources: saved }, values.json === true, catalog, timeoutMs, configFile, io);
}

/**
 * The plugin as the gateway would load it, or null (refusal or bad --config
 * reported). --config FILE is validated against the plugin's declaration like
 * the gateway's NAME.yaml and becomes its configuration.
 */
async function loadForTest(file: string, catalog: SourceCatalog, timeoutMs: number | undefined, configFile: string | undefined, io: PluginCommandIo) {
  const bytes = await readPluginFile(file, io);
  if (!bytes) return null;
  const { PluginUnderTest } = await import("./plugin-test/plugin-under-test.js");
  const loaded = await PluginUnderTest.load(bytes, file, catalog, timeoutMs);
  if (!loaded.plugin) {
    io.stderr.write(`probegate plugin test: the gateway would refuse ${file}: ${loaded.refusal?.reason}: ${loaded.refusal?.message}\n`);
    return null;
  }
  if (configFile !== undefined) {
    const config = await resolveConfig(configFile, undefined, file, loaded.plugin.manifest, io);
    if (!config.ok) {
      io.stderr.write(`probegate plugin test: ConfigInvalid: ${config.message}\n`);
      await loaded.plugin.close();
      return null;
    }
    loaded.plugin.defaultConfig = config.value ?? {};
  }
  return loaded.plugin;
}

async function testFixtures(
  file: string,
  paths: string[],
  catalog: SourceCatalog,
  timeoutMs: number | undefined,
  configFile: string | undefined,
  io: PluginCommandIo,
): Promise<number> {
  const { collectFixtureFiles, FixtureError } = await import("./plugin-test/fixture-file.js");
  let files: string[];
  try {
    files = await collectFixtureFiles(paths, io.cwd);
  } catch (err) {
    if (err instanceof FixtureError) throw new UsageError(`--fixtures ${err.message}`);
    throw err;
  }
  const put = await loadForTest(file, catalog, timeoutMs, configFile, io);
  if (!put) return EXIT.error;
  try {
    const { runFixtureFiles } = await import("./plugin-test/fixture-run.js");
    const m = put.manifest;
    io.stdout.write(`${m.name} ${m.version}: ${files.length} case${files.length === 1 ? "" : "s"}\n`);
    const sum = await runFixtureFiles(put, files, io.cwd, io.stdout);
    return sum.errors > 0 ? EXIT.error : sum.failed > 0 ? EXIT.fail : EXIT.ok;
  } finally {
    await put.close();
  }
}

/** --source, --source-stderr, --source-exit and --source-fault as saved outputs; null when a file cannot be read (reported). */
async function savedFromFlags(values: TestFlags, catalog: SourceCatalog, io: PluginCommandIo): Promise<Map<string, SavedOutput> | null> {
  const saved = new Map<string, SavedOutput>();
  const entry = (name: string, flag: string): SavedOutput => {
    if (!catalog.has(name)) throw new UsageError(`unknown source ${name} in ${flag} (known: ${catalog.names().join(", ")})`);
    let e = saved.get(name);
    if (!e) saved.set(name, (e = { stdout: "" }));
    return e;
  };
  const readArg = async (flag: string, name: string, path: string): Promise<string | null> => {
    try {
      return await readFile(resolve(io.cwd, path), "utf8");
    } catch (err) {
      io.stderr.write(`probegate plugin test: cannot read ${flag} ${name}=${path}: ${(err as Error).message}\n`);
      return null;
    }
  };
  for (const [name, path] of keyValues(values.source, "--source")) {
    const e = entry(name, "--source");
    const text = await readArg("--source", name, path);
    if (text === null) return null;
    e.stdout = text;
  }
  for (const [name, path] of keyValues(values["source-stderr"], "--source-stderr")) {
    const e = entry(name, "--source-stderr");
    const text = await readArg("--source-stderr", name, path);
    if (text === null) return null;
    e.stderr = text;
  }
  for (const [name, code] of keyValues(values["source-exit"], "--source-exit")) {
    const e = entry(name, "--source-exit");
    if (!/^-?\d+$/.test(code)) throw new UsageError(`--source-exit ${name} expects an integer exit code`);
    e.exitCode = Number(code);
  }
  for (const [name, kind] of keyValues(values["source-fault"], "--source-fault")) {
    const e = entry(name, "--source-fault");
    if (!(FAULT_KINDS as readonly string[]).includes(kind)) {
      throw new UsageError(`--source-fault ${name} expects one of ${FAULT_KINDS.join(", ")}, got ${JSON.stringify(kind)}`);
    }
    e.fault = kind as SavedOutput["fault"];
  }
  return saved;
}

async function testOnce(
  file: string,
  c: CaseSpec,
  json: boolean,
  catalog: SourceCatalog,
  timeoutMs: number | undefined,
  configFile: string | undefined,
  io: PluginCommandIo,
): Promise<number> {
  const put = await loadForTest(file, catalog, timeoutMs, configFile, io);
  if (!put) return EXIT.error;
  try {
    const manifest = put.manifest;
    if (!manifest.modes.includes(c.mode)) {
      io.stderr.write(`note: ${manifest.name} declares modes ${manifest.modes.join(",")}; the gateway would not run it in --mode ${c.mode}\n`);
    }
    // Run even outside the declared modes: an author may want to see what it would say.
    const r = await put.run(c, { anyMode: true });
    if (!r.ok) throw new UsageError(r.problem);
    for (const n of r.notes) io.stderr.write(`note: ${n.replace(/^no saved output for (\S+);/, "no --source $1=FILE given;")}\n`);
    const o = r.outcome;
    const code = o.kind === "fault" ? EXIT.error : o.output.status === "fail" ? EXIT.fail : EXIT.ok;
    if (json) {
      io.stdout.write(`${JSON.stringify({ plugin: { ...manifest, sha256: put.sha256, file }, input: JSON.parse(r.input), outcome: o, traces: r.traces }, null, 2)}\n`);
      return code;
    }
    io.stdout.write(`${manifest.name} ${manifest.version} (${manifest.probe}, ${manifest.severity})\n`);
    for (const t of r.traces) io.stdout.write(`trace: ${t}\n`);
    if (o.kind === "fault") {
      io.stdout.write(`fault: ${o.reason}: ${o.message}\n`);
    } else {
      io.stdout.write(`${o.output.status}: ${o.output.reason}: ${o.output.message}\n`);
      for (const [k, v] of Object.entries(o.output.facts)) io.stdout.write(`fact ${k}=${v}\n`);
    }
    return code;
  } finally {
    await put.close();
  }
}

/** A duration like every other flag ("500ms", "2s"); a bare integer is still read as milliseconds. */
function parseTimeout(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^\d+$/.test(text.trim()) ? Number(text) : parseDuration(text);
  if (ms === null || !Number.isSafeInteger(ms) || ms <= 0) {
    throw new UsageError(`--timeout expects a duration such as 500ms or 2s (or a number of milliseconds), got ${JSON.stringify(text)}`);
  }
  return ms;
}

async function cmdInspect(args: string[], io: PluginCommandIo): Promise<number> {
  const parsed = oneArgCommand(args, io, "inspect", { json: { type: "boolean" }, sources: { type: "string" }, config: { type: "string" } }, "PLUGIN.wasm");
  if (!parsed) return EXIT.ok;
  const { values, arg: file } = parsed;
  const catalog = await catalogWith(values.sources, io);
  const bytes = await readPluginFile(file, io);
  if (!bytes) return EXIT.error;
  const info = await inspectPlugin(bytes, { file, isKnownSource: (n) => catalog.has(n) || isHostComposedSource(n) });
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
      `  abi:         ${m.abi} (${abiDescriptor(m.abi).convention}: ${abiDescriptor(m.abi).names.inspect})`,
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

/** The directory's files, judged; null when a module is refused or the directory is unusable (reported). */
async function distDir(dir: string, sources: string | undefined, io: PluginCommandIo, command: string) {
  const catalog = await catalogWith(sources, io);
  const { readDistDir, DistError } = await import("./plugin-dist.js");
  try {
    return { ok: true as const, dist: await readDistDir(resolve(io.cwd, dir), (n) => catalog.has(n) || isHostComposedSource(n)) };
  } catch (err) {
    if (!(err instanceof DistError)) throw err;
    io.stderr.write(`probegate plugin ${command}: ${err.message}\n`);
    return { ok: false as const, exit: err.message.startsWith("the gateway would refuse") ? EXIT.fail : EXIT.error };
  }
}

async function cmdLock(args: string[], io: PluginCommandIo): Promise<number> {
  const parsed = oneArgCommand(args, io, "lock", { sign: { type: "string" }, output: { type: "string" }, sources: { type: "string" } }, "DIR");
  if (!parsed) return EXIT.ok;
  const { values, arg: dir } = parsed;
  const { LockKeyError, LOCK_FILE, formatLock, lockPrivateKey, signLock } = await import("../runtime/plugin-lock.js");
  let key: ReturnType<typeof lockPrivateKey> | undefined;
  if (values.sign !== undefined) {
    try {
      key = lockPrivateKey(await readFile(resolve(io.cwd, values.sign)));
    } catch (err) {
      if (err instanceof LockKeyError || (err as NodeJS.ErrnoException).code) throw new UsageError(`--sign ${values.sign}: ${(err as Error).message}`);
      throw err;
    }
  }
  const d = await distDir(dir, values.sources, io, "lock");
  if (!d.ok) return d.exit;
  const { lockOf } = await import("./plugin-dist.js");
  const text = formatLock(lockOf(d.dist));
  const out = resolve(io.cwd, values.output ?? join(dir, LOCK_FILE));
  const { writeFile, rm } = await import("node:fs/promises");
  await writeFile(out, text);
  if (key) await writeFile(`${out}.sig`, signLock(Buffer.from(text), key));
  // An old signature beside a new lock would only ever be refused.
  else await rm(`${out}.sig`, { force: true });
  for (const m of d.dist.modules) io.stdout.write(`locked ${m.file} ${m.manifest.name} abi ${m.manifest.abi} sha256 ${m.sha256}\n`);
  for (const c of d.dist.configs) io.stdout.write(`locked ${c.file} sha256 ${c.sha256}\n`);
  io.stdout.write(`wrote ${out}${key ? ` and ${out}.sig (${key.type})` : ""}\n`);
  return EXIT.ok;
}

async function cmdPack(args: string[], io: PluginCommandIo): Promise<number> {
  const parsed = oneArgCommand(args, io, "pack", { output: { type: "string", short: "o" }, compression: { type: "string" }, sources: { type: "string" } }, "DIR");
  if (!parsed) return EXIT.ok;
  const { values, arg: dir } = parsed;
  if (!values.output) throw new UsageError("missing --output FILE");
  const { buildPack, COMPRESSIONS } = await import("./plugin-pack.js");
  const compression = (values.compression ?? "stored") as (typeof COMPRESSIONS)[number];
  if (!COMPRESSIONS.includes(compression)) throw new UsageError(`--compression must be one of ${COMPRESSIONS.join(", ")}, got ${JSON.stringify(values.compression)}`);
  const d = await distDir(dir, values.sources, io, "pack");
  if (!d.ok) return d.exit;
  const pack = buildPack(d.dist, { compression });
  const { writeFile } = await import("node:fs/promises");
  await writeFile(resolve(io.cwd, values.output), pack.archive);
  io.stdout.write(`packed ${pack.files.join(", ")}\nplugins ${pack.annotations["io.probegate.plugins"]}\nwrote ${values.output}\ndigest ${pack.digest}\n`);
  return EXIT.ok;
}
