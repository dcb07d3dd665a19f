// The unknown-field check used by manifests.test.ts catches what the schemas miss.
import { describe, expect, it } from "vitest";
import { unknownFields } from "./lib/strict.js";

describe("unknownFields", () => {
  const ds = (probe: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    apiVersion: "apps/v1",
    kind: "DaemonSet",
    metadata: { name: "x", labels: { a: "b" } },
    spec: {
      selector: { matchLabels: { a: "b" } },
      template: {
        metadata: { labels: { a: "b" } },
        spec: { containers: [{ name: "c", image: "i", readinessProbe: probe, ...extra }], volumes: [{ name: "v", configMap: { name: "m" } }] },
      },
    },
  });

  it("accepts a correct object, maps and arrays included", () => {
    expect(unknownFields(ds({ httpGet: { path: "/readyz", port: "http" }, periodSeconds: 5 }))).toEqual([]);
  });

  it("reports a misspelt field deep inside a pod template", () => {
    expect(unknownFields(ds({ httpGet: { path: "/readyz", port: 1 }, periodSecond: 5 }))).toEqual([
      "DaemonSet.spec.template.spec.containers[0].readinessProbe.periodSecond: unknown field",
    ]);
    expect(unknownFields(ds({}, { volumeMount: [] }))).toEqual(["DaemonSet.spec.template.spec.containers[0].volumeMount: unknown field"]);
  });
});
