import type { K8sObject } from "./render.js";

export interface Pod {
  owner: K8sObject;
  spec: any;
}

export function pods(docs: K8sObject[]): Pod[] {
  return docs
    .filter((d) => ["DaemonSet", "Deployment", "StatefulSet", "Job"].includes(d.kind))
    .map((d) => ({ owner: d, spec: d.spec.template.spec }));
}

export function containersOf(spec: any): any[] {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
}

/** `--name=value` / `--name value` args as name -> value ("" for a bare switch). */
export function flagsOf(args: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith("--")) continue;
    const eq = a.indexOf("=");
    if (eq >= 0) out.set(a.slice(2, eq), a.slice(eq + 1));
    else if (i + 1 < args.length && !args[i + 1]!.startsWith("--")) out.set(a.slice(2), args[++i]!);
    else out.set(a.slice(2), "");
  }
  return out;
}

/** Stands in for the pod's address, which kubelet knows only once the pod has one. */
export const FAKE_POD_IP = "10.0.0.7";

/**
 * kubelet's $(VAR) expansion in args, from the container's plain env values
 * and its status.podIP fieldRef (FAKE_POD_IP): the CLI then checks the
 * address a listen flag will really get, not the literal "$(POD_IP)".
 */
export function expand(value: string, container: any): string {
  const env = new Map<string, string>();
  for (const e of container.env ?? []) {
    if ("value" in e) env.set(e.name, e.value);
    else if (e.valueFrom?.fieldRef?.fieldPath === "status.podIP") env.set(e.name, FAKE_POD_IP);
  }
  return value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, name) => env.get(name) ?? m);
}

export function isProbegate(c: any): boolean {
  return c.name === "probegate";
}
