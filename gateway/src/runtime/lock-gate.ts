// --plugins-lock as the runtime applies it: the lock (and, with a key, its
// signature) read at each scan, and a verdict per module or configuration
// file of a locked directory. A lock that cannot be read, parsed or verified
// allows nothing; the runtime turns a verdict into a refusal like any other
// (runtime.ts: the file's last good module stays in force).

import { readFile, stat } from "node:fs/promises";
import { LOCK_MAX_BYTES, SIG_MAX_BYTES, parseLock, sha256Of, verifyLockSignature, type LockPublicKey, type PluginLock } from "./plugin-lock.js";

export type LockRefusalReason = "NotInLock" | "DigestMismatch" | "LockInvalid" | "LockUnverified";

export type LockState =
  | { ok: true; id: string; lock: PluginLock; modules: Map<string, string>; configs: Map<string, string> }
  | { ok: false; id: string; reason: "LockInvalid" | "LockUnverified"; message: string };

export interface LockOptions {
  /** The lock file (--plugins-lock). */
  file: string;
  /** With it, FILE.sig must be a valid signature of FILE by this key (--plugins-lock-key). */
  key?: LockPublicKey;
  /** Whether a --plugins-dir is governed by the lock (the image's bundled directory is not). */
  governs: (dir: string) => boolean;
}

export type LockVerdict = null | { reason: LockRefusalReason; message: string };

/** Reads a file of at most `cap` bytes; a larger one is refused unread. */
async function readCapped(path: string, cap: number): Promise<{ bytes: Uint8Array } | { problem: string }> {
  try {
    const st = await stat(path);
    if (!st.isFile()) return { problem: `${path} is not a regular file` };
    if (st.size > cap) return { problem: `${path} is ${st.size} bytes; the cap is ${cap} bytes` };
    return { bytes: new Uint8Array(await readFile(path)) };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { problem: code === "ENOENT" ? `${path} does not exist` : `${path}: ${(e as Error).message}` };
  }
}

export class LockGate {
  private last: LockState | null = null;

  constructor(readonly opts: LockOptions) {}

  get sigFile(): string {
    return `${this.opts.file}.sig`;
  }

  /** The lock as it is now; parsed and verified again only when its bytes (or its signature's) changed. */
  async read(): Promise<LockState> {
    const lock = await readCapped(this.opts.file, LOCK_MAX_BYTES);
    const sig = this.opts.key ? await readCapped(this.sigFile, SIG_MAX_BYTES) : null;
    const id = `${"bytes" in lock ? sha256Of(lock.bytes) : lock.problem}\0${sig === null ? "" : "bytes" in sig ? sha256Of(sig.bytes) : sig.problem}`;
    if (this.last?.id === id) return this.last;
    this.last = this.judge(id, lock, sig);
    return this.last;
  }

  private judge(id: string, lock: { bytes: Uint8Array } | { problem: string }, sig: { bytes: Uint8Array } | { problem: string } | null): LockState {
    if ("problem" in lock) return { ok: false, id, reason: "LockInvalid", message: `--plugins-lock ${lock.problem}` };
    if (this.opts.key) {
      // The signature first: an unverified lock's content is not worth parsing.
      if (sig === null || "problem" in sig) return { ok: false, id, reason: "LockUnverified", message: `--plugins-lock ${this.opts.file} is not signed: ${sig && "problem" in sig ? sig.problem : "no signature"}` };
      const v = verifyLockSignature(lock.bytes, sig.bytes, this.opts.key);
      if (!v.ok) return { ok: false, id, reason: "LockUnverified", message: `--plugins-lock ${this.sigFile}: ${v.message}` };
    }
    const p = parseLock(lock.bytes);
    if (!p.ok) return { ok: false, id, reason: "LockInvalid", message: `--plugins-lock ${this.opts.file}: ${p.message}` };
    return {
      ok: true,
      id,
      lock: p.lock,
      modules: new Map(p.lock.modules.map((m) => [m.file, m.sha256])),
      configs: new Map(p.lock.configs.map((c) => [c.file, c.sha256])),
    };
  }
}

/** Whether the lock allows this file (a module or a configuration file) with this content. */
export function lockVerdict(state: LockState, kind: "module" | "config", file: string, sha256: string): LockVerdict {
  if (!state.ok) return { reason: state.reason, message: `${state.message}; nothing the lock would allow loads until a valid lock replaces it` };
  const listed = (kind === "module" ? state.modules : state.configs).get(file);
  if (listed === undefined) return { reason: "NotInLock", message: `${file} (sha256 ${sha256.slice(0, 12)}) is not listed in the plugins lock` };
  if (listed !== sha256) return { reason: "DigestMismatch", message: `${file} has sha256 ${sha256.slice(0, 12)}; the plugins lock lists ${listed.slice(0, 12)}` };
  return null;
}
