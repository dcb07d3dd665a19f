// ABI v2: UTF-8 byte buffers (plugins/ABI.md, "Rust and C"). The host copies
// the input into a pg_alloc(len) buffer; results come back packed as i64
// `ptr | len << 32`; pg_reset() frees the call's memory. Every import and
// export has exactly one allowed signature.
import type { FuncSig } from "../wasm-signatures.js";
import type { AbiDescriptor } from "./descriptor.js";

const I32 = "i32";
const sig = (params: string[], results: string[]): FuncSig => ({ params, results });
const V2_HINT = " (ABI v2)";

export const ABI_V2: AbiDescriptor = {
  version: 2,
  convention: "UTF-8 byte buffers",
  imports: new Map([
    ["probegate_v2.log", sig([I32, I32], [])],
    ["probegate_v2.abort", sig([I32, I32], [])],
  ]),
  importsText: "probegate_v2.log and probegate_v2.abort functions (ABI v2)",
  exports: [
    { name: "memory", kind: "memory", missingHint: V2_HINT },
    { name: "pg_manifest", kind: "function", sig: sig([], ["i64"]), missingHint: V2_HINT },
    { name: "pg_check", kind: "function", sig: sig([I32, I32], ["i64"]), missingHint: V2_HINT },
    { name: "pg_alloc", kind: "function", sig: sig([I32], [I32]), missingHint: V2_HINT },
    { name: "pg_reset", kind: "function", sig: sig([], []), missingHint: V2_HINT },
  ],
  entryPoints: { manifest: "pg_manifest", check: "pg_check" },
  names: { mismatch: "pg_manifest, pg_check, pg_alloc", inspect: "pg_manifest, pg_check, pg_alloc, pg_reset" },
  foreignImport: (id, other, own) =>
    `the module exports ABI v2 entry points (${own.join(", ")}) but imports ABI v${other.version}'s ${id}; v2 modules import only probegate_v2.log and probegate_v2.abort`,
};
