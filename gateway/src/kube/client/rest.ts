// HTTP to the API server on node:https (or node:http for a plain http://
// server): one keep-alive agent with at most two sockets (the watch holds one,
// the reconcile loop's single request in flight the other), a deadline on
// every request, the credential of the moment, impersonation headers, and the
// API server's Status bodies and Retry-After turned into KubeError.
import http from "node:http";
import https from "node:https";
import { retryAfterMs } from "./retry-after.js";
import { CredentialError, Credentials, type Credential } from "./credentials.js";
import type { ClientConfig } from "./kubeconfig.js";
import { tlsFailureSentence } from "./tls-errors.js";

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
  /** Ends the watch; onDone gets err (null: an ordinary stop). */
  stop(err?: KubeError | null): void;
}

/** A body larger than this is not an object node reporting reads (a Node is tens of KB). */
const MAX_BODY = 16 * 1024 * 1024;

export class RestClient {
  private readonly agent: http.Agent;
  private readonly base: URL;
  private readonly prefix: string;
  private readonly tls: boolean;
  private readonly mod: typeof http | typeof https;
  private readonly impersonation: http.OutgoingHttpHeaders;
  private readonly creds: Credentials;

  constructor(
    private readonly cfg: ClientConfig,
    private readonly timeoutMs: number,
    private readonly userAgent: string,
  ) {
    this.base = new URL(cfg.server);
    this.prefix = this.base.pathname.replace(/\/$/, "");
    this.tls = this.base.protocol === "https:";
    this.mod = this.tls ? https : http;
    this.impersonation = impersonationHeaders(cfg);
    const agentOpts = { keepAlive: true, maxSockets: 2, maxFreeSockets: 2 };
    this.agent = this.tls ? new https.Agent(agentOpts) : new http.Agent(agentOpts);
    this.creds = new Credentials(cfg);
  }

  close(): void {
    this.agent.destroy();
  }

  /**
   * One request; a 401 with a credential that can change is retried once with a fresh one.
   * Rejects only with KubeError, so callers can count and log by its key.
   */
  async json<T>(req: RestRequest): Promise<T> {
    try {
      return await this.jsonOnce<T>(req);
    } catch (err) {
      // node:http throws a plain error for a header it refuses (a stray character in the kubeconfig's impersonation).
      throw toKubeError(err, this.base, this.cfg.tlsServerName);
    }
  }

  private async jsonOnce<T>(req: RestRequest): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const cred = await this.credential();
      const res = await this.send(req, cred, this.timeoutMs);
      try {
        const text = await readBody(res.message);
        if (res.status >= 200 && res.status < 300) return (text.length ? parseAnswer(text) : {}) as T;
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
          try {
            onLine(obj);
          } catch (err) {
            // A line that is JSON but not an event (null, an object: null) must end the watch, not escape
            // this listener as an uncaught exception and leave the watch open with no one to end it.
            res.done();
            return finish(new KubeError(`watch: bad event (${(err as Error)?.message ?? String(err)})`.slice(0, 300), undefined, "EPROTO"));
          }
        }
      });
      res.message.on("end", () => finish(null));
      res.message.on("error", (err) => finish(stopped ? null : toKubeError(err, this.base, this.cfg.tlsServerName)));
      res.message.on("close", () => finish(stopped ? null : res.message.complete ? null : new KubeError("watch: connection closed", undefined, "ECONNRESET")));
    })().catch((err) => finish(stopped ? null : toKubeError(err, this.base, this.cfg.tlsServerName)));
    return {
      stop: (err: KubeError | null = null) => {
        stopped = true;
        abort?.();
        finish(err);
      },
    };
  }

  private async credential(): Promise<Credential> {
    try {
      return await this.creds.get();
    } catch (err) {
      if (err instanceof CredentialError) throw new KubeError(err.message, undefined, "credentials");
      throw toKubeError(err, this.base, this.cfg.tlsServerName);
    }
  }

  /**
   * Sends the request; resolves with the response once its headers are in.
   * The deadline covers connecting, TLS and the headers (and the body, for
   * non-watch requests); streamMs, when given, bounds a watch's whole stream.
   */
  private send(req: RestRequest, cred: Credential, timeoutMs: number, streamMs?: number): Promise<{ status: number; message: http.IncomingMessage; done: () => void }> {
    const url = new URL(this.prefix + req.path, this.base);
    const body = req.body === undefined ? undefined : Buffer.from(JSON.stringify(req.body));
    const headers: http.OutgoingHttpHeaders = { accept: "application/json", "user-agent": this.userAgent };
    if (body) {
      headers["content-type"] = req.contentType ?? "application/json";
      headers["content-length"] = body.length;
    }
    if (cred.token) headers.authorization = `Bearer ${cred.token}`;
    Object.assign(headers, req.as !== undefined ? { "impersonate-user": req.as } : this.impersonation);
    const tls: https.RequestOptions = this.tls
      ? {
          ca: this.cfg.ca,
          cert: cred.cert,
          key: cred.key,
          servername: this.cfg.tlsServerName,
          rejectUnauthorized: !this.cfg.insecureSkipTLSVerify,
        }
      : {};
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let message: http.IncomingMessage | undefined;
      // Once there is a response, destroying only the request hands the response node:http's
      // generic "aborted" (ECONNRESET): its reader must see the timeout itself.
      const expire = (why: string) => () => (message ?? r).destroy(new KubeError(why, undefined, "timeout"));
      const r = this.mod.request(url, { method: req.method, headers, agent: this.agent, ...tls }, (m) => {
        message = m;
        // "close", not "end": a body cut off or refused as too large never ends, and its timer must not outlive it.
        m.once("close", () => clearTimeout(timer));
        if (streamMs !== undefined) {
          clearTimeout(timer);
          timer = setTimeout(expire("watch: outlived its timeout"), streamMs);
        }
        resolve({ status: m.statusCode ?? 0, message: m, done: () => (m.complete ? clearTimeout(timer) : r.destroy()) });
      });
      timer = setTimeout(expire("request timed out"), timeoutMs);
      r.on("error", (err) => {
        clearTimeout(timer);
        reject(toKubeError(err, this.base, this.cfg.tlsServerName));
      });
      r.end(body);
    });
  }
}

/** The kubeconfig's impersonation; a request's own `as` replaces all of it. */
function impersonationHeaders(cfg: ClientConfig): http.OutgoingHttpHeaders {
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
    // Body errors come after the handshake: never a TLS failure.
    m.on("error", (err) => reject(toKubeError(err)));
    m.on("close", () => {
      if (!m.complete) reject(new KubeError("connection closed before the answer was complete", undefined, "ECONNRESET"));
    });
  });
}

/** A 2xx body that is not JSON (a proxy's page) is a protocol failure, reported like the others. */
function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new KubeError(`answer is not JSON (${(err as Error).message})`.slice(0, 300), undefined, "EPROTO");
  }
}

/** The API server's answer to a failed request: its Status message, and Retry-After. */
function statusError(status: number, text: string, headers: http.IncomingHttpHeaders): KubeError {
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

/** A socket, TLS or node:http failure as a KubeError; a TLS failure is a sentence naming the server and what to check. */
function toKubeError(err: unknown, server?: URL, serverName?: string): KubeError {
  if (err instanceof KubeError) return err;
  const e = err as { code?: string; message?: string };
  const code = e?.code ?? "error";
  const sentence = server ? tlsFailureSentence(String(code), server, serverName) : undefined;
  if (sentence) return new KubeError(sentence, undefined, String(code));
  return new KubeError(`${code}: ${e?.message ?? String(err)}`.slice(0, 300), undefined, String(code));
}
