// What probegate last saw of its Node: its conditions and taints, read from
// the API's object. The changes that bring it to the desired state are
// node-plan.ts's; the I/O is the reporter's.

export interface NodeCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastHeartbeatTime?: string;
  lastTransitionTime?: string;
}

export interface NodeTaint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

export interface NodeView {
  resourceVersion: string;
  conditions: NodeCondition[];
  /** undefined when spec.taints is absent (not the same as [] for a JSON patch). */
  taints: NodeTaint[] | undefined;
}

/** From a Node object as the API returns it (the client's class instances or plain JSON). */
export function viewOf(node: unknown): NodeView {
  const n = node as { metadata?: { resourceVersion?: string }; spec?: { taints?: NodeTaint[] }; status?: { conditions?: NodeCondition[] } };
  const iso = (t: unknown) => (t instanceof Date ? rfc3339(t.getTime()) : typeof t === "string" ? t : undefined);
  return {
    resourceVersion: n.metadata?.resourceVersion ?? "",
    conditions: (n.status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
      lastHeartbeatTime: iso(c.lastHeartbeatTime),
      lastTransitionTime: iso(c.lastTransitionTime),
    })),
    taints: n.spec?.taints?.map((t) => {
      const out: NodeTaint = { key: t.key, effect: t.effect };
      if (t.value) out.value = t.value;
      const added = iso(t.timeAdded);
      if (added) out.timeAdded = added;
      return out;
    }),
  };
}

/** Kubernetes times (metav1.Time) carry whole seconds: "2026-11-23T10:00:00Z". */
export function rfc3339(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

export function sameTaint(a: { key: string; effect: string }, b: { key: string; effect: string }): boolean {
  // The API server identifies a taint by key and effect.
  return a.key === b.key && a.effect === b.effect;
}

export function hasTaint(view: NodeView, taint: { key: string; effect: string }): boolean {
  return (view.taints ?? []).some((t) => sameTaint(t, taint));
}
