// HTTP to the API server on node:https (or node:http for a plain http://
// server): one keep-alive agent with at most two sockets (the watch holds one,
// the reconcile loop's single request in flight the other), a deadline on
// every request, the credential of the moment, impersonation headers, and the
// API server's Status bodies and Retry-After turned into KubeError.
import http from "node:http";
import https from "node:https";
import { retryAfterMs } from "./backoff.js";
import { CredentialError, Credentials, type Credential } from "./credentials.js";
import type { ClientConfig } from "./kubeconfig.js";

/** A failed request, reduced to what retry decisions need. */
export class KubeError extends Error {
  constructor(
    message: string,
    /** HTTP status, or undefined for network errors and timeouts. */
    readonly status: number | undefined,
    /** "http", "timeout", "credentials" or the socket/TLS error code (ECONNREFUSED, UNABLE_TO_VERIFY_LEAF_SIGNATURE, ...). */
    readonly kind: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
  /** One short key per distinct failure, for log-once. */
  get key(): string {
    return this.status !== undefined ? `${this.status}` : this.kind;
  }
}

export interface RestRequest {
  method: "GET" | "POST" | "PATCH";
  /** Path and query, e.g. /api/v1/nodes/n1. */
  path: string;
  body?: unknown;
  contentType?: string;
  /** Impersonate this user instead of what the kubeconfig says (--impersonate-node). */
  as?: string;
}

export interface WatchHandle {
  stop(): void;
}

/** A body larger than this is not an object node reporting reads (a Node is tens of KB). */
const MAX_BODY = 16 * 1024 * 1024;

export class RestClient {
  private readonly agent: http.Agent;
  private readonly base: URL;
  private readonly creds: Credentials;

  constructor(
    private readonly cfg: ClientConfig,
    private readonly timeoutMs: number,
    private readonly userAgent: string,
  ) {
    this.base = new URL(cfg.server);
    const tls = this.base.protocol === "https:";
    const agentOpts = { keepAlive: true, maxSockets: 2, maxFreeSockets: 2 };
    this.agent = tls ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
    this.creds = new Credentials(cfg);
  }

  close(): void {
    this.agent.destroy();
  }

  /** One request; a 401 with a credential that can change is retried once with a fresh one. */
  async json<T>(req: RestRequest): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const cred = await this.credential();
      const res = await this.send(req, cred, this.timeoutMs);
      try {
        const text = await readBody(res.message);
        if (res.status >= 200 && res.status < 300) return (text.length ? JSON.parse(text) : {}) as T;
        if (res.status === 401) {
          this.creds.rejected(cred);
          if (attempt === 0 && this.creds.renewable) continue;
        }
        throw statusError(res.status, text, res.message.headers);
      } finally {
        res.done();
      }
    }
  }

  /**
   * A watch: each line of the stream is parsed and handed to onLine; onDone once,
   * when the server ends it, the connection breaks or stop() is called (then null).
   */
  watch(req: RestRequest, streamMs: number, onLine: (obj: unknown) => void, onDone: (err: KubeError | null) => void): WatchHandle {
    let finished = false;
    let abort: (() => void) | undefined;
    let stopped = false;
    const finish = (err: KubeError | null) => {
      if (finished) return;
      finished = true;
      onDone(err);
    };
    void (async () => {
      const cred = await this.credential();
      if (stopped) return finish(null);
      const res = await this.send(req, cred, this.timeoutMs, streamMs);
      abort = res.done;
      if (stopped) {
        res.done();
        return finish(null);
      }
      if (res.status < 200 || res.status >= 300) {
        if (res.status === 401) this.creds.rejected(cred);
        const text = await readBody(res.message).catch(() => "");
        res.done();
        return finish(statusError(res.status, text, res.message.headers));
      }
      let buf = "";
      res.message.setEncoding("utf8");
      res.message.on("data", (chunk: string) => {
        buf += chunk;
        if (buf.length > MAX_BODY) {
          res.message.destroy(new KubeError("watch: a line longer than 16 MiB", undefined, "EMSGSIZE"));
          return;
        }
        let nl: number;
        while ((nl = buf.indexOf("\n")) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (line === "" || finished) continue;
          let obj: unknown;
          try {
            obj = JSON.parse(line);
          } catch {
            res.done();
            return finish(new KubeError("watch: a line that is not JSON", undefined, "EPROTO"));
          }
          onLine(obj);
        }
      });
      res.message.on("end", () => finish(null));
      res.message.on("error", (err) => finish(stopped ? null : toKubeError(err)));
      res.message.on("close", () => finish(stopped ? null : res.message.complete ? null : new KubeError("watch: connection closed", undefined, "ECONNRESET")));
    })().catch((err) => finish(stopped ? null : toKubeError(err)));
    return {
      stop: () => {
        stopped = true;
        abort?.();
        finish(null);
      },
    };
  }

  private async credential(): Promise<Credential> {
    try {
      return await this.creds.get();
    } catch (err) {
      if (err instanceof CredentialError) throw new KubeError(err.message, undefined, "credentials");
      throw err;
    }
  }

  /**
   * Sends the request; resolves with the response once its headers are in.
   * The deadline covers connecting, TLS and the headers (and the body, for
   * non-watch requests); streamMs, when given, bounds a watch's whole stream.
   */
  private send(req: RestRequest, cred: Credential, timeoutMs: number, streamMs?: number): Promise<{ status: number; message: http.IncomingMessage; done: () => void }> {
    const url = new URL(this.base.pathname.replace(/\/$/, "") + req.path, this.base);
    const body = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: http.OutgoingHttpHeaders = { accept: "application/json", "user-agent": this.userAgent };
    if (body) {
      headers["content-type"] = req.contentType ?? "application/json";
      headers["content-length"] = body.length;
    }
    if (cred.token) headers.authorization = `Bearer ${cred.token}`;
    Object.assign(headers, impersonationHeaders(this.cfg, req.as));
    const tls: https.RequestOptions =
      url.protocol === "https:"
        ? {
            ca: this.cfg.ca,
            cert: cred.cert,
            key: cred.key,
            servername: this.cfg.tlsServerName,
            rejectUnauthorized: !this.cfg.insecureSkipTLSVerify,
          }
        : {};
    const mod = url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const r = mod.request(url, { method: req.method, headers, agent: this.agent, ...tls }, (message) => {
        if (streamMs === undefined) {
          message.once("end", () => clearTimeout(timer));
        } else {
          clearTimeout(timer);
          timer = setTimeout(() => r.destroy(new KubeError("watch: outlived its timeout", undefined, "timeout")), streamMs);
          message.once("close", () => clearTimeout(timer));
        }
        resolve({ status: message.statusCode ?? 0, message, done: () => (message.complete ? clearTimeout(timer) : r.destroy()) });
      });
      timer = setTimeout(() => r.destroy(new KubeError("request timed out", undefined, "timeout")), timeoutMs);
      r.on("error", (err) => {
        clearTimeout(timer);
        reject(toKubeError(err));
      });
      r.end(body);
    });
  }
}

function impersonationHeaders(cfg: ClientConfig, as: string | undefined): http.OutgoingHttpHeaders {
  if (as !== undefined) return { "impersonate-user": as };
  const imp = cfg.impersonate;
  if (!imp) return {};
  const h: http.OutgoingHttpHeaders = {};
  if (imp.user) h["impersonate-user"] = imp.user;
  if (imp.uid) h["impersonate-uid"] = imp.uid;
  if (imp.groups.length) h["impersonate-group"] = imp.groups;
  for (const [k, v] of Object.entries(imp.extra)) h[`impersonate-extra-${encodeURIComponent(k)}`] = v;
  return h;
}

function readBody(m: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    m.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) m.destroy(new KubeError("answer larger than 16 MiB", undefined, "EMSGSIZE"));
      else chunks.push(c);
    });
    m.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    m.on("error", (err) => reject(toKubeError(err)));
    m.on("close", () => {
      if (!m.complete) reject(new KubeError("connection closed before the answer was complete", undefined, "ECONNRESET"));
    });
  });
}

/** The API server's answer to a failed request: its Status message, and Retry-After. */
export function statusError(status: number, text: string, headers: http.IncomingHttpHeaders): KubeError {
  let detail = text;
  try {
    const s = JSON.parse(text) as { message?: unknown };
    if (typeof s?.message === "string") detail = s.message;
  } catch {
    // a non-JSON body (a proxy's page) is shown as it is
  }
  const ra = headers["retry-after"];
  return new KubeError(`HTTP ${status}${detail ? `: ${detail.slice(0, 300)}` : ""}`, status, "http", retryAfterMs(Array.isArray(ra) ? ra[0] : ra));
}

export function toKubeError(err: unknown): KubeError {
  if (err instanceof KubeError) return err;
  const e = err as { code?: string; message?: string };
  const code = e?.code ?? "error";
  return new KubeError(`${code}: ${e?.message ?? String(err)}`.slice(0, 300), undefined, String(code));
}
