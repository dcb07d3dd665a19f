// The node-reporting components (plain and hardened): rendered with a real
// kustomize, validated against the Kubernetes schemas, RBAC checked rule by
// rule for least privilege, and probegate's rendered arguments parsed by the CLI.
import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { BUILT, DEPLOY } from "./lib/paths.js";
import { render, type K8sObject } from "./lib/render.js";
import { unknownFields, validateModel } from "./lib/strict.js";
import { cliAccepts } from "./lib/gateway.js";
import { containersOf, expand, isProbegate, pods } from "./lib/workloads.js";

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
/** Every (group, resource, verb) a set of roles grants. */
function grants(roles: K8sObject[]): Set<string> {
  const out = new Set<string>();
  for (const r of roles) for (const rule of r.rules as Rule[]) for (const g of rule.apiGroups) for (const res of rule.resources) for (const v of rule.verbs) out.add(`${g}/${res}:${v}`);
  return out;
}

for (const variant of ["node-reporting", "node-reporting-hardened"]) {
  describe(`rendered overlays/${variant}`, () => {
    let docs: K8sObject[];
    const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
    beforeAll(() => {
      docs = render(`overlays/${variant}`).docs;
    });

    it("every object validates against the Kubernetes schemas, with no unknown field", async () => {
      for (const d of docs) {
        await validateModel(d);
        if (d.kind !== "ConfigMap") expect(unknownFields(d), `${d.kind}/${d.metadata.name}`).toEqual([]);
      }
    });

    it("RBAC grants exactly what node reporting needs, to the probegate-node service account only", () => {
      const all = grants([...byKind("ClusterRole"), ...byKind("Role")]);
      const expected = new Set([
        "/nodes:patch", // the taint (NodeRestriction forbids a node identity to change taints)
        "storage.k8s.io/csinodes:get",
        "/events:create",
        "/events:patch",
        "events.k8s.io/events:create",
        "events.k8s.io/events:patch",
        ...(variant === "node-reporting"
          ? ["/nodes:get", "/nodes:list", "/nodes:watch", "/nodes/status:patch"]
          : [
              "authentication.k8s.io/nodes:impersonate:associated-node",
              "/nodes:impersonate-on:associated-node:get",
              "/nodes:impersonate-on:associated-node:list",
              "/nodes:impersonate-on:associated-node:watch",
              "/nodes/status:impersonate-on:associated-node:patch",
            ]),
      ]);
      expect([...all].sort()).toEqual([...expected].sort());
      for (const b of [...byKind("ClusterRoleBinding"), ...byKind("RoleBinding")]) {
        expect(b.subjects).toEqual([{ kind: "ServiceAccount", name: "probegate-node", namespace: "probegate" }]);
      }
      // Node Events live in namespace default: the events Role is there, not cluster-wide.
      for (const r of byKind("Role")) expect(r.metadata.namespace).toBe("default");
      expect(byKind("ServiceAccount").map((s) => s.metadata.name)).toContain("probegate-node");
    });

    it("probegate runs under the image's own node flags and the base's memory request (the client fits in them)", () => {
      const ds = pods(docs).find((p) => p.owner.kind === "DaemonSet")!;
      const c = containersOf(ds.spec).find(isProbegate)!;
      // No command: the image's ENTRYPOINT with its 48 MiB old space.
      expect(c.command).toBeUndefined();
      const dockerfile = readFileSync(path.join(DEPLOY, "Dockerfile"), "utf8");
      expect(dockerfile).toContain('ENTRYPOINT ["node", "--no-node-snapshot", "--no-maglev", "--max-semi-space-size=1", "--max-old-space-size=48", "/opt/probegate/bin/probegate.js"]');
      expect(c.resources.requests.memory).toBe("128Mi");
      expect(JSON.stringify(docs)).not.toContain("max-old-space-size=96");
    });

    it("the ValidatingAdmissionPolicy confines node writes to the pod's own node", () => {
      const vap = byKind("ValidatingAdmissionPolicy")[0]!;
      expect(vap.spec.failurePolicy).toBe("Fail");
      expect(vap.spec.validations[0].expression).toContain("authentication.kubernetes.io/node-name");
      expect(vap.spec.validations[0].expression).toContain("object.metadata.name");
      expect(vap.spec.matchConditions[0].expression).toContain("system:serviceaccount:probegate:probegate-node");
      expect(byKind("ValidatingAdmissionPolicyBinding")[0]!.spec.policyName).toBe(vap.metadata.name);
    });

    it.skipIf(!BUILT)("the CLI accepts probegate's rendered arguments", () => {
      const ds = pods(docs).find((p) => p.owner.kind === "DaemonSet")!;
      const c = containersOf(ds.spec).find(isProbegate)!;
      const args = (c.args as string[]).map((a) => expand(a, c));
      expect(args).toContain("--node-condition=azurelustre.csi.azure.com/NodeReady");
      if (variant === "node-reporting-hardened") expect(args).toContain("--impersonate-node");
      const r = cliAccepts(args, { NODE_NAME: "node-1" });
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
    });
  });
}

describe("the NodeReadinessRule example", () => {
  it("consumes the condition probegate writes and manages a readiness.k8s.io/ taint", () => {
    const docs = parseAllDocuments(readFileSync(path.join(DEPLOY, "node-readiness-controller/node-readiness-rule.yaml"), "utf8")).map((d) => d.toJS());
    const rule = docs.find((d) => d.kind === "NodeReadinessRule");
    expect(rule.spec.conditions[0].type).toBe("azurelustre.csi.azure.com/NodeReady");
    expect(rule.spec.conditions[0].requiredStatus).toBe("True");
    expect(rule.spec.taint.key.startsWith("readiness.k8s.io/")).toBe(true);
    expect(["bootstrap-only", "continuous"]).toContain(rule.spec.enforcementMode);
  });
});
