// Compiles the AssemblyScript test plugins with the real compiler (asc API).
// asc takes a second or more per module on the shared cores, so outputs are
// cached on disk by content hash and shared between test files and runs.
import asc from "assemblyscript/asc";
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ASSEMBLY_DIR = fileURLToPath(new URL("./assembly/", import.meta.url));
const CACHE_DIR = join(tmpdir(), "probegate-test-wasm-cache");
const ASC_VERSION = "0.28.20";

export interface AscOptions {
  initialMemory?: number;
  importMemory?: boolean;
  exportRuntime?: boolean;
}

export async function compileAs(source: string, options: AscOptions = {}): Promise<Uint8Array> {
  const opts = { exportRuntime: true, optimizeLevel: 0, runtime: "incremental", ...options };
  const id = createHash("sha256").update(`${ASC_VERSION}\0${JSON.stringify(opts)}\0${source}`).digest("hex");
  const cached = join(CACHE_DIR, `${id}.wasm`);
  try {
    return new Uint8Array(await readFile(cached));
  } catch {
    // not cached yet
  }
  const r = await asc.compileString({ "plugin.ts": source }, opts);
  if (r.error || !r.binary) throw new Error(`asc failed: ${r.error?.message}\n${r.stderr.toString()}`);
  await mkdir(CACHE_DIR, { recursive: true });
  const tmp = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await writeFile(tmp, r.binary);
  await rename(tmp, cached);
  return r.binary;
}

export async function compileHostile(name: string, options: AscOptions = {}): Promise<Uint8Array> {
  return compileAs(await readFile(join(ASSEMBLY_DIR, `${name}.ts`), "utf8"), options);
}

export interface EchoSpec {
  name: string;
  version?: string;
  sources?: string[];
  modes?: Array<"node" | "controller">;
  probe?: "readiness" | "liveness" | "volume";
  severity?: "required" | "advisory";
  /** Facts the plugin reports with every verdict. */
  facts?: Record<string, string>;
}

/**
 * A well-behaved plugin whose verdict the test drives through source output:
 * a source whose stdout is exactly "pass", "warn" or "fail" decides it; the
 * fact value 10.1.0.4@tcp anywhere in the input means pass (two-stage tests);
 * with no sources at all it passes.
 */
export function echoPluginSource(spec: EchoSpec): string {
  const manifest = JSON.stringify({
    abi: 1,
    name: spec.name,
    version: spec.version ?? "1.0.0",
    description: "echo test plugin",
    sources: spec.sources ?? [],
    modes: spec.modes ?? ["node", "controller"],
    probe: spec.probe ?? "readiness",
    severity: spec.severity ?? "required",
  });
  const facts = JSON.stringify(spec.facts ?? {});
  const verdict = (status: string, reason: string, message: string) =>
    `'{"status":"${status}","reason":"${reason}","message":"${message}","facts":${facts}}'`;
  return `
export function manifest(): string {
  return '${manifest}';
}

export function check(input: string): string {
  if (input.includes('"stdout":"fail"')) return ${verdict("fail", "EchoFail", "source said fail")};
  if (input.includes('"stdout":"warn"')) return ${verdict("warn", "EchoWarn", "source said warn")};
  if (input.includes('"stdout":"pass"')) return ${verdict("pass", "EchoPass", "source said pass")};
  if (input.includes("10.1.0.4@tcp")) return ${verdict("pass", "GotFact", "fact arrived")};
  if (input.includes('"sources":{}')) return ${verdict("pass", "NoSources", "nothing to look at")};
  return ${verdict("fail", "NoInput", "no verdict in input")};
}
`;
}

export function compileEcho(spec: EchoSpec): Promise<Uint8Array> {
  return compileAs(echoPluginSource(spec));
}
