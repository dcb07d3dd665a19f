// The fake API server must behave like kube-apiserver where node reporting
// depends on it; these tests pin those semantics (through plain HTTP).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeKubeApi } from "./helpers/fake-kube-api.js";

let api: FakeKubeApi;
beforeAll(async () => {
  api = await new FakeKubeApi({ tokens: { "token-a": "node-a" } }).start();
  api.addNode("node-a", { taints: [{ key: "a", effect: "NoSchedule" }, { key: "b", effect: "NoExecute" }] });
  api.addNode("node-b");
});
afterAll(() => api.close());

async function req(method: string, path: string, body?: unknown, type = "application/json", headers: Record<string, string> = {}) {
  const res = await fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: "Bearer token-a", "content-type": type, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}
const SMP = "application/strategic-merge-patch+json";

describe("fake kube-apiserver semantics", () => {
  it("strategic merge patch merges status.conditions by type; JSON merge patch replaces the list", async () => {
    const r = await req("PATCH", "/api/v1/nodes/node-a/status", { status: { conditions: [{ type: "x.io/A", status: "True" }] } }, SMP);
    expect(r.status).toBe(200);
    expect(r.body.status.conditions.map((c: any) => c.type)).toEqual(["MemoryPressure", "DiskPressure", "PIDPressure", "Ready", "x.io/A"]);
    const d = await req("PATCH", "/api/v1/nodes/node-a/status", { status: { conditions: [{ type: "x.io/A", $patch: "delete" }] } }, SMP);
    expect(d.body.status.conditions).toHaveLength(4);
    const m = await req("PATCH", "/api/v1/nodes/node-b/status", { status: { conditions: [{ type: "x.io/A", status: "True" }] } }, "application/merge-patch+json");
    expect(m.status).toBe(403); // another node: refused
  });

  it("taints have no merge key: a strategic merge patch replaces the whole list", async () => {
    const r = await req("PATCH", "/api/v1/nodes/node-a", { spec: { taints: [{ key: "c", effect: "NoSchedule" }] } }, SMP);
    expect(r.body.spec.taints).toEqual([{ key: "c", effect: "NoSchedule" }]);
  });

  it("resourceVersion is a precondition (409); a failed JSON patch test is 422", async () => {
    const stale = await req("PATCH", "/api/v1/nodes/node-a/status", { metadata: { resourceVersion: "1" }, status: {} }, SMP);
    expect(stale.status).toBe(409);
    const t = await req("PATCH", "/api/v1/nodes/node-a", [{ op: "test", path: "/spec/taints", value: [] }, { op: "add", path: "/spec/taints", value: [] }], "application/json-patch+json");
    expect(t.status).toBe(422);
    const ok = await req("PATCH", "/api/v1/nodes/node-a", [{ op: "test", path: "/spec/taints", value: [{ key: "c", effect: "NoSchedule" }] }, { op: "add", path: "/spec/taints", value: [] }], "application/json-patch+json");
    expect(ok.status).toBe(200);
    expect(ok.body.spec.taints).toEqual([]);
  });

  it("the status subresource changes only status; the node identity may not change taints or other nodes", async () => {
    const s = await req("PATCH", "/api/v1/nodes/node-a/status", { spec: { taints: [{ key: "z", effect: "NoSchedule" }] } }, SMP);
    expect(s.body.spec.taints).toEqual([]);
    const asNode = { "impersonate-user": "system:node:node-a" };
    const t = await req("PATCH", "/api/v1/nodes/node-a", { spec: { taints: [{ key: "z", effect: "NoSchedule" }] } }, SMP, asNode);
    expect(t.status).toBe(403);
    expect(t.body.message).toContain("not allowed to modify taints");
    const cond = await req("PATCH", "/api/v1/nodes/node-a/status", { status: { conditions: [{ type: "x.io/B", status: "True" }] } }, SMP, asNode);
    expect(cond.status).toBe(200);
    const other = await req("PATCH", "/api/v1/nodes/node-a/status", {}, SMP, { "impersonate-user": "system:node:node-b" });
    expect(other.status).toBe(403);
  });

  it("injected faults: 429 carries Retry-After; refused connections", async () => {
    api.failNext(1, { status: 429, retryAfter: "3" });
    const res = await fetch(`${api.url}/api/v1/nodes/node-a`, { headers: { authorization: "Bearer token-a" } });
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("3");
    await api.refuse();
    await expect(fetch(`${api.url}/api/v1/nodes/node-a`)).rejects.toThrow();
    await api.accept();
    expect((await req("GET", "/api/v1/nodes/node-a")).status).toBe(200);
  });

  it("watches as the watch cache serves them: resume from a resourceVersion, bookmarks, ADDED without one, 410 once compacted; lists carry their resourceVersion", async () => {
    const lines = async (query: string) => {
      const res = await fetch(`${api.url}/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Dnode-a&${query}`, { headers: { authorization: "Bearer token-a" } });
      expect(res.status).toBe(200);
      return (await res.text()).trim().split("\n").map((l) => JSON.parse(l) as { type: string; object: Record<string, any> });
    };
    const list = await req("GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dnode-a");
    expect(list.body.items.map((n: any) => n.metadata.name)).toEqual(["node-a"]);
    const from = list.body.metadata.resourceVersion as string;
    api.mutateNode("node-a", (n) => (n.metadata.labels.w = "1"));
    const resumed = await lines(`resourceVersion=${from}&timeoutSeconds=1&allowWatchBookmarks=true`);
    expect(resumed.map((e) => e.type)).toEqual(["MODIFIED", "BOOKMARK"]);
    expect(Number(resumed[1]!.object.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(resumed[0]!.object.metadata.resourceVersion));
    expect((await lines("timeoutSeconds=1")).map((e) => e.type)).toEqual(["ADDED"]);
    api.compact();
    const gone = await lines(`resourceVersion=${from}&timeoutSeconds=1`);
    expect(gone).toHaveLength(1);
    expect(gone[0]).toMatchObject({ type: "ERROR", object: { kind: "Status", code: 410, reason: "Expired" } });
  });

  it("a revoked token is refused with 401; an added one is accepted", async () => {
    api.addToken("token-new", "node-a");
    api.revokeToken("token-a");
    expect((await req("GET", "/api/v1/nodes/node-a")).status).toBe(401);
    const ok = await fetch(`${api.url}/api/v1/nodes/node-a`, { headers: { authorization: "Bearer token-new" } });
    expect(ok.status).toBe(200);
    api.addToken("token-a", "node-a");
  });
});
