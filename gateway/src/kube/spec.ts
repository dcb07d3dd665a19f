// What the Kubernetes node reporting is asked to do, validated. Pure: the CLI
// parses flags with it, and nothing here loads the Kubernetes client.

export type TaintEffect = "NoSchedule" | "PreferNoSchedule" | "NoExecute";
export type TaintMode = "bootstrap-only" | "continuous";

export interface TaintSpec {
  key: string;
  value?: string;
  effect: TaintEffect;
}

export interface KubeTimings {
  /** Unchanged conditions are re-sent at least this often (lastHeartbeatTime). */
  heartbeatMs: number;
  /** Longest wait between retries after 5xx, timeouts and connection errors. */
  backoffCapMs: number;
  /** Watch re-established at least this often; the Node is re-read when the watch cannot run. */
  resyncMs: number;
  /** Node writes: one token per interval, bursts of WRITE_BURST. */
  writeIntervalMs: number;
  /** Deadline of one API request. */
  requestTimeoutMs: number;
}

export interface KubeReportingSpec {
  nodeName: string;
  /** --kubeconfig (one file) or KUBECONFIG's files, merged; none: in-cluster. */
  kubeconfig?: string[];
  /** --kube-context; the kubeconfig's current-context otherwise. */
  kubeContext?: string;
  condition?: string;
  conditionPerCheck: boolean;
  /** --node-storage-condition: a second condition from the storage health entries (off by default). */
  storageCondition?: string;
  /** --node-operations-condition: False while a volume operation is stuck (gateway mode; off by default). */
  operationsCondition?: string;
  /** --node-storage-taint: the taint also follows storage health (STORAGE_UNREACHABLE counts as not ready for it). */
  storageTaint?: boolean;
  taint?: TaintSpec;
  taintMode: TaintMode;
  waitForCSINode: boolean;
  impersonateNode: boolean;
  timings: KubeTimings;
}

export const WRITE_BURST = 5;

const DNS_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);
const NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/** Why `s` is not a Kubernetes qualified name ([prefix/]name), or undefined. */
export function qualifiedNameProblem(s: string, requirePrefix: boolean): string | undefined {
  const slash = s.indexOf("/");
  if (slash !== s.lastIndexOf("/")) return "has more than one '/'";
  const prefix = slash >= 0 ? s.slice(0, slash) : undefined;
  const name = slash >= 0 ? s.slice(slash + 1) : s;
  if (prefix === undefined && requirePrefix) return "needs a domain prefix (e.g. lustre.csi.example.com/NodeReady)";
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `has an invalid prefix "${prefix}" (a lowercase DNS subdomain)`;
  }
  if (name.length === 0 || name.length > 63 || !NAME_PART.test(name)) {
    return `has an invalid name "${name}" (1-63 characters: letters, digits, '-', '_', '.', starting and ending with a letter or digit)`;
  }
  return undefined;
}

/** The domain of a qualified condition type: "a.example.com/NodeReady" → "a.example.com". */
export function conditionDomain(type: string): string {
  return type.slice(0, type.indexOf("/"));
}

const EFFECTS: readonly TaintEffect[] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];

/** kubectl taint's syntax, KEY[=VALUE]:EFFECT. Throws with a message naming what is wrong. */
export function parseTaint(s: string): TaintSpec {
  const colon = s.lastIndexOf(":");
  if (colon < 0) throw new Error(`"${s}" is not KEY[=VALUE]:EFFECT`);
  const effect = s.slice(colon + 1);
  if (!EFFECTS.includes(effect as TaintEffect)) throw new Error(`effect "${effect}" is not one of ${EFFECTS.join(", ")}`);
  const kv = s.slice(0, colon);
  const eq = kv.indexOf("=");
  const key = eq >= 0 ? kv.slice(0, eq) : kv;
  const value = eq >= 0 ? kv.slice(eq + 1) : undefined;
  const keyProblem = qualifiedNameProblem(key, false);
  if (keyProblem) throw new Error(`key "${key}" ${keyProblem}`);
  if (value !== undefined && value !== "" && (value.length > 63 || !NAME_PART.test(value))) {
    throw new Error(`value "${value}" is not a valid label value (at most 63 characters: letters, digits, '-', '_', '.')`);
  }
  return value ? { key, value, effect: effect as TaintEffect } : { key, effect: effect as TaintEffect };
}

export function formatTaint(t: TaintSpec): string {
  return `${t.key}${t.value ? `=${t.value}` : ""}:${t.effect}`;
}
