// Types for fake-lustre.js (plain JS so the fake tools start without a build).
export interface FakeLustreDesc {
  version?: string;
  mgsNid?: string;
  mgcState?: string;
  since?: number;
  /** Entries in each default history (default 2; 16 = the kernel's full ring). */
  historyLength?: number;
  mgcHistory?: Array<[number, string]>;
  filesystems?: Array<{
    name: string;
    instance: string;
    mountpoint: string;
    mdts?: number;
    osts?: number;
    states?: Record<string, string>;
    history?: Record<string, Array<[number, string]>>;
    servers?: Record<string, string[]>;
  }>;
}
export function targetNames(fs: { mdts?: number; osts?: number }): string[];
export function importBlock(
  version: string,
  block: { obd: string; target: string; state: string; server: string; failover?: string[]; mgc?: boolean; extra?: string[] },
): string;
export function param(name: string, value: string): string;
export function renderImports(desc: FakeLustreDesc): string;
export function renderStates(desc: FakeLustreDesc): string;
export function renderGetname(desc: FakeLustreDesc): string;
export function noSuchParam(pattern: string): string;
