// The Kubernetes API calls node reporting makes, on the official client
// (@kubernetes/client-node 1.x). This module is the only one that imports the
// client, and it is itself imported only when node reporting is on: the client
// costs ~60 MiB of RSS and ~0.3 s to load (measured; see README), which the
// nodes that do not use the feature must not pay.
import * as k8s from "@kubernetes/client-node";
import { Observable } from "@kubernetes/client-node/dist/gen/rxjsStub.js";
import type { KubeMetrics } from "./metrics.js";
import { viewOf, type JsonPatchOp, type NodeView } from "./node-view.js";
import { retryAfterMs } from "./backoff.js";

/** Which identity a request is made as. */
export type Identity = "self" | "node";

/** A failed request, reduced to what retry decisions need. */
export class KubeError extends Error {
  constructor(
    message: string,
    /** HTTP status, or undefined for network errors and timeouts. */
    readonly status: number | undefined,
    /** "http", "timeout" or the socket error code (ECONNREFUSED, ...). */
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

export interface WatchHandle {
  stop(): void;
}

export interface EventV1Body {
  [k: string]: unknown;
}

export interface KubeApi {
  readonly nodeName: string;
  readNode(as: Identity): Promise<NodeView>;
  patchNodeStatus(as: Identity, body: object): Promise<NodeView>;
  patchNodeTaints(ops: JsonPatchOp[]): Promise<NodeView>;
  /** Driver names in the node's CSINode, or null when there is no CSINode yet. */
  csiNodeDrivers(): Promise<string[] | null>;
  createEvent(api: "events.k8s.io/v1" | "v1", namespace: string, body: object): Promise<void>;
  patchEvent(api: "events.k8s.io/v1" | "v1", namespace: string, name: string, body: object): Promise<void>;
  /** Watches this node from resourceVersion; onEvent for every change, onDone once when the watch ends. */
  watchNode(
    as: Identity,
    resourceVersion: string,
    timeoutSeconds: number,
    onEvent: (type: string, view: NodeView | undefined, raw: unknown) => void,
    onDone: (err: KubeError | null) => void,
  ): Promise<WatchHandle>;
}

export interface KubeApiOptions {
  nodeName: string;
  kubeconfig?: string;
  impersonateNode: boolean;
  requestTimeoutMs: number;
  metrics: KubeMetrics;
}

/** Loads the kubeconfig (a file, or the pod's service account) or throws with a clear message. */
export function loadKubeConfig(file: string | undefined): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (file) {
    kc.loadFromFile(file);
  } else {
    if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT) {
      throw new Error("not running in a cluster (KUBERNETES_SERVICE_HOST unset) and no --kubeconfig or KUBECONFIG given");
    }
    kc.loadFromCluster();
  }
  if (!kc.getCurrentCluster()) throw new Error("the kubeconfig has no current cluster");
  if (!kc.getCurrentUser()) throw new Error("the kubeconfig has no current user");
  return kc;
}

/** The same cluster and credentials, sending Impersonate-User: system:node:<name>. */
function impersonating(kc: k8s.KubeConfig, user: string): k8s.KubeConfig {
  const out = new k8s.KubeConfig();
  const current = kc.getCurrentUser()!;
  out.loadFromOptions({
    clusters: kc.clusters,
    users: kc.users.map((u) => (u.name === current.name ? { ...u, impersonateUser: user } : u)),
    contexts: kc.contexts,
    currentContext: kc.currentContext,
  });
  return out;
}

function toKubeError(err: unknown): KubeError {
  if (err instanceof KubeError) return err;
  if (err instanceof k8s.ApiException) {
    const headers = (err.headers ?? {}) as Record<string, string>;
    const body = err.body as { message?: string } | string | undefined;
    let detail = typeof body === "string" ? body : body?.message;
    if (typeof body === "string") {
      try {
        detail = (JSON.parse(body) as { message?: string }).message ?? body;
      } catch {
        // a non-JSON body is shown as it is
      }
    }
    const ra = retryAfterMs(headers["retry-after"] ?? headers["Retry-After"]);
    return new KubeError(`HTTP ${err.code}${detail ? `: ${String(detail).slice(0, 300)}` : ""}`, err.code, "http", ra);
  }
  const e = err as { name?: string; code?: string; errno?: string; type?: string; message?: string; statusCode?: number };
  if (typeof e?.statusCode === "number") return new KubeError(`HTTP ${e.statusCode}: ${e.message ?? ""}`, e.statusCode, "http");
  if (e?.name === "AbortError" || e?.name === "TimeoutError" || e?.type === "aborted") return new KubeError("request timed out", undefined, "timeout");
  const code = e?.code ?? e?.errno ?? "error";
  return new KubeError(`${code}: ${e?.message ?? String(err)}`.slice(0, 300), undefined, String(code));
}

const timeoutMiddleware = (ms: number) => ({
  pre: (ctx: { setSignal(s: AbortSignal): void }) => {
    ctx.setSignal(AbortSignal.timeout(ms));
    return new Observable(Promise.resolve(ctx));
  },
  post: (res: unknown) => new Observable(Promise.resolve(res)),
});

export function createKubeApi(opts: KubeApiOptions): KubeApi {
  const self = loadKubeConfig(opts.kubeconfig);
  const asNode = opts.impersonateNode ? impersonating(self, `system:node:${opts.nodeName}`) : self;
  const configs = { self, node: asNode } as const;
  const core = { self: self.makeApiClient(k8s.CoreV1Api), node: asNode.makeApiClient(k8s.CoreV1Api) };
  const storage = self.makeApiClient(k8s.StorageV1Api);
  const events = self.makeApiClient(k8s.EventsV1Api);
  const name = opts.nodeName;
  const m = opts.metrics;
  const timeout = timeoutMiddleware(opts.requestTimeoutMs);
  const withTimeout = (extra?: { middleware?: unknown[] }) =>
    ({ middleware: [timeout, ...(extra?.middleware ?? [])], middlewareMergeStrategy: "append" }) as never;
  const patchAs = (type: string) => withTimeout(k8s.setHeaderOptions("Content-Type", type) as never);

  async function call<T>(verb: string, resource: string, f: () => Promise<T>): Promise<T> {
    try {
      const out = await f();
      m.requests.inc({ verb, resource, code: "200" });
      return out;
    } catch (err) {
      const ke = toKubeError(err);
      m.requests.inc({ verb, resource, code: ke.status !== undefined ? String(ke.status) : ke.kind });
      throw ke;
    }
  }

  return {
    nodeName: name,
    readNode: (as) => call("get", "nodes", async () => viewOf(await core[as].readNode({ name }, withTimeout()))),
    patchNodeStatus: (as, body) =>
      call("patch", "nodes/status", async () =>
        viewOf(await core[as].patchNodeStatus({ name, body }, patchAs(k8s.PatchStrategy.StrategicMergePatch))),
      ),
    // NodeRestriction forbids a node identity to change taints: always our own identity.
    patchNodeTaints: (ops) =>
      call("patch", "nodes", async () => viewOf(await core.self.patchNode({ name, body: ops }, patchAs(k8s.PatchStrategy.JsonPatch)))),
    csiNodeDrivers: async () => {
      try {
        const csi = await call("get", "csinodes", () => storage.readCSINode({ name }, withTimeout()));
        return (csi.spec?.drivers ?? []).map((d) => d.name);
      } catch (err) {
        if (err instanceof KubeError && err.status === 404) return null;
        throw err;
      }
    },
    createEvent: (api, namespace, body) =>
      call("create", api === "v1" ? "events" : "events.k8s.io/events", async () => {
        if (api === "v1") await core.self.createNamespacedEvent({ namespace, body: body as k8s.CoreV1Event }, withTimeout());
        else await events.createNamespacedEvent({ namespace, body: body as k8s.EventsV1Event }, withTimeout());
      }),
    patchEvent: (api, namespace, ename, body) =>
      call("patch", api === "v1" ? "events" : "events.k8s.io/events", async () => {
        const o = patchAs(k8s.PatchStrategy.MergePatch);
        if (api === "v1") await core.self.patchNamespacedEvent({ name: ename, namespace, body }, o);
        else await events.patchNamespacedEvent({ name: ename, namespace, body }, o);
      }),
    async watchNode(as, resourceVersion, timeoutSeconds, onEvent, onDone) {
      const w = new k8s.Watch(configs[as]);
      let ended = false;
      const finish = (err: unknown) => {
        if (ended) return;
        ended = true;
        const ke = err ? toKubeError(err) : null;
        m.requests.inc({ verb: "watch", resource: "nodes", code: ke ? (ke.status !== undefined ? String(ke.status) : ke.kind) : "200" });
        onDone(ke);
      };
      const controller = await w.watch(
        "/api/v1/nodes",
        { fieldSelector: `metadata.name=${name}`, resourceVersion, timeoutSeconds, allowWatchBookmarks: true },
        (type: string, obj: unknown) => {
          if (type === "ERROR") {
            const status = obj as { code?: number; message?: string };
            finish(new KubeError(`watch: ${status.message ?? "error"}`, status.code ?? 500, "http"));
            return;
          }
          onEvent(type, type === "BOOKMARK" ? undefined : viewOf(obj), obj);
        },
        (err: unknown) => finish(err),
      );
      return { stop: () => controller.abort() };
    },
  };
}
