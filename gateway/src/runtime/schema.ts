import { z } from "zod";
import { abiDescriptor } from "./abi/index.js";
import { FACT_NAME_MAX_CHARS, FACT_VALUE_MAX_CHARS, PLUGIN_ABIS, STORAGE_HEALTH_STATUSES, VOLUME_HEALTH_STATUSES, type CheckOutput, type ConfigDecl, type ConfigKeyDecl, type PluginAbi, type PluginManifest } from "./types.js";
import { oneLine } from "../support/one-line.js";

// Per plugins/ABI.md, versions 1 and 2 (same manifest and output schemas;
// only the calling convention differs). Unknown extra keys are ignored (zod strips them).

/** Plugin names per plugins/ABI.md (also the file name of a built .wasm); the one copy the gateway enforces. */
export const PLUGIN_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const SEMVERISH = /^\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]{1,64})?$/;
const REASON = /^[A-Z][A-Za-z0-9]{0,63}$/;
const MESSAGE_MAX = 1024;

// Configuration keys: camelCase identifiers, as they appear in NAME.yaml.
const CONFIG_KEY = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

const configKeyDecl = z
  .object({
    type: z.enum(["string", "string[]", "integer", "number", "boolean"]),
    default: z.unknown().optional(),
    description: z.string().max(MESSAGE_MAX).default(""),
    min: z.number().optional(),
    max: z.number().optional(),
  })
  .superRefine((d, ctx) => {
    if (d.default === undefined) return;
    const problem = valueProblem(d as ConfigKeyDecl, d.default);
    if (problem) ctx.addIssue({ code: "custom", path: ["default"], message: problem });
  });

const manifestSchema = z.object({
  abi: z.literal(PLUGIN_ABIS),
  name: z.string().regex(PLUGIN_NAME_RE, `must match ${PLUGIN_NAME_RE.source}`),
  version: z.string().regex(SEMVERISH, "must look like a semantic version (1.2.3)"),
  description: z.string().max(MESSAGE_MAX).default(""),
  sources: z.array(z.string().min(1).max(64)).max(16).default([]),
  modes: z
    .array(z.enum(["node", "controller"]))
    .min(1)
    .transform((m) => [...new Set(m)]),
  probe: z.enum(["readiness", "liveness", "volume", "storage"]).default("readiness"),
  severity: z.enum(["required", "advisory"]).default("required"),
  // Optional and ignored by gateways that predate it, so plugins declaring it still speak abi 1.
  config: z
    .record(z.string().regex(CONFIG_KEY, `config keys must match ${CONFIG_KEY.source}`), configKeyDecl)
    .refine((r) => Object.keys(r).length <= 32, "at most 32 config keys")
    .optional(),
});

export type ConfigValue = Record<string, unknown>;

/** Every declared key with its default (keys without a default are left out). */
export function configDefaults(decl: ConfigDecl): ConfigValue {
  const out: ConfigValue = {};
  for (const [k, d] of Object.entries(decl)) if (d.default !== undefined) out[k] = d.default;
  return out;
}

/**
 * Whether a configuration text holds nothing but comments and blank lines
 * (the base manifests ship such files: every key commented out). The runtime
 * then applies the defaults without loading the YAML parser.
 */
export function isBlankConfig(text: string): boolean {
  return text.split("\n").every((l) => /^\s*(#.*)?\r?$/.test(l));
}

/** Why `v` is not a valid value for key `d`, or "" when it is (shared by defaults and config files). */
export function valueProblem(d: Pick<ConfigKeyDecl, "type" | "min" | "max">, v: unknown): string {
  const got = describeValue(v);
  switch (d.type) {
    case "string":
      return typeof v === "string" ? "" : `expected a string, got ${got}`;
    case "boolean":
      return typeof v === "boolean" ? "" : `expected true or false, got ${got}`;
    case "string[]":
      if (!Array.isArray(v)) return `expected a list of strings, e.g. [a, b], got ${got}`;
      if (v.length > 256) return `at most 256 items, got ${v.length}`;
      for (const [i, item] of v.entries()) {
        if (typeof item !== "string") return `item ${i}: expected a string, got ${describeValue(item)}`;
      }
      return "";
    case "integer":
    case "number": {
      if (typeof v !== "number" || !Number.isFinite(v)) return `expected ${d.type === "integer" ? "a whole number" : "a number"}, got ${got}`;
      if (d.type === "integer" && !Number.isInteger(v)) return `expected a whole number, got ${got}`;
      if (d.min !== undefined && v < d.min) return `must be at least ${d.min}, got ${v}`;
      if (d.max !== undefined && v > d.max) return `must be at most ${d.max}, got ${v}`;
      return "";
    }
  }
}

function describeValue(v: unknown): string {
  if (v === null || v === undefined) return "nothing";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a map";
  const text = JSON.stringify(v);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}

const FS_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const HEALTH_MAX = 256;
// One line (a line break could forge another check's line in /readyz), then
// MESSAGE_MAX characters and "…" when cut.
const cutMessage = (m: string) => oneLine(m, MESSAGE_MAX + 1);

const healthEntry = z.object({
  status: z.enum([...STORAGE_HEALTH_STATUSES, ...VOLUME_HEALTH_STATUSES]),
  reason: z.string().regex(REASON, "must be UpperCamelCase, at most 64 characters"),
  message: z.string().transform(cutMessage),
  fs: z.string().regex(FS_NAME, `must match ${FS_NAME.source}`).optional(),
});

const healthEvent = z.object({
  reason: z.string().regex(REASON, "must be UpperCamelCase, at most 64 characters"),
  fs: z.string().max(128).optional(),
  target: z.string().max(128).optional(),
  at: z.number().int().nonnegative().optional(),
});

const checkOutput = z.object({
  status: z.enum(["pass", "warn", "fail"]),
  reason: z.string().regex(REASON, "must be UpperCamelCase, at most 64 characters"),
  // Messages end up in logs and Probe errors; a long one is cut, not refused.
  message: z.string().transform(cutMessage),
  // Storage and volume plugins (plugins/ABI.md, "Health"); which family a plugin may use is
  // decided by the engine, which knows the plugin's probe kind.
  health: z.array(healthEntry).max(HEALTH_MAX).optional(),
  events: z.array(healthEvent).max(HEALTH_MAX).optional(),
  // Any plugin: the verdict may be reused while its inputs are unchanged (plugins/ABI.md, "Health").
  stable: z.boolean().optional(),
  facts: z
    .record(
      z.string().max(FACT_NAME_MAX_CHARS, {
        error: (i) => `fact name is ${String(i.input).length} characters; the limit is ${FACT_NAME_MAX_CHARS} (FACT_NAME_MAX_CHARS)`,
      }),
      z.string().max(FACT_VALUE_MAX_CHARS, {
        error: (i) =>
          `fact value is ${String(i.input).length} characters; the limit is ${FACT_VALUE_MAX_CHARS} ` +
          `(FACT_VALUE_MAX_CHARS, the size of a source's output)`,
      }),
    )
    .default({}),
});

export type ManifestResult =
  | { ok: true; manifest: PluginManifest }
  | { ok: false; reason: "BadManifest" | "UnsupportedAbi" | "AbiMismatch"; message: string };

/**
 * `abi` is the version the module's imports and exports speak (the loader
 * decides it before running anything); a manifest claiming another one is
 * refused, since the host would marshal its calls wrongly.
 */
export function parseManifest(text: string, abi: PluginAbi = 1): ManifestResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: "BadManifest", message: `manifest() did not return JSON: ${(e as Error).message}` };
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return { ok: false, reason: "BadManifest", message: "manifest() must return a JSON object" };
  }
  const claimed = (raw as { abi?: unknown }).abi;
  if (!(PLUGIN_ABIS as readonly unknown[]).includes(claimed)) {
    return {
      ok: false,
      reason: "UnsupportedAbi",
      message: `manifest abi ${JSON.stringify(claimed) ?? "(missing)"} is not supported; this gateway speaks abi ${PLUGIN_ABIS.join(" and ")}`,
    };
  }
  if (claimed !== abi) {
    return {
      ok: false,
      reason: "AbiMismatch",
      message: `manifest says abi ${claimed}, but the module's imports and exports are ABI v${abi}'s (${abiDescriptor(abi).names.mismatch})`,
    };
  }
  const r = manifestSchema.safeParse(raw);
  if (!r.success) return { ok: false, reason: "BadManifest", message: `invalid manifest: ${describeIssues(r.error)}` };
  return { ok: true, manifest: r.data as PluginManifest };
}


export type OutputResult = { ok: true; output: CheckOutput } | { ok: false; message: string };

export function parseCheckOutput(text: string): OutputResult {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: `check() did not return JSON: ${(e as Error).message}` };
  }
  const r = checkOutput.safeParse(raw);
  if (!r.success) return { ok: false, message: `invalid check output: ${describeIssues(r.error)}` };
  return { ok: true, output: r.data };
}

function describeIssues(err: z.ZodError): string {
  return err.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("; ");
}
