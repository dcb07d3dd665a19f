import type { Refusal } from "../engine/state.js";
import type { WasmModule } from "./wasm-api.js";

/** Why a plugin file was not loaded. Stable identifiers: they appear in metrics and snapshots. */
export type RefusalReason =
  | "TooLarge"
  | "CompileError"
  | "ForbiddenImport"
  | "MissingExport"
  | "MemoryTooLarge"
  | "BadManifest"
  | "UnsupportedAbi"
  | "UnknownSource"
  | "DuplicateName"
  | "PluginTimeout"
  | "PluginTrap"
  | "Unreadable"
  | "ConfigInvalid";

/** Why a single call into a loaded plugin produced no verdict. */
export type FaultReason =
  | "PluginTimeout"
  | "PluginTrap"
  | "PluginOutputTooLarge"
  | "PluginBadOutput"
  | "PluginUnloaded"
  | "ConfigInvalid";

export interface PluginRefusal extends Refusal {
  reason: RefusalReason;
}

/** One configuration key a plugin declares (manifest `config`, see plugins/ABI.md). */
export type ConfigType = "string" | "string[]" | "integer" | "number" | "boolean";
export interface ConfigKeyDecl {
  type: ConfigType;
  default?: unknown;
  description: string;
  min?: number;
  max?: number;
}
export type ConfigDecl = Record<string, ConfigKeyDecl>;

export type ProbeKind = "readiness" | "liveness" | "volume";
export type Mode = "node" | "controller";

export interface PluginManifest {
  abi: 1;
  name: string;
  version: string;
  description: string;
  sources: string[];
  modes: Mode[];
  probe: ProbeKind;
  severity: "required" | "advisory";
  /** Declared configuration keys; absent for plugins that take no configuration. */
  config?: ConfigDecl;
}

export interface CheckOutput {
  status: "pass" | "warn" | "fail";
  reason: string;
  message: string;
  facts: Record<string, string>;
}

/** A validated plugin whose module is registered in the sandbox under `key`. */
export interface LoadedPlugin {
  key: string;
  file: string;
  /** The --plugins-dir the file was found in. */
  dir?: string;
  sha256: string;
  size: number;
  manifest: PluginManifest;
  module: WasmModule;
}

export type CallResult =
  | { ok: true; output: string; durationMs: number }
  | { ok: false; reason: FaultReason; message: string; durationMs: number };

export const MiB = 1024 * 1024;
export const DEFAULTS = {
  maxFileBytes: 1 * MiB,
  memoryMiB: 16,
  timeoutMs: 500,
  maxOutputBytes: 64 * 1024,
  quarantineAfter: 3,
  quarantineBackoffMs: 30_000,
  quarantineBackoffMaxMs: 5 * 60_000,
  maxConfigBytes: 64 * 1024,
} as const;
