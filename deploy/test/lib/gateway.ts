// Shared by the gateway-mode component tests: each renders a worked example
// (deploy/examples/<driver>) with a real kustomize and compares the result with
// the driver's manifests it lists, read as plain YAML. The CLI runners are the
// other deploy tests' too.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { DEPLOY, REPO } from "./paths.js";
import type { K8sObject } from "./render.js";
import { unknownFields, validateModel } from "./strict.js";

export const key = (o: K8sObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
export const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v));
export const byName = (list: any[], name: string) => list.find((x) => x.name === name);
export const without = (list: any[], name: string) => list.filter((x) => x.name !== name);
export const mountOf = (c: any, vol: string): string | undefined => c.volumeMounts?.find((m: any) => m.name === vol)?.mountPath;

/** The driver's manifests an example's kustomization lists, read as plain YAML (no kustomize involved). */
export function exampleSources(example: string): K8sObject[] {
  const k = parse(readFileSync(path.join(example, "kustomization.yaml"), "utf8"));
  return (k.resources as string[]).flatMap((f) =>
    parseAllDocuments(readFileSync(path.join(example, f), "utf8")).map((d) => d.toJS() as K8sObject),
  );
}

/** Runs the real CLI on ARGS plus --help: it parses and validates every flag, then exits. `env` adds to the process's. */
export function cliAccepts(args: string[], env?: NodeJS.ProcessEnv): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [path.join(REPO, "bin/probegate.js"), ...args, "--help"], {
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, ...env },
  });
  return { status: r.status, stderr: r.stderr };
}

/** `probegate plugin inspect WASM --config CONFIG --json`: the validation the gateway applies when it loads a plugin's configuration. */
export function inspectConfig(wasm: string, config: string) {
  return spawnSync(process.execPath, [path.join(REPO, "bin/probegate.js"), "plugin", "inspect", wasm, "--config", config, "--json"], { encoding: "utf8", timeout: 60_000 });
}

/** Sorts a pod template's containers by name: lists the patch does not touch keep the driver's order. */
export function sortContainers(o: K8sObject): K8sObject {
  o.spec.template.spec.containers.sort((a: any, b: any) => a.name.localeCompare(b.name));
  return o;
}

/**
 * The render holds every object the driver ships plus the hash-named plugin
 * ConfigMap in NAMESPACE, and nothing else; each validates with no unknown field.
 */
export async function expectDriverObjectsPlusPluginConfigMap(rendered: K8sObject[], original: Map<string, K8sObject>, namespace: string): Promise<void> {
  const added = rendered.filter((o) => !original.has(key(o)));
  expect(added.map((o) => `${o.kind}/${o.metadata.namespace}`)).toEqual([`ConfigMap/${namespace}`]);
  expect(added[0]!.metadata.name).toMatch(/^probegate-plugins-[a-z0-9]{10}$/);
  expect(rendered.filter((o) => original.has(key(o))).map(key).sort()).toEqual([...original.keys()].sort());
  for (const o of rendered) {
    await validateModel(o);
    expect(unknownFields(o), key(o)).toEqual([]);
  }
}

const POST_RENDERER = path.join(DEPLOY, "examples/helm-post-renderer.sh");
/** Runs the examples' Helm post-renderer as helm does (stdin to stdout) with a private TMPDIR, which must be empty again afterwards. */
export function postRender(example: string, input: string) {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "probegate-post-render-"));
  try {
    const r = spawnSync(POST_RENDERER, [example], { input, encoding: "utf8", timeout: 60_000, env: { ...process.env, TMPDIR: tmp } });
    return { ...r, leftovers: readdirSync(tmp) };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** What helm hands a post-renderer: the chart's documents (the example's driver manifests), each after `---` and a `# Source:` line. */
export function asHelmOutput(exampleName: string, exampleDir: string): string {
  const k = parse(readFileSync(path.join(exampleDir, "kustomization.yaml"), "utf8"));
  return (k.resources as string[])
    .map((f) => `---\n# Source: ${exampleName}-csi-driver/templates/${path.basename(f)}\n${readFileSync(path.join(exampleDir, f), "utf8")}`)
    .join("\n");
}

/** The post-renderer fed the example's manifests as helm frames a chart's output gives exactly the objects the example renders, and leaves no temporary files. */
export function expectHelmMatchesExample(exampleName: string, exampleDir: string, rendered: K8sObject[]): void {
  const out = postRender(exampleName, asHelmOutput(exampleName, exampleDir));
  expect(out.stderr).toBe("");
  expect(out.status).toBe(0);
  const viaHelm = parseAllDocuments(out.stdout).map((doc) => doc.toJS() as K8sObject);
  expect(viaHelm.map(key).sort()).toEqual(rendered.map(key).sort());
  for (const o of viaHelm) expect(o, key(o)).toEqual(rendered.find((x) => key(x) === key(o)));
  expect(out.leftovers).toEqual([]);
}
