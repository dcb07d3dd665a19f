// Unknown-field check. kubernetes-models' validators (compiled JSON schemas)
// accept unknown keys, so a typo such as `periodSecond` would pass them. The
// apiserver would drop it silently (or refuse it with strict field validation).
// This walks an object against the property lists of kubernetes-models' own
// type declarations (.d.ts), which are generated from the same OpenAPI schema.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { K8sObject } from "./render.js";

const require = createRequire(import.meta.url);
const MODELS_ROOT = path.dirname(require.resolve("kubernetes-models/package.json"));
const NODE_MODULES = path.resolve(MODELS_ROOT, "..");

/** The kubernetes-models package with an API group's classes: the Prometheus Operator's CRDs have their own. */
export function modelsPackage(apiVersion: string): string {
  return apiVersion.startsWith("monitoring.coreos.com/") ? "@kubernetes-models/prometheus-operator" : "kubernetes-models";
}

interface Shape {
  props: Map<string, string>; // property -> type text
  imports: Map<string, string>; // interface name -> .d.ts file
}
const cache = new Map<string, Shape | null>();

function loadShape(file: string): Shape | null {
  if (cache.has(file)) return cache.get(file)!;
  const text = readFileSync(file, "utf8");
  const imports = new Map<string, string>();
  for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
    const spec = m[2]!;
    const target = spec.startsWith(".") ? path.resolve(path.dirname(file), spec) : path.join(NODE_MODULES, spec);
    imports.set(m[1]!, `${target}.d.ts`);
  }
  const start = text.search(/^export interface \w+( extends [\w, ]+)? \{$/m);
  let shape: Shape | null = null;
  if (start >= 0) {
    const body = text.slice(start, text.indexOf("\n}", start));
    const props = new Map<string, string>();
    // One property per 4-space-indented line; map types continue on deeper lines.
    for (const m of body.matchAll(/^ {4}"([^"]+)"\??: (.*?);?$/gm)) props.set(m[1]!, m[2]!);
    shape = { props, imports };
  }
  cache.set(file, shape);
  return shape;
}

function check(value: unknown, file: string, where: string, out: string[]): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return;
  const shape = loadShape(file);
  if (!shape) return; // a type alias (IntOrString, Quantity, …): a leaf
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const type = shape.props.get(key);
    if (type === undefined) {
      out.push(`${where}.${key}: unknown field`);
      continue;
    }
    const arr = /^Array<(\w+)>$/.exec(type);
    const ref = arr ? arr[1]! : /^(\w+)$/.exec(type)?.[1];
    const target = ref ? shape.imports.get(ref) : undefined;
    if (!target) continue; // string, number, map, union: nothing to descend into
    if (arr && Array.isArray(child)) child.forEach((item, i) => check(item, target, `${where}.${key}[${i}]`, out));
    else check(child, target, `${where}.${key}`, out);
  }
}

/** Returns one message per unknown field in a Kubernetes object (empty = none). */
export function unknownFields(obj: { apiVersion: string; kind: string }): string[] {
  const root = path.dirname(require.resolve(`${modelsPackage(obj.apiVersion)}/package.json`));
  const file = path.join(root, obj.apiVersion, `${obj.kind}.d.ts`);
  const out: string[] = [];
  check(obj, file, obj.kind, out);
  return out;
}

/** Validates an object against kubernetes-models' schema for its kind; a kind with no class there is an error. */
export async function validateModel(obj: K8sObject): Promise<void> {
  const mod = await import(`${modelsPackage(obj.apiVersion)}/${obj.apiVersion}`);
  const Model = mod[obj.kind];
  if (!Model) throw new Error(`${obj.apiVersion} ${obj.kind}: no kubernetes-models class`);
  // kustomize wraps binaryData's base64 at 70 columns. The apiserver's decoder
  // (Go's encoding/base64) skips newlines; the schema's "byte" format does not,
  // so validate the value the apiserver will actually decode.
  const data = obj.binaryData
    ? { ...obj, binaryData: Object.fromEntries(Object.entries(obj.binaryData as Record<string, string>).map(([k, v]) => [k, v.replace(/[\r\n]/g, "")])) }
    : obj;
  new Model(data).validate();
}
