import type { WasmModule } from "./wasm-api.js";

/** A plugin file the runtime refused to load, and why. */
export interface Refusal {
  file: string;
  reason: string;
  message: string;
  sha256?: string;
  /** The --plugins-dir holding the file, when the gateway has more than one. */
  dir?: string;
  at: string;
}

/** A plugin name provided by more than one --plugins-dir: the later directory's file is used. */
export interface Override {
  name: string;
  /** The file in use (path). */
  file: string;
  /** The file it replaced (path). */
  replaced: string;
}

/** Why a plugin file was not loaded. Stable identifiers: they appear in metrics and snapshots. */
export type RefusalReason =
  | "TooLarge"
  | "CompileError"
  | "ForbiddenImport"
  | "MissingExport"
  | "MemoryTooLarge"
  | "BadManifest"
  | "UnsupportedAbi"
  | "AbiMismatch"
  | "BadExport"
  | "UnknownSource"
  | "DuplicateName"
  | "NameChanged"
  | "PluginTimeout"
  | "PluginTrap"
  | "PluginMemoryLimit"
  | "Unreadable"
  | "ConfigInvalid"
  // --plugins-lock (lock-gate.ts): the file is not listed, its bytes are not the listed ones,
  // the lock cannot be read or parsed, or its signature does not verify.
  | "NotInLock"
  | "DigestMismatch"
  | "LockInvalid"
  | "LockUnverified";

/** Why a single call into a loaded plugin produced no verdict. */
export type FaultReason =
  | "PluginTimeout"
  | "PluginTrap"
  | "PluginMemoryLimit"
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

export type ProbeKind = "readiness" | "liveness" | "volume" | "storage";
export type Mode = "node" | "controller";

/**
 * The plugin ABIs this gateway speaks, side by side (plugins/ABI.md): 1, AssemblyScript
 * strings; 2, UTF-8 byte buffers from any language. A manifest declares one of them.
 */
export const PLUGIN_ABIS = [1, 2] as const;
export type PluginAbi = (typeof PLUGIN_ABIS)[number];

export interface PluginManifest {
  abi: PluginAbi;
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

/** The CSI v1.13 health statuses a plugin may report (storage: node-level backend; volume: one volume). */
export const STORAGE_HEALTH_STATUSES = ["STORAGE_DEGRADED", "STORAGE_UNREACHABLE"] as const;
export const VOLUME_HEALTH_STATUSES = ["DEGRADED", "INACCESSIBLE", "DATA_LOSS"] as const;
export type StorageHealthStatus = (typeof STORAGE_HEALTH_STATUSES)[number];
export type VolumeHealthStatus = (typeof VOLUME_HEALTH_STATUSES)[number];

/** One adverse condition a storage or volume plugin reports (plugins/ABI.md, "Health"). */
export interface HealthOutputEntry {
  status: StorageHealthStatus | VolumeHealthStatus;
  reason: string;
  message: string;
  fs?: string;
}

/** Something a storage plugin saw happen since the previous round (e.g. an eviction); the host counts them. */
export interface HealthOutputEvent {
  reason: string;
  fs?: string;
  target?: string;
  at?: number;
}

export interface CheckOutput {
  status: "pass" | "warn" | "fail";
  reason: string;
  message: string;
  facts: Record<string, string>;
  /** Storage and volume plugins only; absent or empty: nothing adverse known. */
  health?: HealthOutputEntry[];
  events?: HealthOutputEvent[];
  /**
   * Given the same sources, facts, configuration and module, this verdict would
   * be the same at any later round and carries no events: the host may reuse it
   * instead of calling again (checks/stable-memo.ts; plugins/ABI.md, "Health").
   */
  stable?: boolean;
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

/**
 * The largest fact value, in characters. A fact is derived from a source
 * (a list of interfaces, a NID), so it may be as large as a source's output
 * (SOURCE_DEFAULTS.maxOutputBytes, 1 MiB): no healthy node can outgrow it.
 */
export const FACT_VALUE_MAX_CHARS = 1 * MiB;
/** The longest fact name, in characters. */
export const FACT_NAME_MAX_CHARS = 256;

export const DEFAULTS = {
  maxFileBytes: 1 * MiB,
  memoryMiB: 16,
  timeoutMs: 500,
  // Room for the largest fact plus the verdict and JSON escaping; a plugin
  // that returns more is broken or hostile, and nothing past it is copied.
  maxOutputBytes: 2 * MiB,
  quarantineAfter: 3,
  quarantineBackoffMs: 30_000,
  quarantineBackoffMaxMs: 5 * 60_000,
  maxConfigBytes: 64 * 1024,
} as const;
