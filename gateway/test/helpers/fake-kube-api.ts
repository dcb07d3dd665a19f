// A fake Kubernetes API server for node-reporting tests: plain node:http and
// JSON, enforcing the real API server's semantics where probegate depends on
// them (kube-apiserver cannot be installed here):
// - strategic merge patch merges status.conditions by type (and honours
//   `$patch: delete`); spec.taints has no merge key, so any patch that sets it
//   replaces the list; JSON merge patch replaces lists; JSON patch with `test`
//   (a failed test is 422, as the real server answers);
// - metadata.resourceVersion in a patch or update is a precondition (409);
// - the status subresource changes only status, the main resource never status;
// - identities: a bearer token names a service account bound to one node (what
//   a ValidatingAdmissionPolicy on the pod-bound token's node-name enforces:
//   403 on any other node); Impersonate-User: system:node:<name> is allowed
//   only for the token's own node (constrained impersonation), and then
//   NodeRestriction applies: no other node, and never a change of taints;
// - a "kubelet" that keeps heartbeating its own conditions, a "node
//   controller" that adds and removes its own taint, both concurrently;
// - faults on demand: the next N requests answer 409/429 (Retry-After)/500,
//   or the server refuses connections for a while;
// - CSINode objects, Events in v1 and events.k8s.io/v1, and Node watches with
//   the watch cache's rules: a watch resumes from a resourceVersion and gets
//   every change after it; one older than the kept history (compact()) gets a
//   410 Gone ERROR event; a watch without one starts with the object (ADDED);
//   allowWatchBookmarks gets BOOKMARK events (bookmark(), and one before the
//   server ends the watch at timeoutSeconds); lists carry their resourceVersion;
// - TLS on demand (tls option): the server certificate the test made, and, with
//   clientCA, client certificates required and verified (the certificate's CN is
//   the user, bound to a node by certUsers). Tokens can be revoked and added
//   while it runs (a rotated token: the old one is then refused with 401).
import http from "node:http";
import https from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";

type Json = Record<string, any>;

export interface RequestRecord {
  method: string;
  path: string;
  query: string;
  contentType: string;
  user: string;
  status: number;
  bytesIn: number;
  bytesOut: number;
  /** Set when the answer was a fault injected with failNext, not the server's own. */
  injected?: boolean;
  at: number;
  watch: boolean;
}

export interface Fault {
  status: number;
  retryAfter?: string;
  /** Only requests matching this (method and path substring) fail. */
  match?: { method?: string; path?: string };
}

export interface FakeKubeOptions {
  /** token → the node the service account's pod runs on. */
  tokens?: Record<string, string>;
  /** Serve events.k8s.io/v1 (default true); false makes it 404 like a pre-1.19 cluster. */
  eventsV1?: boolean;
  /** HTTPS with this key and certificate (PEM); clientCA: client certificates required and verified against it. */
  tls?: { key: string | Buffer; cert: string | Buffer; clientCA?: string | Buffer };
  /** Client certificate CN → the node its user is bound to. */
  certUsers?: Record<string, string>;
}

/** Changes kept for watches to resume from (the real server keeps about five minutes'). */
const HISTORY = 2000;

const DAY0 = "2026-01-01T00:00:00Z";

function rfc3339(ms = Date.now()): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

function clone<T>(v: T): T {
  return v === undefined ? v : JSON.parse(JSON.stringify(v));
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}
function canon(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, canon((v as Json)[k])]));
  }
  return v;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** RFC 7386. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!patch || typeof patch !== "object" || Array.isArray(patch)) return clone(patch);
  const out: Json = target && typeof target === "object" && !Array.isArray(target) ? clone(target as Json) : {};
  for (const [k, v] of Object.entries(patch as Json)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** Merge keys of the Node's lists, as in the Node's Go struct tags; lists not named here are replaced. */
const MERGE_KEYS: Record<string, string> = {
  "status.conditions": "type",
  "status.addresses": "type",
};

/** Strategic merge patch for the fields of a Node that matter here. */
export function strategicMergePatch(target: unknown, patch: unknown, path = ""): unknown {
  if (!patch || typeof patch !== "object" || Array.isArray(patch)) return clone(patch);
  const out: Json = target && typeof target === "object" && !Array.isArray(target) ? clone(target as Json) : {};
  for (const [k, v] of Object.entries(patch as Json)) {
    const p = path ? `${path}.${k}` : k;
    if (k.startsWith("$")) continue;
    if (v === null) {
      delete out[k];
    } else if (Array.isArray(v) && MERGE_KEYS[p]) {
      const key = MERGE_KEYS[p]!;
      const list: Json[] = Array.isArray(out[k]) ? clone(out[k]) : [];
      for (const item of v as Json[]) {
        const i = list.findIndex((x) => x[key] === item[key]);
        if (item.$patch === "delete") {
          if (i >= 0) list.splice(i, 1);
        } else if (i >= 0) list[i] = strategicMergePatch(list[i], item, p) as Json;
        else list.push(strategicMergePatch({}, item, p) as Json);
      }
      out[k] = list;
    } else if (Array.isArray(v)) {
      out[k] = clone(v); // no merge key (spec.taints among them): replaced
    } else {
      out[k] = strategicMergePatch(out[k], v, p);
    }
  }
  return out;
}

function pointer(path: string): string[] {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new HttpError(422, "Invalid", `bad JSON pointer ${path}`);
  return path.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** RFC 6902 (add, remove, replace, test), strict: a test of a missing path fails. */
export function jsonPatch(doc: Json, ops: Json[]): Json {
  const root = clone(doc);
  for (const op of ops) {
    const parts = pointer(op.path);
    const last = parts.pop()!;
    let parent: any = root;
    for (const p of parts) {
      parent = Array.isArray(parent) ? parent[Number(p)] : parent?.[p];
      if (parent === undefined) {
        if (op.op === "test") throw new HttpError(422, "Invalid", `the server rejected our request due to an error in our request: test failed: ${op.path} missing`);
        throw new HttpError(422, "Invalid", `doc is missing path: ${op.path}`);
      }
    }
    const exists = Array.isArray(parent) ? (last === "-" ? false : Number(last) < parent.length) : Object.prototype.hasOwnProperty.call(parent, last);
    switch (op.op) {
      case "test":
        if (!exists || !deepEqual(Array.isArray(parent) ? parent[Number(last)] : parent[last], op.value)) {
          throw new HttpError(422, "Invalid", `the server rejected our request due to an error in our request: testing value ${op.path} failed`);
        }
        break;
      case "add":
        if (Array.isArray(parent)) parent.splice(last === "-" ? parent.length : Number(last), 0, clone(op.value));
        else parent[last] = clone(op.value);
        break;
      case "replace":
        if (!exists) throw new HttpError(422, "Invalid", `replace operation does not apply: doc is missing key: ${op.path}`);
        if (Array.isArray(parent)) parent[Number(last)] = clone(op.value);
        else parent[last] = clone(op.value);
        break;
      case "remove":
        if (!exists) throw new HttpError(422, "Invalid", `remove operation does not apply: doc is missing path: ${op.path}`);
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else delete parent[last];
        break;
      default:
        throw new HttpError(422, "Invalid", `unsupported op ${op.op}`);
    }
  }
  return root;
}

interface Watcher {
  node: string;
  res: http.ServerResponse;
  record: RequestRecord;
  bookmarks: boolean;
}

export class FakeKubeApi {
  readonly nodes = new Map<string, Json>();
  readonly csinodes = new Map<string, Json>();
  /** "ns/name" → Event, per API. */
  readonly coreEvents = new Map<string, Json>();
  readonly eventsV1 = new Map<string, Json>();
  readonly requests: RequestRecord[] = [];
  /** Writes refused by the authorization/admission rules, with the reason. */
  readonly denied: Array<{ user: string; path: string; message: string }> = [];
  /**
   * API writes that changed what belongs to others: kubelet's conditions (types
   * without a domain), or a taint whose key is in protectedTaints.
   */
  readonly clobbered: Array<{ user: string; path: string; what: string }> = [];
  readonly protectedTaints = new Set<string>();
  private rv = 1000;
  /** Node changes in order, for watches that resume; below compactedRv they are gone. */
  private history: Array<{ rv: number; node: string; obj: Json }> = [];
  private compactedRv = 0;
  private readonly tokens: Map<string, string>;
  private faults: Fault[] = [];
  private refusing = false;
  private server: http.Server;
  private sockets = new Set<Socket>();
  private watchers = new Set<Watcher>();
  private timers: NodeJS.Timeout[] = [];
  port = 0;

  constructor(private readonly opts: FakeKubeOptions = {}) {
    this.tokens = new Map(Object.entries(opts.tokens ?? {}));
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => void this.handle(req, res);
    this.server = opts.tls
      ? https.createServer(
          { key: opts.tls.key, cert: opts.tls.cert, ...(opts.tls.clientCA ? { ca: opts.tls.clientCA, requestCert: true, rejectUnauthorized: true } : {}) },
          handler,
        )
      : http.createServer(handler);
    this.server.on(opts.tls ? "secureConnection" : "connection", (s: Socket) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
      if (this.refusing) s.destroy();
    });
    this.server.on("tlsClientError", (err: Error) => this.tlsErrors.push(err.message));
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(this.port, "127.0.0.1", r));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get url(): string {
    return `${this.opts.tls ? "https" : "http"}://127.0.0.1:${this.port}`;
  }

  /** TLS connections that failed their handshake, with the reason (a client that did not trust us, no client certificate). */
  readonly tlsErrors: string[] = [];

  /** A token from now on authenticates as the service account bound to `node`. */
  addToken(token: string, node: string): void {
    this.tokens.set(token, node);
  }

  /** The token is refused (401) from now on, as an expired projected token is. */
  revokeToken(token: string): void {
    this.tokens.delete(token);
  }

  /**
   * A kubeconfig file for a service-account token (see tokens). insecure: with
   * insecure-skip-tls-verify, which @kubernetes/client-node wanted even for an
   * http:// server (the bench's peer rows run that old client).
   */
  kubeconfig(token: string, opts: { insecure?: boolean } = {}): string {
    return [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      `- name: fake`,
      `  cluster: {server: "${this.url}"${opts.insecure ? ", insecure-skip-tls-verify: true" : ""}}`,
      "users:",
      `- name: sa`,
      `  user: {token: "${token}"}`,
      "contexts:",
      `- name: fake`,
      `  context: {cluster: fake, user: sa}`,
      "current-context: fake",
      "",
    ].join("\n");
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    for (const w of this.watchers) w.res.destroy();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  // ---- the cluster's objects and its other actors ----

  /** images: how many container images status.images lists (a real node's object is mostly that: 10-20 KB). */
  addNode(name: string, extra: { taints?: Json[]; images?: number } = {}): Json {
    const now = rfc3339();
    const node: Json = {
      apiVersion: "v1",
      kind: "Node",
      metadata: { name, uid: `uid-${name}`, resourceVersion: String(++this.rv), labels: { "kubernetes.io/hostname": name }, creationTimestamp: DAY0 },
      spec: extra.taints ? { taints: clone(extra.taints) } : {},
      status: {
        conditions: ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"].map((type) => ({
          type,
          status: type === "Ready" ? "True" : "False",
          reason: type === "Ready" ? "KubeletReady" : `KubeletHasNo${type}`,
          message: "kubelet says so",
          lastHeartbeatTime: now,
          lastTransitionTime: DAY0,
        })),
        addresses: [{ type: "InternalIP", address: "10.0.0.1" }],
        images: Array.from({ length: extra.images ?? 0 }, (_, i) => ({
          names: [`registry.example.com/team-${i % 7}/image-${i}@sha256:${"0123456789abcdef".repeat(4)}`, `registry.example.com/team-${i % 7}/image-${i}:v1.${i}.0`],
          sizeBytes: 10_000_000 + i * 12345,
        })),
        nodeInfo: { kubeletVersion: "v1.36.0", containerRuntimeVersion: "containerd://2.1.0", kernelVersion: "6.8.0", osImage: "Ubuntu 24.04 LTS", architecture: "amd64", operatingSystem: "linux" },
      },
    };
    this.nodes.set(name, node);
    return node;
  }

  setCSINode(name: string, drivers: string[]): void {
    this.csinodes.set(name, {
      apiVersion: "storage.k8s.io/v1",
      kind: "CSINode",
      metadata: { name, resourceVersion: String(++this.rv) },
      spec: { drivers: drivers.map((d) => ({ name: d, nodeID: name, topologyKeys: null })) },
    });
  }

  /** Changes a node as another component would (a full update with a new resourceVersion). */
  mutateNode(name: string, f: (n: Json) => void): void {
    const n = clone(this.nodes.get(name));
    if (!n) return;
    f(n);
    this.store(name, n);
  }

  /** kubelet: refreshes its conditions' heartbeats (and only its own) every intervalMs. */
  startKubelet(name: string, intervalMs: number): void {
    this.timers.push(
      setInterval(() => {
        this.mutateNode(name, (n) => {
          for (const c of n.status.conditions as Json[]) {
            if (!c.type.includes("/")) c.lastHeartbeatTime = rfc3339();
          }
        });
      }, intervalMs),
    );
  }

  /** A node controller: adds and removes its own taint every intervalMs. */
  startNodeController(name: string, key: string, intervalMs: number): void {
    this.protectedTaints.add(key);
    this.timers.push(
      setInterval(() => {
        this.mutateNode(name, (n) => {
          const taints: Json[] = n.spec.taints ?? [];
          const i = taints.findIndex((t) => t.key === key);
          if (i >= 0) taints.splice(i, 1);
          else taints.push({ key, effect: "NoSchedule", timeAdded: rfc3339() });
          n.spec.taints = taints;
        });
      }, intervalMs),
    );
  }

  // ---- faults ----

  /** The next `count` requests (optionally only those matching) answer with this status. */
  failNext(count: number, fault: Fault): void {
    for (let i = 0; i < count; i++) this.faults.push(fault);
  }

  clearFaults(): void {
    this.faults = [];
  }

  /** Connection refused from now on (open connections cut, the port closed) until accept(). */
  async refuse(): Promise<void> {
    this.refusing = true;
    for (const w of this.watchers) w.res.destroy();
    this.watchers.clear();
    await new Promise<void>((r) => this.server.close(() => r()));
    for (const s of this.sockets) s.destroy();
  }

  async accept(): Promise<void> {
    this.refusing = false;
    await new Promise<void>((r) => this.server.listen(this.port, "127.0.0.1", r));
  }

  // ---- queries for tests ----

  node(name: string): Json {
    return clone(this.nodes.get(name))!;
  }

  condition(name: string, type: string): Json | undefined {
    return (this.nodes.get(name)?.status.conditions as Json[]).find((c) => c.type === type);
  }

  taints(name: string): Json[] {
    return clone(this.nodes.get(name)?.spec.taints ?? []);
  }

  /** Requests that changed something (not GETs or watches). */
  writes(filter?: (r: RequestRecord) => boolean): RequestRecord[] {
    return this.requests.filter((r) => r.method !== "GET" && (!filter || filter(r)));
  }

  // ---- the server ----

  private store(name: string, node: Json): Json {
    node.metadata.resourceVersion = String(++this.rv);
    this.nodes.set(name, node);
    this.history.push({ rv: this.rv, node: name, obj: clone(node) });
    if (this.history.length > HISTORY) this.compactedRv = this.history.shift()!.rv;
    for (const w of this.watchers) {
      if (w.node === name) this.sendEvent(w, "MODIFIED", node);
    }
    return node;
  }

  /** Forgets the history up to now (etcd compaction): a watch from any older resourceVersion gets 410 Gone. */
  compact(): void {
    this.history = [];
    this.compactedRv = ++this.rv;
  }

  /** A BOOKMARK (the current resourceVersion) to every watch that asked for bookmarks. */
  bookmark(): void {
    for (const w of this.watchers) this.sendBookmark(w);
  }

  /** Ends every open watch cleanly, as an API server restart or a load balancer does. */
  endWatches(): void {
    for (const w of this.watchers) w.res.end();
    this.watchers.clear();
  }

  /** A line, as it is, to every open watch: what no real API server sends (null, an event without its object). */
  sendWatchLine(line: string): void {
    for (const w of this.watchers) w.res.write(line + "\n");
  }

  /** Watch requests so far, with the resourceVersion each started from. */
  watchesFrom(): string[] {
    return this.requests.filter((r) => r.watch).map((r) => new URLSearchParams(r.query).get("resourceVersion") ?? "");
  }

  private sendBookmark(w: Watcher): void {
    if (w.bookmarks) this.sendEvent(w, "BOOKMARK", { kind: "Node", apiVersion: "v1", metadata: { resourceVersion: String(this.rv) } });
  }

  private sendEvent(w: Watcher, type: string, obj: Json): void {
    const line = JSON.stringify({ type, object: obj }) + "\n";
    w.record.bytesOut += Buffer.byteLength(line);
    w.res.write(line);
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", "http://x");
    const rec: RequestRecord = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.search,
      contentType: String(req.headers["content-type"] ?? ""),
      user: "",
      status: 0,
      bytesIn: raw.length + JSON.stringify(req.headers).length,
      bytesOut: 0,
      at: Date.now(),
      watch: url.searchParams.get("watch") === "true",
    };
    this.requests.push(rec);
    const send = (status: number, body: Json, headers: Record<string, string> = {}) => {
      const text = JSON.stringify(body);
      rec.status = status;
      rec.bytesOut = Buffer.byteLength(text) + 100;
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(text);
    };
    const fail = (e: HttpError, headers: Record<string, string> = {}) =>
      send(e.status, { kind: "Status", apiVersion: "v1", status: "Failure", message: e.message, reason: e.reason, code: e.status }, headers);
    try {
      const fi = this.faults.findIndex(
        (f) => (!f.match?.method || f.match.method === rec.method) && (!f.match?.path || rec.path.includes(f.match.path)),
      );
      if (fi >= 0) {
        const f = this.faults.splice(fi, 1)[0]!;
        rec.injected = true;
        const reason = f.status === 429 ? "TooManyRequests" : f.status === 409 ? "Conflict" : "InternalError";
        fail(new HttpError(f.status, reason, `injected ${f.status}`), f.retryAfter ? { "retry-after": f.retryAfter } : {});
        return;
      }
      rec.user = this.authenticate(req);
      const body = raw.length ? JSON.parse(raw.toString("utf8")) : undefined;
      this.route(req, url, rec, body, send, res);
    } catch (err) {
      if (err instanceof HttpError) fail(err);
      else fail(new HttpError(500, "InternalError", (err as Error).message));
    }
  }

  private authenticate(req: http.IncomingMessage): string {
    const auth = String(req.headers.authorization ?? "");
    const token = auth.startsWith("Bearer ") ? auth.slice(7) : "";
    const cn = this.opts.tls?.clientCA ? (req.socket as TLSSocket).getPeerCertificate?.()?.subject?.CN : undefined;
    const certNode = typeof cn === "string" && (req.socket as TLSSocket).authorized ? this.opts.certUsers?.[cn] : undefined;
    // As the real server: an invalid bearer token is 401 even with a valid certificate.
    const boundNode = token ? this.tokens.get(token) : certNode;
    if (boundNode === undefined) throw new HttpError(401, "Unauthorized", "Unauthorized");
    const sa = `system:serviceaccount:probegate:probegate-node@${boundNode}`;
    const imp = req.headers["impersonate-user"];
    if (imp === undefined) return sa;
    // Constrained impersonation, associated-node: only the node the token's pod is bound to.
    if (imp !== `system:node:${boundNode}`) {
      this.denied.push({ user: sa, path: req.url ?? "", message: `cannot impersonate ${imp}` });
      throw new HttpError(403, "Forbidden", `users "${imp}" is forbidden: ${sa} can only impersonate its associated node`);
    }
    return String(imp);
  }

  private authorizeNodeWrite(user: string, name: string, path: string): void {
    const nodeUser = /^system:node:(.+)$/.exec(user)?.[1];
    const saNode = /@(.+)$/.exec(user)?.[1];
    const own = nodeUser ?? saNode;
    if (own !== name) {
      const message = nodeUser
        ? `node "${nodeUser}" is not allowed to modify node "${name}"`
        : `ValidatingAdmissionPolicy 'probegate-node-reporting-own-node' denied request: a node's probegate may change only its own Node`;
      this.denied.push({ user, path, message });
      throw new HttpError(403, "Forbidden", message);
    }
  }

  private checkForeign(before: Json, after: Json, user: string, path: string): void {
    const kubelet = (n: Json) => ((n.status?.conditions ?? []) as Json[]).filter((c) => !c.type.includes("/"));
    if (!deepEqual(kubelet(before), kubelet(after))) this.clobbered.push({ user, path, what: "kubelet conditions" });
    const theirs = (n: Json) => ((n.spec?.taints ?? []) as Json[]).filter((t) => this.protectedTaints.has(t.key));
    if (!deepEqual(theirs(before), theirs(after))) this.clobbered.push({ user, path, what: "another component's taint" });
  }

  private route(
    req: http.IncomingMessage,
    url: URL,
    rec: RequestRecord,
    body: any,
    send: (status: number, body: Json, headers?: Record<string, string>) => void,
    res: http.ServerResponse,
  ): void {
    const p = url.pathname;
    const method = req.method;
    let m: RegExpExecArray | null;
    if (method === "GET" && p === "/api/v1/nodes" && rec.watch) {
      const field = url.searchParams.get("fieldSelector") ?? "";
      const name = /^metadata\.name=(.+)$/.exec(field)?.[1];
      if (!name) throw new HttpError(400, "BadRequest", "this fake watches one node (fieldSelector=metadata.name=...)");
      this.watch(name, url, rec, res);
      return;
    }
    if (method === "GET" && p === "/api/v1/nodes") {
      const field = url.searchParams.get("fieldSelector") ?? "";
      const name = /^metadata\.name=(.+)$/.exec(field)?.[1];
      const items = [...this.nodes.values()].filter((n) => name === undefined || n.metadata.name === name);
      return send(200, { kind: "NodeList", apiVersion: "v1", metadata: { resourceVersion: String(this.rv) }, items });
    }
    if ((m = /^\/api\/v1\/nodes\/([^/]+)(\/status)?$/.exec(p))) {
      const name = decodeURIComponent(m[1]!);
      const status = Boolean(m[2]);
      const cur = this.nodes.get(name);
      if (!cur) throw new HttpError(404, "NotFound", `nodes "${name}" not found`);
      if (method === "GET") return send(200, cur);
      this.authorizeNodeWrite(rec.user, name, p);
      let next: Json;
      if (method === "PATCH") next = this.applyPatch(cur, rec.contentType, body);
      else if (method === "PUT") next = clone(body);
      else throw new HttpError(405, "MethodNotAllowed", `${method} not allowed`);
      const want = next.metadata?.resourceVersion;
      if ((method === "PUT" || (want !== undefined && want !== "")) && want !== cur.metadata.resourceVersion) {
        throw new HttpError(409, "Conflict", `Operation cannot be fulfilled on nodes "${name}": the object has been modified; please apply your changes to the latest version and try again`);
      }
      // The subresource decides what may change.
      const merged: Json = status ? { ...clone(cur), status: next.status } : { ...next, status: clone(cur.status) };
      merged.metadata = { ...clone(cur.metadata), ...(status ? {} : { labels: next.metadata?.labels ?? cur.metadata.labels }) };
      this.checkForeign(cur, merged, rec.user, p);
      if (/^system:node:/.test(rec.user) && !deepEqual(merged.spec?.taints ?? null, cur.spec?.taints ?? null)) {
        const message = `node "${name}" is not allowed to modify taints`;
        this.denied.push({ user: rec.user, path: p, message });
        throw new HttpError(403, "Forbidden", message);
      }
      return send(200, this.store(name, merged));
    }
    if ((m = /^\/apis\/storage\.k8s\.io\/v1\/csinodes\/([^/]+)$/.exec(p)) && method === "GET") {
      const c = this.csinodes.get(decodeURIComponent(m[1]!));
      if (!c) throw new HttpError(404, "NotFound", `csinodes.storage.k8s.io "${m[1]}" not found`);
      return send(200, c);
    }
    if ((m = /^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/.exec(p))) {
      return this.events(this.coreEvents, "v1", m[1]!, m[2], method!, rec, body, send);
    }
    if ((m = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/.exec(p))) {
      if (this.opts.eventsV1 === false) throw new HttpError(404, "NotFound", "the server could not find the requested resource");
      return this.events(this.eventsV1, "events.k8s.io/v1", m[1]!, m[2], method!, rec, body, send);
    }
    throw new HttpError(404, "NotFound", `no route for ${method} ${p}`);
  }

  private events(
    store: Map<string, Json>,
    apiVersion: string,
    ns: string,
    name: string | undefined,
    method: string,
    rec: RequestRecord,
    body: any,
    send: (status: number, body: Json) => void,
  ): void {
    // RBAC as deploy/kustomize/components/node-reporting*/rbac.yaml grants it: a
    // Role for events create/patch in namespace default only (the Node
    // authorizer would allow a node identity any namespace; this fake's
    // node identities never write Events).
    if (!/^system:node:/.test(rec.user) && ns !== "default" && (method === "POST" || method === "PATCH")) {
      const message = `events is forbidden: User "${rec.user}" cannot ${method === "POST" ? "create" : "patch"} resource "events" in the namespace "${ns}"`;
      this.denied.push({ user: rec.user, path: rec.path, message });
      throw new HttpError(403, "Forbidden", message);
    }
    if (method === "POST" && !name) {
      validateEvent(apiVersion, ns, body);
      const key = `${ns}/${body?.metadata?.name}`;
      if (!body?.metadata?.name) throw new HttpError(422, "Invalid", "metadata.name: Required value");
      if (store.has(key)) throw new HttpError(409, "AlreadyExists", `events "${body.metadata.name}" already exists`);
      const ev = { ...body, apiVersion, kind: "Event", metadata: { ...body.metadata, namespace: ns, resourceVersion: String(++this.rv) } };
      if (apiVersion === "events.k8s.io/v1" && (!ev.eventTime || !ev.reportingController || !ev.action || !ev.regarding)) {
        throw new HttpError(422, "Invalid", "eventTime, reportingController, action and regarding are required");
      }
      store.set(key, ev);
      return send(201, ev);
    }
    if (method === "PATCH" && name) {
      const key = `${ns}/${name}`;
      const cur = store.get(key);
      if (!cur) throw new HttpError(404, "NotFound", `events "${name}" not found`);
      const next = this.applyPatch(cur, rec.contentType, body);
      next.metadata.resourceVersion = String(++this.rv);
      store.set(key, next);
      return send(200, next);
    }
    if (method === "GET") return send(200, { kind: "EventList", items: [...store.values()] });
    throw new HttpError(405, "MethodNotAllowed", `${method} not allowed`);
  }

  private applyPatch(cur: Json, contentType: string, body: any): Json {
    const type = contentType.split(";")[0]!.trim();
    if (type === "application/strategic-merge-patch+json") return strategicMergePatch(cur, body) as Json;
    if (type === "application/merge-patch+json") return mergePatch(cur, body) as Json;
    if (type === "application/json-patch+json") {
      if (!Array.isArray(body)) throw new HttpError(400, "BadRequest", "a JSON patch is a list of operations");
      return jsonPatch(cur, body);
    }
    throw new HttpError(415, "UnsupportedMediaType", `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json`);
  }

  private watch(name: string, url: URL, rec: RequestRecord, res: http.ServerResponse): void {
    const node = this.nodes.get(name);
    rec.status = 200;
    res.writeHead(200, { "content-type": "application/json", "transfer-encoding": "chunked" });
    const w: Watcher = { node: name, res, record: rec, bookmarks: url.searchParams.get("allowWatchBookmarks") === "true" };
    const from = url.searchParams.get("resourceVersion") ?? "";
    if (from !== "" && from !== "0" && Number(from) < this.compactedRv) {
      // As the watch cache answers: HTTP 200, then one ERROR event carrying 410, then the end.
      this.sendEvent(w, "ERROR", { kind: "Status", apiVersion: "v1", status: "Failure", message: `too old resource version: ${from} (${this.compactedRv})`, reason: "Expired", code: 410 });
      res.end();
      return;
    }
    this.watchers.add(w);
    if (from === "" || from === "0") {
      if (node) this.sendEvent(w, "ADDED", node);
    } else {
      for (const h of this.history) if (h.node === name && h.rv > Number(from)) this.sendEvent(w, "MODIFIED", h.obj);
    }
    const timeout = Number(url.searchParams.get("timeoutSeconds") ?? "0");
    const timer =
      timeout > 0
        ? setTimeout(() => {
            this.sendBookmark(w);
            res.end();
          }, timeout * 1000)
        : undefined;
    res.on("close", () => {
      if (timer) clearTimeout(timer);
      this.watchers.delete(w);
    });
  }
}

/**
 * What the API server's event validation checks of the Events probegate
 * writes (pkg/apis/core/validation/events.go): the object an Event is about
 * may be cluster-scoped (a Node, a PersistentVolume: no namespace), and then
 * the Event lives in "default" (or "kube-system" for a new-style Event with
 * eventTime); a namespaced object's Event lives in its namespace. Reason and
 * action at most 128 characters, an events.k8s.io note at most 1 kB.
 */
function validateEvent(apiVersion: string, ns: string, body: any): void {
  const about = apiVersion === "v1" ? body?.involvedObject : body?.regarding;
  if (!about?.kind || !about?.name) throw new HttpError(422, "Invalid", `${apiVersion === "v1" ? "involvedObject" : "regarding"}: kind and name are required`);
  const objNs = about.namespace ?? "";
  const newStyle = Boolean(body?.eventTime);
  if (objNs === "") {
    const allowed = newStyle ? ["default", "kube-system"] : ["", "default"];
    if (!allowed.includes(ns)) throw new HttpError(422, "Invalid", `involvedObject.namespace: Invalid value: "": does not match event.namespace`);
  } else if (objNs !== ns) {
    throw new HttpError(422, "Invalid", `involvedObject.namespace: Invalid value: "${objNs}": does not match event.namespace`);
  }
  if (String(body?.reason ?? "").length > 128) throw new HttpError(422, "Invalid", "reason: Too long: may not be longer than 128");
  if (String(body?.action ?? "").length > 128) throw new HttpError(422, "Invalid", "action: Too long: may not be longer than 128");
  if (apiVersion !== "v1" && Buffer.byteLength(String(body?.note ?? "")) > 1024) throw new HttpError(422, "Invalid", "note: Too long: may not be longer than 1024");
}
