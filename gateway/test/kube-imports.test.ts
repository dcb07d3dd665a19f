// kube/ holds two rooms: the Kubernetes client (client/: kubeconfig →
// credentials → requests → API calls) and node reporting around it. The
// client must not reach into the reporting (nodes' conditions, taints, the
// reporter's metrics), and what the Node looks like must not depend on the
// planner that changes it.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/gateway-process.js";

const KUBE = path.join(ROOT, "gateway", "src", "kube");

/** Every relative or package import of a module ("./x.js", "../y.js", "prom-client"). */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return [...text.matchAll(/^(?:import|export)\s[^;]*?\bfrom\s+"([^"]+)"/gms)].map((m) => m[1]!);
}

describe("gateway/src/kube", () => {
  it("client/ imports only its own modules and Node's", () => {
    const dir = path.join(KUBE, "client");
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".ts"));
    expect(files).toEqual(expect.arrayContaining(["api.ts", "credentials.ts", "kubeconfig.ts", "rest.ts"]));
    // The reader sees imports at all: the chain is kubeconfig → credentials → rest → api.
    expect(importsOf(path.join(dir, "api.ts"))).toEqual(expect.arrayContaining(["./kubeconfig.js", "./rest.js"]));
    for (const f of files) {
      for (const spec of importsOf(path.join(dir, f))) {
        const ok = spec.startsWith("node:") || spec === "yaml" || /^\.\/[a-z-]+\.js$/.test(spec);
        expect(ok, `${f} imports ${spec}`).toBe(true);
      }
    }
  });

  it("node-view.ts imports neither the planner nor the desired state", () => {
    expect(importsOf(path.join(KUBE, "node-view.ts"))).toEqual([]);
  });

  it("the reporter's metrics reach the client only through the callback it is given", () => {
    for (const f of fs.readdirSync(path.join(KUBE, "client"))) {
      expect(fs.readFileSync(path.join(KUBE, "client", f), "utf8"), f).not.toMatch(/metrics\.js|KubeMetrics/);
    }
  });
});
