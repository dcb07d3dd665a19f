// The Kubernetes API calls node reporting makes, on probegate's own small
// client (rest.ts): five kinds of call did not justify a general client
// library that cost ~67 MiB of RSS and ~27 MiB of heap (measured; README,
// "Kubernetes node reporting"). This module is imported only when node
// reporting is on. It answers with the API's objects as they are: what a
// Node means to probegate (node-view.ts) and what is counted (the reporter's
// metrics, through onRequest) belong to the caller.
import type { ClientConfig } from "./kubeconfig.js";
import { KubeError, RestClient, type RestRequest, type WatchHandle } from "./rest.js";

export { KubeError, type WatchHandle } from "./rest.js";

/** Which identity a request is made as. */
export type Identity = "self" | "node";

export type EventApi = "events.k8s.io/v1" | "v1";

/** An object as the API server returns it (JSON). */
export type KubeObject = unknown;

export type JsonPatchOp =
  | { op: "test"; path: string; value: unknown }
  | { op: "add" | "replace"; path: string; value: unknown }
  | { op: "remove"; path: string };

/** One finished request, for whoever counts them: the verb, the resource and the HTTP code or network error key. */
export interface RequestOutcome {
  verb: string;
  resource: string;
  code: string;
}

/** What a watch line carries: a change, a bookmark (only a resourceVersion) or an error Status. */
export interface WatchEvent {
  type: "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK";
  /** The Node as it is now, for ADDED and MODIFIED. */
  object: KubeObject | undefined;
  /** Where a watch resumes after this event. */
  resourceVersion: string;
}

export interface KubeApi {
  readonly nodeName: string;
  readNode(as: Identity): Promise<KubeObject>;
  /** The Node by a list of one, and the list's resourceVersion: where a watch starts after a 410. */
  listNode(as: Identity): Promise<{ item: KubeObject | undefined; resourceVersion: string }>;
  patchNodeStatus(as: Identity, body: object): Promise<KubeObject>;
  patchNodeTaints(ops: JsonPatchOp[]): Promise<KubeObject>;
  /** Driver names in the node's CSINode, or null when there is no CSINode yet. */
  csiNodeDrivers(): Promise<string[] | null>;
  createEvent(api: EventApi, namespace: string, body: object): Promise<void>;
  patchEvent(api: EventApi, namespace: string, name: string, body: object): Promise<void>;
  /** Watches this node from resourceVersion (with bookmarks); onEvent for every line, onDone once when the watch ends. */
  watchNode(as: Identity, resourceVersion: string, timeoutSeconds: number, onEvent: (e: WatchEvent) => void, onDone: (err: KubeError | null) => void): WatchHandle;
  close(): void;
}

export interface KubeApiOptions {
  nodeName: string;
  config: ClientConfig;
  impersonateNode: boolean;
  requestTimeoutMs: number;
  /** Told of every request once it has finished (a watch: once it has ended). */
  onRequest?: (r: RequestOutcome) => void;
  userAgent: string;
}

const SMP = "application/strategic-merge-patch+json";
const MERGE = "application/merge-patch+json";
const JSON_PATCH = "application/json-patch+json";

type Obj = { metadata?: { resourceVersion?: string }; items?: unknown[]; spec?: { drivers?: Array<{ name: string }> } };

export function createKubeApi(opts: KubeApiOptions): KubeApi {
  const rest = new RestClient(opts.config, opts.requestTimeoutMs, opts.userAgent);
  const name = opts.nodeName;
  const node = `/api/v1/nodes/${encodeURIComponent(name)}`;
  const observe = opts.onRequest ?? (() => {});
  const as = (who: Identity) => (who === "node" && opts.impersonateNode ? `system:node:${name}` : undefined);

  async function call<T>(verb: string, resource: string, req: RestRequest): Promise<T> {
    try {
      const out = await rest.json<T>(req);
      observe({ verb, resource, code: "200" });
      return out;
    } catch (err) {
      // rest.json rejects with nothing but KubeError.
      observe({ verb, resource, code: (err as KubeError).key });
      throw err;
    }
  }
  const events = (api: EventApi, ns: string) =>
    `${api === "v1" ? "/api/v1" : "/apis/events.k8s.io/v1"}/namespaces/${encodeURIComponent(ns)}/events`;
  const eventResource = (api: EventApi) => (api === "v1" ? "events" : "events.k8s.io/events");
  const one = `fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;

  return {
    nodeName: name,
    close: () => rest.close(),
    readNode: (who) => call("get", "nodes", { method: "GET", path: node, as: as(who) }),
    listNode: async (who) => {
      const list = await call<Obj>("list", "nodes", { method: "GET", path: `/api/v1/nodes?${one}`, as: as(who) });
      const item = list.items?.[0];
      return { item, resourceVersion: list.metadata?.resourceVersion ?? "" };
    },
    patchNodeStatus: (who, body) => call("patch", "nodes/status", { method: "PATCH", path: `${node}/status`, body, contentType: SMP, as: as(who) }),
    // NodeRestriction forbids a node identity to change taints: always our own identity.
    patchNodeTaints: (ops) => call("patch", "nodes", { method: "PATCH", path: node, body: ops, contentType: JSON_PATCH }),
    csiNodeDrivers: async () => {
      try {
        const csi = await call<Obj>("get", "csinodes", { method: "GET", path: `/apis/storage.k8s.io/v1/csinodes/${encodeURIComponent(name)}` });
        return (csi.spec?.drivers ?? []).map((d) => d.name);
      } catch (err) {
        if (err instanceof KubeError && err.status === 404) return null;
        throw err;
      }
    },
    createEvent: async (api, ns, body) => {
      await call("create", eventResource(api), { method: "POST", path: events(api, ns), body });
    },
    patchEvent: async (api, ns, ename, body) => {
      await call("patch", eventResource(api), { method: "PATCH", path: `${events(api, ns)}/${encodeURIComponent(ename)}`, body, contentType: MERGE });
    },
    watchNode(who, resourceVersion, timeoutSeconds, onEvent, onDone) {
      const query = `watch=true&${one}&resourceVersion=${encodeURIComponent(resourceVersion)}&timeoutSeconds=${timeoutSeconds}&allowWatchBookmarks=true`;
      const done = (err: KubeError | null) => {
        observe({ verb: "watch", resource: "nodes", code: err ? err.key : "200" });
        onDone(err);
      };
      // The server ends the watch after timeoutSeconds; the client's own bound leaves it a request timeout more.
      const handle = rest.watch({ method: "GET", path: `/api/v1/nodes?${query}`, as: as(who) }, timeoutSeconds * 1000 + opts.requestTimeoutMs, (line) => {
        const l = line as { type?: string; object?: { code?: number; message?: string; metadata?: { resourceVersion?: string } } };
        if (l.type === "ERROR") {
          // 410 Gone here: the resourceVersion is older than the server keeps; the caller lists again.
          const st = l.object ?? {};
          handle.stop(new KubeError(`watch: ${st.message ?? "error"}`, st.code ?? 500, "http"));
          return;
        }
        if (l.type !== "ADDED" && l.type !== "MODIFIED" && l.type !== "DELETED" && l.type !== "BOOKMARK") return;
        const change = l.type === "ADDED" || l.type === "MODIFIED";
        // Thrown, the watch ends as a bad event (rest.ts) and is started again.
        if (change && l.object == null) throw new Error(`${l.type} event without an object`);
        const rv = l.object?.metadata?.resourceVersion ?? "";
        onEvent({ type: l.type, object: change ? l.object : undefined, resourceVersion: rv });
      }, done);
      return handle;
    },
  };
}
