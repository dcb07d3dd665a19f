// Renders the real Kustomize tree with a real renderer: `kubectl kustomize`
// (kubectl embeds kustomize; v5 on this project's machines), or the
// standalone binary named by $KUSTOMIZE (`$KUSTOMIZE build DIR`). The tree is
// rendered as checked out: nothing is staged (the default plugins come from
// the image), so what the tests render is what `kubectl apply -k` applies from
// a clean checkout.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseAllDocuments, parse } from "yaml";
import { DEPLOY, KUSTOMIZE_DIR, REPO } from "./paths.js";

export type K8sObject = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: any };

export function renderer(): { cmd: string; args: (dir: string) => string[]; version: string } {
  const env = process.env.KUSTOMIZE;
  if (env) {
    const version = execFileSync(env, ["version"], { encoding: "utf8" }).trim();
    return { cmd: env, args: (dir) => ["build", dir], version };
  }
  let out: string;
  try {
    out = execFileSync("kubectl", ["version", "--client", "-o", "json"], { encoding: "utf8" });
  } catch (err) {
    throw new Error(
      "deploy tests render the Kustomize tree with `kubectl kustomize` (kustomize >= v4.5), and kubectl was not found. " +
        "Install kubectl, or set KUSTOMIZE=/path/to/kustomize.",
    );
  }
  const version = JSON.parse(out).kustomizeVersion ?? "unknown";
  return { cmd: "kubectl", args: (dir) => ["kustomize", dir], version };
}

/** Volume checks (volume-*) run only in gateway mode. */
export const isVolumePlugin = (file: string) => path.basename(file).startsWith("volume-");

/** Storage health checks (probe "storage", issue #30) report health, not readiness: never in --require-checks. */
const isStoragePlugin = (dir: string) => /\.probeKind\(\s*"storage"\s*\)/.test(readFileSync(path.join(dir, "index.ts"), "utf8"));

/**
 * The node readiness checks the image bundles, as NAME.wasm: every
 * plugins/<name>/ with an index.ts but the volume and storage health checks
 * (read from the source tree, so it holds before a build too).
 */
export function listedPlugins(): string[] {
  const dir = path.join(REPO, "plugins");
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !["sdk", "test", "fixtures", "node_modules"].includes(d.name) && existsSync(path.join(dir, d.name, "index.ts")))
    .filter((d) => !isStoragePlugin(path.join(dir, d.name)))
    .map((d) => `${d.name}.wasm`)
    .filter((f) => !isVolumePlugin(f))
    .sort();
}

/** File names the base's probegate-plugins generator lists (plugin configurations). */
export function listedPluginFiles(): string[] {
  const k = parse(readFileSync(path.join(KUSTOMIZE_DIR, "base/kustomization.yaml"), "utf8"));
  const gen = (k.configMapGenerator as any[]).find((g) => g.name === "probegate-plugins");
  return (gen.files as string[]).map((f) => path.basename(f));
}

export interface Rendered {
  docs: K8sObject[];
}

/** Renders DIR (absolute) with the real renderer. */
export function renderDir(dir: string): Rendered {
  const r = renderer();
  const yamlText = execFileSync(r.cmd, r.args(dir), { encoding: "utf8", maxBuffer: 64 << 20 });
  const docs = parseAllDocuments(yamlText).map((d) => {
    if (d.errors.length) throw d.errors[0];
    return d.toJS() as K8sObject;
  });
  return { docs: docs.filter(Boolean) };
}

/**
 * Renders a directory of deploy/kustomize (e.g. "base", "overlays/example") in
 * place; with `extraFiles` (path relative to deploy/kustomize → content, e.g.
 * a test overlay), in a copy with those files written first.
 */
export function render(relDir: string, extraFiles: Record<string, string> = {}): Rendered {
  if (Object.keys(extraFiles).length === 0) return renderDir(path.join(KUSTOMIZE_DIR, relDir));
  return renderEdited(path.join("kustomize", relDir), (copy) => {
    for (const [rel, text] of Object.entries(extraFiles)) {
      const file = path.join(copy, "kustomize", rel);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, text);
    }
  });
}

/** Renders a directory of deploy/ (e.g. "gateway-mode") in place. */
export function renderDeploy(relDir: string): Rendered {
  return renderDir(path.join(DEPLOY, relDir));
}

/**
 * Copies deploy/ to a temporary directory, lets `edit` change the copy (it
 * gets the copy's deploy/ path), and renders `relDir` of the copy.
 */
export function renderEdited(relDir: string, edit: (deployCopy: string) => void): Rendered {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "probegate-kustomize-"));
  try {
    const copy = path.join(tmp, "deploy");
    cpSync(DEPLOY, copy, { recursive: true, filter: (src) => !src.includes(`${path.sep}node_modules`) });
    edit(copy);
    return renderDir(path.join(copy, relDir));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
