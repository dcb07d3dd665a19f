// ABI v1: AssemblyScript strings (plugins/ABI.md, "ABI v1 in one page"). The
// host writes the input with __new and pins it; manifest() and check() return
// AssemblyScript strings. Signatures are AssemblyScript's own and not checked.
import type { AbiDescriptor } from "./descriptor.js";

const RUNTIME_HINT = " (compile with --exportRuntime)";

export const ABI_V1: AbiDescriptor = {
  version: 1,
  convention: "AssemblyScript strings",
  imports: new Map([
    ["env.abort", null],
    ["env.trace", null],
    ["env.seed", null],
  ]),
  importsText: "env.abort, env.trace and env.seed functions",
  exports: [
    { name: "manifest", kind: "function", missingHint: "" },
    { name: "check", kind: "function", missingHint: " (or ABI v2's pg_check)" },
    { name: "memory", kind: "memory", missingHint: "" },
    { name: "__new", kind: "function", missingHint: RUNTIME_HINT },
    { name: "__pin", kind: "function", missingHint: RUNTIME_HINT },
    { name: "__unpin", kind: "function", missingHint: RUNTIME_HINT },
  ],
  entryPoints: { manifest: "manifest", check: "check" },
  names: { mismatch: "manifest, check, __new", inspect: "manifest, check" },
  foreignImport: (id, other, own) =>
    `the module imports ABI v${other.version}'s ${id} but exports ABI v1 entry points (${own.join(", ")}); a plugin speaks one ABI`,
};
