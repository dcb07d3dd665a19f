// The lock of module digests (docs/plugins.md, "Distributing plugins"): which
// module bytes, and which configuration bytes, a gateway given --plugins-lock
// may load, and the detached signature that says who wrote that list. Only the
// format, its validation and the signature check live here; what a refusal
// does to a loaded module is the runtime's rule (runtime.ts).

import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from "node:crypto";
import { z } from "zod";
import { PLUGIN_ABIS, type PluginAbi } from "./types.js";

export const LOCK_FILE = "plugins.lock";
export const LOCK_VERSION = 1;
/** A lock of a thousand modules is ~150 KiB; anything far larger is not one. */
export const LOCK_MAX_BYTES = 1024 * 1024;
/** The largest signature file: base64 of a DER ECDSA signature is under 100 bytes. */
export const SIG_MAX_BYTES = 4096;
const MAX_ENTRIES = 4096;

export interface LockModule {
  file: string;
  plugin: string;
  abi: PluginAbi;
  sha256: string;
}
export interface LockConfig {
  file: string;
  sha256: string;
}
export interface PluginLock {
  lockVersion: typeof LOCK_VERSION;
  modules: LockModule[];
  configs: LockConfig[];
}

const sha = z.string().regex(/^[0-9a-f]{64}$/, "must be 64 lowercase hex digits");
// A plain name inside the directory: a lock never reaches outside it.
const plainName = (suffix: RegExp, what: string) =>
  z.string().max(255).regex(/^[^/\\\0]+$/, "must be a file name, not a path").refine((s) => !s.startsWith(".") && suffix.test(s), `must be a ${what} file name`);

const lockSchema = z
  .object({
    lockVersion: z.literal(LOCK_VERSION),
    modules: z
      .array(
        z
          .object({
            file: plainName(/\.wasm$/, ".wasm"),
            plugin: z.string().min(1).max(128),
            abi: z.number().refine((n): n is PluginAbi => (PLUGIN_ABIS as readonly number[]).includes(n), `unknown ABI (this gateway speaks ${PLUGIN_ABIS.join(", ")})`),
            sha256: sha,
          })
          .strict(),
      )
      .max(MAX_ENTRIES),
    configs: z.array(z.object({ file: plainName(/.\.(yaml|yml|json)$/, "NAME.yaml, NAME.yml or NAME.json"), sha256: sha }).strict()).max(MAX_ENTRIES),
  })
  .strict();

export type LockParse = { ok: true; lock: PluginLock } | { ok: false; message: string };

/** Validates a lock's text: JSON, the schema, every file named once. */
export function parseLock(bytes: Uint8Array): LockParse {
  if (bytes.length > LOCK_MAX_BYTES) return { ok: false, message: `the lock is ${bytes.length} bytes; the cap is ${LOCK_MAX_BYTES} bytes` };
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    return { ok: false, message: `not JSON: ${(e as Error).message}` };
  }
  const r = lockSchema.safeParse(json);
  if (!r.success) {
    const i = r.error.issues[0]!;
    return { ok: false, message: `${i.path.join(".") || "the lock"}: ${i.message}` };
  }
  const lock = r.data as PluginLock;
  const seen = new Set<string>();
  for (const e of [...lock.modules, ...lock.configs]) {
    // Two digests for one name would let either pass: a lock says one thing per file.
    if (seen.has(e.file)) return { ok: false, message: `${e.file} is listed twice` };
    seen.add(e.file);
  }
  return { ok: true, lock };
}

/** The lock's text as `plugin lock` writes it: entries by file name, one per line, so a diff reads well. */
export function formatLock(lock: PluginLock): string {
  const byFile = <T extends { file: string }>(a: T[]) => [...a].sort((x, y) => (x.file < y.file ? -1 : x.file > y.file ? 1 : 0));
  const lines = (a: object[]) => a.map((e) => `    ${JSON.stringify(e)}`).join(",\n");
  const modules = byFile(lock.modules).map((m) => ({ file: m.file, plugin: m.plugin, abi: m.abi, sha256: m.sha256 }));
  const configs = byFile(lock.configs).map((c) => ({ file: c.file, sha256: c.sha256 }));
  const list = (a: object[]) => (a.length ? `[\n${lines(a)}\n  ]` : "[]");
  return `{\n  "lockVersion": ${LOCK_VERSION},\n  "modules": ${list(modules)},\n  "configs": ${list(configs)}\n}\n`;
}

export class LockKeyError extends Error {}

export type LockKeyType = "ecdsa-p256" | "ed25519";

function keyType(key: KeyObject, what: string): LockKeyType {
  if (key.asymmetricKeyType === "ed25519") return "ed25519";
  if (key.asymmetricKeyType === "ec" && key.asymmetricKeyDetails?.namedCurve === "prime256v1") return "ecdsa-p256";
  const detail = key.asymmetricKeyType === "ec" ? `EC ${key.asymmetricKeyDetails?.namedCurve}` : key.asymmetricKeyType;
  throw new LockKeyError(`${what} is a ${detail} key; an ECDSA P-256 or Ed25519 key is needed`);
}

export interface LockPublicKey {
  type: LockKeyType;
  key: KeyObject;
}

/** A PEM public key (SPKI, what `cosign generate-key-pair` and `openssl pkey -pubout` write). */
export function lockPublicKey(pem: string | Uint8Array): LockPublicKey {
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.from(pem), format: "pem" });
  } catch (e) {
    throw new LockKeyError(`not a PEM public key: ${(e as Error).message}`);
  }
  return { type: keyType(key, "the public key"), key };
}

/** A PEM private key (unencrypted PKCS#8 or SEC1), for `plugin lock --sign`. */
export function lockPrivateKey(pem: string | Uint8Array): { type: LockKeyType; key: KeyObject } {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: Buffer.from(pem), format: "pem" });
  } catch (e) {
    throw new LockKeyError(`not an unencrypted PEM private key: ${(e as Error).message}`);
  }
  return { type: keyType(key, "the private key"), key };
}

/**
 * The detached signature `plugin lock --sign` writes: base64 of an ASN.1 DER
 * ECDSA signature over SHA-256 (what `cosign sign-blob --key` prints), or
 * base64 of the 64-byte Ed25519 signature.
 */
export function signLock(data: Uint8Array, priv: { type: LockKeyType; key: KeyObject }): string {
  return sign(priv.type === "ed25519" ? null : "sha256", data, priv.key).toString("base64");
}

const ED25519_SIG = 64;
// DER SEQUENCE of two INTEGERs of at most 33 bytes each.
const DER_MIN = 8;
const DER_MAX = 72;

function sigShapeProblem(sig: Uint8Array, type: LockKeyType): string | null {
  if (type === "ed25519") return sig.length === ED25519_SIG ? null : `${sig.length} bytes; an Ed25519 signature is ${ED25519_SIG}`;
  if (sig.length < DER_MIN || sig.length > DER_MAX || sig[0] !== 0x30) return `${sig.length} bytes and not an ASN.1 DER ECDSA signature (a SEQUENCE of ${DER_MIN}–${DER_MAX} bytes)`;
  return null;
}

/**
 * Verifies a detached signature file: its bytes as they are (DER, or raw
 * Ed25519, as `openssl dgst -sha256 -sign` / `openssl pkeyutl -sign` write
 * them) or, when it is base64 text, decoded (cosign). Offline, Node's own crypto.
 */
export function verifyLockSignature(data: Uint8Array, sigFile: Uint8Array, pub: LockPublicKey): { ok: true } | { ok: false; message: string } {
  if (sigFile.length > SIG_MAX_BYTES) return { ok: false, message: `the signature file is ${sigFile.length} bytes; the cap is ${SIG_MAX_BYTES}` };
  const candidates: Uint8Array[] = [sigFile];
  const text = Buffer.from(sigFile).toString("latin1").trim();
  if (text.length > 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(text.replace(/\s+/g, ""))) candidates.push(Buffer.from(text, "base64"));
  const shaped = candidates.filter((c) => sigShapeProblem(c, pub.type) === null);
  if (shaped.length === 0) {
    const c = candidates[candidates.length - 1]!;
    return { ok: false, message: `the signature is ${sigShapeProblem(c, pub.type)}${candidates.length > 1 ? " (after base64 decoding)" : ""}` };
  }
  for (const c of shaped) {
    try {
      if (verify(pub.type === "ed25519" ? null : "sha256", data, pub.key, c)) return { ok: true };
    } catch {
      // A malformed DER body: the same as a wrong signature.
    }
  }
  return { ok: false, message: `the signature does not verify with the ${pub.type === "ed25519" ? "Ed25519" : "ECDSA P-256"} key given (another key signed it, or the lock changed since)` };
}

export const sha256Of = (b: Uint8Array): string => createHash("sha256").update(b).digest("hex");
