export { PluginRuntime, type PluginSet, type RuntimeOptions, type CheckOutcome } from "./runtime.js";
export { Sandbox, type SandboxOptions } from "./sandbox.js";
export { loadPlugin, compileChecked, sha256Hex } from "./loader.js";
export { inspectPlugin, runPluginOnce, type InspectResult, type RunOnceResult, type OfflineOptions } from "./inspect.js";
export { parseManifest, parseCheckOutput } from "./schema.js";
export { capMemory, WASM_PAGE } from "./wasm-binary.js";
export { BUILTIN_SOURCE_NAMES, isBuiltinSource } from "./known-sources.js";
export * from "./types.js";
