// Per-plugin configuration: NAME.yaml or NAME.json beside the plugins,
// validated against the keys the plugin declares in its manifest. Unknown keys
// are errors (a misspelt "optionalNet" must not silently mean "use the
// default"), and every message names the file, the line and the key, because
// the file is usually edited inside a ConfigMap far from any tooling.

import { LineCounter, parseDocument } from "yaml";
import { configDefaults, isBlankConfig, type ConfigValue, valueProblem } from "./schema.js";
import type { ConfigDecl } from "./types.js";

export { configDefaults, isBlankConfig, type ConfigValue };
export type ConfigResult = { ok: true; value: ConfigValue } | { ok: false; message: string };

/**
 * Parses and validates one configuration file. `file` is only used in
 * messages. The result carries every declared default, overlaid with the file.
 */
export function parsePluginConfig(text: string, file: string, plugin: string, decl: ConfigDecl | undefined): ConfigResult {
  if (file.endsWith(".json")) {
    try {
      JSON.parse(text);
    } catch (e) {
      return { ok: false, message: `${file}: not JSON: ${(e as Error).message}` };
    }
  }
  // JSON is YAML too: one parser gives line numbers for both.
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    return { ok: false, message: `${file}:${lc.linePos(e.pos[0]).line}: YAML syntax: ${e.message.split("\n")[0]}` };
  }
  const raw: unknown = doc.toJS() ?? {};
  const lineOf = (key: string): string => {
    const pair = (doc.contents as { items?: Array<{ key?: { value?: unknown; range?: [number, number, number] } }> } | null)?.items?.find(
      (p) => p.key?.value === key,
    );
    const range = pair?.key?.range;
    return range ? `:${lc.linePos(range[0]).line}` : "";
  };
  return checkPluginConfig(raw, file, plugin, decl, lineOf);
}

/**
 * Validates an already parsed configuration (a file's, or a fixture case's
 * `config:`) against the declaration. `where` starts each message; `lineOf`
 * may add `:LINE` for a key.
 */
export function checkPluginConfig(
  raw: unknown,
  where: string,
  plugin: string,
  decl: ConfigDecl | undefined,
  lineOf: (key: string) => string = () => "",
): ConfigResult {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { ok: false, message: `${where}: expected a map of key: value` };
  }
  const keys = Object.keys(raw);
  if (!decl || Object.keys(decl).length === 0) {
    if (keys.length === 0) return { ok: true, value: {} };
    return { ok: false, message: `${where}: plugin ${plugin} declares no configuration keys (its manifest has no config); remove it` };
  }
  const known = Object.keys(decl);
  const problems: string[] = [];
  for (const k of keys) {
    const d = decl[k];
    if (!d) {
      problems.push(`${where}${lineOf(k)}: unknown key "${k}" (known keys: ${known.join(", ")})`);
      continue;
    }
    const problem = valueProblem(d, (raw as ConfigValue)[k]);
    if (problem) problems.push(`${where}${lineOf(k)}: ${k}: ${problem}`);
  }
  if (problems.length > 0) return { ok: false, message: problems.slice(0, 5).join("; ") };
  return { ok: true, value: { ...configDefaults(decl), ...(raw as ConfigValue) } };
}

/** The file names a plugin's configuration may have, in the order they are tried. */
export function configFileNames(plugin: string): [string, string] {
  return [`${plugin}.yaml`, `${plugin}.json`];
}
