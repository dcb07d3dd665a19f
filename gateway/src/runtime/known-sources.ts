import { BUILTIN_SOURCE_NAMES } from "../engine/sources/index.js";

/**
 * The gateway asks its live SourceCatalog which sources exist; offline tools
 * (`plugin inspect`, `plugin test`) judge a plugin against the built-in names.
 */
export { BUILTIN_SOURCE_NAMES };

export function isBuiltinSource(name: string): boolean {
  return BUILTIN_SOURCE_NAMES.includes(name);
}
