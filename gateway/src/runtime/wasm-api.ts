// The project compiles against lib ES2023 + @types/node 20, neither of which
// declares the WebAssembly global. Rather than a global ambient declaration
// (which would clash if DOM typings are ever added), the runtime reaches the
// API through this narrowly typed handle.

/** Opaque compiled module; structured-cloneable to worker threads. */
export interface WasmModule {
  readonly __wasmModule?: never;
}

export type WasmExternKind = "function" | "table" | "memory" | "global" | "tag";

export interface WasmApi {
  compile(bytes: Uint8Array): Promise<WasmModule>;
  validate(bytes: Uint8Array): boolean;
  Module: {
    imports(m: WasmModule): Array<{ module: string; name: string; kind: WasmExternKind }>;
    exports(m: WasmModule): Array<{ name: string; kind: WasmExternKind }>;
  };
}

export const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
