// The credential each request carries: a static token, a token file re-read
// as it rotates (projected service-account tokens are replaced on disk about
// every hour), or an exec credential plugin's answer, cached until it expires.
// A 401 invalidates what was used, so the next request reads or runs again.
// No token ever reaches a log: errors say which file or plugin failed and why.
import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import type { ClientConfig, ExecConfig } from "./kubeconfig.js";

export interface Credential {
  token?: string;
  /** PEM client certificate and key (from the kubeconfig or an exec plugin). */
  cert?: Buffer;
  key?: Buffer;
}

export class CredentialError extends Error {}

/** A token file is read again at least this often (client-go's cached file token source: one minute). */
const TOKEN_FILE_MAX_AGE_MS = 60_000;
/** An exec credential is renewed this long before it expires, so no request goes out with one about to lapse. */
const EXEC_EXPIRY_SKEW_MS = 10_000;
const EXEC_TIMEOUT_MS = 60_000;
const EXEC_MAX_OUTPUT = 1024 * 1024;

export class Credentials {
  private current: Credential | undefined;
  /** When current stops being usable (token file: next re-read; exec: expiry). */
  private validUntil = 0;
  private pending: Promise<Credential> | null = null;

  constructor(
    private readonly cfg: ClientConfig,
    private readonly now: () => number = Date.now,
  ) {
    if (!cfg.tokenFile && !cfg.exec) {
      this.current = { token: cfg.token, cert: cfg.clientCert, key: cfg.clientKey };
      this.validUntil = Number.POSITIVE_INFINITY;
    }
  }

  /** The credential to use now; reads or runs at most once for concurrent callers. */
  get(): Promise<Credential> {
    if (this.current && this.now() < this.validUntil) return Promise.resolve(this.current);
    if (!this.pending) {
      this.pending = this.refresh().finally(() => {
        this.pending = null;
      });
    }
    return this.pending;
  }

  /** A 401 answered a request made with `used`: the next get() reads the file or runs the plugin again. */
  rejected(used: Credential): void {
    if (this.current === used && this.renewable) this.validUntil = 0;
  }

  /** Whether a 401 can be retried with a fresh credential (a static token cannot change). */
  get renewable(): boolean {
    return Boolean(this.cfg.tokenFile || this.cfg.exec);
  }

  private async refresh(): Promise<Credential> {
    if (this.cfg.exec) {
      const out = await runExecPlugin(this.cfg.exec, this.cfg);
      this.current = { token: out.token, cert: out.cert ?? this.cfg.clientCert, key: out.key ?? this.cfg.clientKey };
      this.validUntil = out.expiresAt !== undefined ? out.expiresAt - EXEC_EXPIRY_SKEW_MS : Number.POSITIVE_INFINITY;
      return this.current;
    }
    const file = this.cfg.tokenFile!;
    let token: string;
    try {
      token = (await fs.readFile(file, "utf8")).trim();
    } catch (err) {
      // The kubelet swaps the file by a symlink rename: a failed read keeps the last token for now.
      if (this.current) return this.current;
      throw new CredentialError(`tokenFile ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    if (token === "") {
      if (this.current) return this.current;
      throw new CredentialError(`tokenFile ${file}: empty`);
    }
    this.current = { token, cert: this.cfg.clientCert, key: this.cfg.clientKey };
    this.validUntil = this.now() + TOKEN_FILE_MAX_AGE_MS;
    return this.current;
  }
}

interface ExecResult {
  token?: string;
  cert?: Buffer;
  key?: Buffer;
  expiresAt?: number;
}

/** Runs the plugin by argv (never a shell) with KUBERNETES_EXEC_INFO, as kubectl does, and checks its ExecCredential. */
async function runExecPlugin(exec: ExecConfig, cluster: Pick<ClientConfig, "server" | "ca" | "tlsServerName" | "insecureSkipTLSVerify">): Promise<ExecResult> {
  const info: Record<string, unknown> = { kind: "ExecCredential", apiVersion: exec.apiVersion, spec: { interactive: false } };
  if (exec.provideClusterInfo) {
    (info.spec as Record<string, unknown>).cluster = {
      server: cluster.server,
      ...(cluster.tlsServerName ? { "tls-server-name": cluster.tlsServerName } : {}),
      ...(cluster.insecureSkipTLSVerify ? { "insecure-skip-tls-verify": true } : {}),
      ...(cluster.ca ? { "certificate-authority-data": cluster.ca.toString("base64") } : {}),
    };
  }
  const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: JSON.stringify(info) };
  for (const e of exec.env) env[e.name] = e.value;
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(exec.command, exec.args, { env, timeout: EXEC_TIMEOUT_MS, maxBuffer: EXEC_MAX_OUTPUT, encoding: "utf8", windowsHide: true }, (err, out, stderr) => {
      if (!err) return resolve(out);
      const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: unknown };
      const why =
        e.code === "ENOENT" ? `${exec.command} not found` : e.killed ? `killed after ${EXEC_TIMEOUT_MS / 1000}s` : `exited ${String(e.code)}`;
      const said = String(stderr ?? "").trim().split("\n")[0]?.slice(0, 200);
      reject(new CredentialError(`exec plugin (${exec.origin}): ${why}${said ? `: ${said}` : ""}`));
    }).stdin?.end();
  });
  let cred: { apiVersion?: unknown; kind?: unknown; status?: Record<string, unknown> };
  try {
    cred = JSON.parse(stdout);
  } catch {
    throw new CredentialError(`exec plugin (${exec.origin}): its output is not JSON`);
  }
  const bad = (what: string) => new CredentialError(`exec plugin (${exec.origin}): ${what}`);
  if (cred?.kind !== "ExecCredential") throw bad(`kind is "${String(cred?.kind)}", not ExecCredential`);
  if (cred.apiVersion !== exec.apiVersion) throw bad(`apiVersion is "${String(cred.apiVersion)}", the kubeconfig asks for ${exec.apiVersion}`);
  const s = cred.status;
  if (!s || typeof s !== "object") throw bad("status: missing");
  const token = typeof s.token === "string" && s.token !== "" ? s.token : undefined;
  const certPem = typeof s.clientCertificateData === "string" && s.clientCertificateData !== "" ? s.clientCertificateData : undefined;
  const keyPem = typeof s.clientKeyData === "string" && s.clientKeyData !== "" ? s.clientKeyData : undefined;
  if (Boolean(certPem) !== Boolean(keyPem)) throw bad("status: clientCertificateData and clientKeyData go together");
  if (!token && !certPem) throw bad("status: neither token nor clientCertificateData");
  let expiresAt: number | undefined;
  if (s.expirationTimestamp !== undefined && s.expirationTimestamp !== null) {
    expiresAt = typeof s.expirationTimestamp === "string" ? Date.parse(s.expirationTimestamp) : Number.NaN;
    if (!Number.isFinite(expiresAt)) throw bad("status.expirationTimestamp: not an RFC 3339 time");
  }
  return { token, cert: certPem ? Buffer.from(certPem) : undefined, key: keyPem ? Buffer.from(keyPem) : undefined, expiresAt };
}
