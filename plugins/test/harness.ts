// Loads built plugins exactly as a host does: the compiled .wasm through
// @assemblyscript/loader with only the env imports ABI v1 allows.
import { readFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { instantiateSync } from "@assemblyscript/loader";

const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = join(HERE, "..", "..");
export const FIXTURES = join(HERE, "..", "fixtures");
export const DIST = join(ROOT, "dist", "plugins");

export interface CheckResult {
  status: "pass" | "warn" | "fail";
  reason: string;
  message: string;
  facts?: Record<string, string>;
}

export interface SourceInput {
  ok: boolean;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  error: string | null;
  truncated: boolean;
  ageMs: number;
}

export interface LoadedPlugin {
  manifest(): any;
  /** Raw result text, so callers can check it is valid JSON. */
  checkRaw(input: string): string;
  check(input: object): CheckResult;
  imports: WebAssembly.ModuleImportDescriptor[];
  aborts: string[];
  /** Current size of the plugin's linear memory. */
  memoryBytes(): number;
}

let built: Promise<void> | null = null;

/** Builds stale or missing plugins (cached by build.mjs, so usually instant). */
export function ensureBuilt(): Promise<void> {
  built ??= (async () => {
    const { buildPlugins } = await import("../build.mjs");
    const res = await buildPlugins({ log: () => {} });
    if (res.failed.length) {
      throw new Error(res.failed.map((f: { name: string; error: string }) => `${f.name}: ${f.error}`).join("\n"));
    }
  })();
  return built;
}

let probe: Promise<any> | null = null;

/** The test-only SDK probe module (plugins/test/sdk-probe), built on demand. */
export function loadSdkProbe(): Promise<any> {
  probe ??= (async () => {
    const { buildModule } = await import("../build.mjs");
    const out = await buildModule("plugins/test/sdk-probe/index.ts", join(ROOT, "dist", "test", "sdk-probe.wasm"));
    const mod = new WebAssembly.Module(readFileSync(out));
    const imports = { env: { abort() { throw new Error("sdk-probe aborted"); }, trace() {}, seed: () => 42 } };
    const ex: any = instantiateSync(mod, imports).exports;
    const call = (fn: string) => (s: string) => {
      const ptr = ex.__pin(ex.__newString(s));
      try {
        const r = ex[fn](ptr);
        return typeof r === "number" && fn !== "jsonRoundtrip" && fn !== "yamlToJson" && fn !== "quote" && fn !== "yamlLookup" && fn !== "joinProbe" && fn !== "scanProbe" && fn !== "uniqueProbe" && fn !== "healthProbe" ? r : ex.__getString(r);
      } finally {
        ex.__unpin(ptr);
      }
    };
    return {
      jsonRoundtrip: call("jsonRoundtrip") as (s: string) => string,
      yamlToJson: (s: string) => JSON.parse(call("yamlToJson")(s)) as { root: unknown; stray: number },
      quote: call("quote") as (s: string) => string,
      nidValid: (s: string) => call("nidValid")(s) === 1,
      ipv6Valid: (s: string) => call("ipv6Valid")(s) === 1,
      ifNameValid: (s: string) => call("ifNameValid")(s) === 1,
      lineCount: call("lineCount") as (s: string) => number,
      yamlLookup: (key: string, want: string, doc: string) =>
        JSON.parse(call("yamlLookup")(`${key}|${want}\n${doc}`)) as { getText: string; textIs: boolean; has: boolean; hasKey: boolean; keys: string[] },
      joinProbe: (s: string) => JSON.parse(call("joinProbe")(s)) as [string, string],
      scanProbe: (s: string) => JSON.parse(call("scanProbe")(s)) as Array<[number, number, number, number, number, number, boolean, boolean, number, string]>,
      uniqueProbe: call("uniqueProbe") as (s: string) => string,
      healthProbe: (doc: object | string) => JSON.parse(call("healthProbe")(typeof doc === "string" ? doc : JSON.stringify(doc))) as any,
    };
  })();
  return probe;
}

export function wasmPath(name: string): string {
  return join(DIST, `${name}.wasm`);
}

export function loadPlugin(name: string): LoadedPlugin {
  const path = wasmPath(name);
  if (!existsSync(path)) throw new Error(`${path} missing; run node plugins/build.mjs`);
  const bytes = readFileSync(path);
  const mod = new WebAssembly.Module(bytes);
  const aborts: string[] = [];
  let ex: any;
  const imports = {
    env: {
      abort(msg: number, file: number, line: number, col: number) {
        const text = `${ex ? ex.__getString(msg) : msg} at ${ex ? ex.__getString(file) : file}:${line}:${col}`;
        aborts.push(text);
        throw new Error(`plugin aborted: ${text}`);
      },
      trace() {},
      seed() {
        return 42;
      },
    },
  };
  ex = instantiateSync(mod, imports).exports;
  return {
    imports: WebAssembly.Module.imports(mod),
    aborts,
    memoryBytes() {
      return ex.memory.buffer.byteLength;
    },
    manifest() {
      return JSON.parse(ex.__getString(ex.manifest()));
    },
    checkRaw(input: string) {
      const ptr = ex.__pin(ex.__newString(input));
      try {
        return ex.__getString(ex.check(ptr));
      } finally {
        ex.__unpin(ptr);
      }
    },
    check(input: object) {
      return JSON.parse(this.checkRaw(JSON.stringify(input)));
    },
  };
}

export function fixture(rel: string): string {
  // Decoded as the host decodes command output: invalid UTF-8 becomes U+FFFD.
  return readFileSync(join(FIXTURES, rel)).toString("utf8");
}

/** A successful source as the host reports it. */
export function okSource(stdout: string, extra: Partial<SourceInput> = {}): SourceInput {
  return { ok: true, exitCode: 0, stdout, stderr: "", error: null, truncated: false, ageMs: 5, ...extra };
}

export function failedSource(error: string, extra: Partial<SourceInput> = {}): SourceInput {
  return { ok: false, exitCode: 1, stdout: "", stderr: "", error, truncated: false, ageMs: 5, ...extra };
}

export function input(sources: Record<string, SourceInput>, facts: Record<string, string> = {}, mode = "node") {
  return { mode, sources, facts };
}

export { generatedNetShow } from "../fixtures/generate.mjs";
