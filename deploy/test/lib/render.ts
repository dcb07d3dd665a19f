// Renders the real Kustomize tree with a real renderer: `kubectl kustomize`
// (kubectl embeds kustomize; v5 on this project's machines), or the
// standalone binary named by $KUSTOMIZE (`$KUSTOMIZE build DIR`).
// The tree is copied to a temporary directory first so the default plugin set
// can be staged into base/plugins/ without touching the work tree: the real
// dist/plugins/*.wasm when built, else tiny stand-ins named after the
// kustomization's list (only the build-dependent tests look at the bytes).
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseAllDocuments, parse } from "yaml";
import { DIST_PLUGINS, KUSTOMIZE_DIR } from "./paths.js";

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

/** Plugin file names the base's probegate-plugins generator lists. */
export function listedPlugins(): string[] {
  const k = parse(readFileSync(path.join(KUSTOMIZE_DIR, "base/kustomization.yaml"), "utf8"));
  const gen = (k.configMapGenerator as any[]).find((g) => g.name === "probegate-plugins");
  return (gen.files as string[]).map((f) => path.basename(f));
}

/** Volume checks (volume-*.wasm) ship in the gateway-mode overlay, not the base. */
export const isVolumePlugin = (file: string) => path.basename(file).startsWith("volume-");

/** The built plugins the base ConfigMap carries: every .wasm but the volume checks. */
export function builtNodePlugins(): string[] {
  return existsSync(DIST_PLUGINS) ? readdirSync(DIST_PLUGINS).filter((f) => f.endsWith(".wasm") && !isVolumePlugin(f)) : [];
}

export interface Rendered {
  docs: K8sObject[];
  stubbed: boolean;
}

const STUB = Uint8Array.from([0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]); // "\0asm" v1, empty module

/** `extraFiles` (path relative to the kustomize dir → content) are written into the copy first, e.g. a test overlay. */
export function render(relDir: string, extraFiles: Record<string, string> = {}): Rendered {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "probegate-kustomize-"));
  try {
    cpSync(KUSTOMIZE_DIR, tmp, { recursive: true });
    for (const [rel, text] of Object.entries(extraFiles)) {
      mkdirSync(path.dirname(path.join(tmp, rel)), { recursive: true });
      writeFileSync(path.join(tmp, rel), text);
    }
    const dest = path.join(tmp, "base/plugins");
    const real = builtNodePlugins();
    const stubbed = real.length === 0;
    if (stubbed) for (const f of listedPlugins()) writeFileSync(path.join(dest, f), STUB);
    else for (const f of real) cpSync(path.join(DIST_PLUGINS, f), path.join(dest, f));
    const r = renderer();
    const yamlText = execFileSync(r.cmd, r.args(path.join(tmp, relDir)), { encoding: "utf8", maxBuffer: 64 << 20 });
    const docs = parseAllDocuments(yamlText).map((d) => {
      if (d.errors.length) throw d.errors[0];
      return d.toJS() as K8sObject;
    });
    return { docs: docs.filter(Boolean), stubbed };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
