// Types of @probegate/plugin-sdk/build (tools/build.mjs).
export declare const ABI_VERSION: number;
export declare const SDK_ASCONFIG: string;
export declare const ALLOWED_IMPORTS: readonly string[];
export declare const REQUIRED_EXPORTS: readonly string[];
export declare const PLUGIN_NAME_RE: RegExp;

export declare function abiProblems(bytes: Uint8Array): string[];
export declare function sourceWarnings(entryText: string, label: string): string[];
export declare function compilerVersion(): Promise<string>;

export interface CompileOptions {
  /** Entry .ts, relative to cwd. */
  entry: string;
  /** Output .wasm, relative to cwd. */
  outFile: string;
  /** Default process.cwd(). */
  cwd?: string;
  /** asconfig.json to use; default cwd/asconfig.json if present, else the SDK's. */
  config?: string;
  /** A target of that asconfig. */
  target?: string;
  /** The assemblyscript/asc module, if already imported. */
  asc?: unknown;
}

/** null, or the compiler's error text. */
export declare function compile(opts: CompileOptions): Promise<string | null>;
export declare function buildPlugin(
  opts: CompileOptions,
): Promise<{ ok: true; size: number; warnings: string[] } | { ok: false; error: string }>;
