// Where the API server is and how to authenticate to it: the pod's service
// account, or kubeconfig files merged as kubectl merges them. Everything is
// checked here, at start, so a bad configuration is one line naming the file
// and the field, and never a reporter that fails quietly later.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { parseDocument } from "yaml";

/** Where the pod's service-account files are; PROBEGATE_KUBE_SERVICEACCOUNT_DIR moves it (tests, odd mounts). */
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface ExecConfig {
  apiVersion: "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1";
  command: string;
  args: string[];
  env: Array<{ name: string; value: string }>;
  provideClusterInfo: boolean;
  /** Where it was defined, for messages. */
  origin: string;
}

export interface ClientConfig {
  /** https://host:port (or http://) without a trailing slash, possibly with a path prefix. */
  server: string;
  ca?: Buffer;
  /** SNI and the name the certificate must carry, when not the server's host. */
  tlsServerName?: string;
  insecureSkipTLSVerify: boolean;
  token?: string;
  tokenFile?: string;
  clientCert?: Buffer;
  clientKey?: Buffer;
  exec?: ExecConfig;
  impersonate?: { user?: string; uid?: string; groups: string[]; extra: Record<string, string[]> };
  /** Where the configuration came from: "in-cluster" or the file of the current context. */
  source: string;
}

class KubeConfigError extends Error {}

type Obj = Record<string, unknown>;

interface Named {
  name: string;
  value: Obj;
  /** The file it was read from: relative paths in it are relative to that file's directory. */
  file: string;
}

interface Merged {
  clusters: Map<string, Named>;
  users: Map<string, Named>;
  contexts: Map<string, Named>;
  currentContext?: { name: string; file: string };
}

/** In-cluster configuration from the environment and the service-account files. */
export function inClusterConfig(env: NodeJS.ProcessEnv): ClientConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeConfigError("not running in a cluster (KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT unset) and no --kubeconfig or KUBECONFIG given");
  }
  const dir = env.PROBEGATE_KUBE_SERVICEACCOUNT_DIR || SERVICE_ACCOUNT_DIR;
  const tokenFile = path.join(dir, "token");
  const caFile = path.join(dir, "ca.crt");
  mustRead(tokenFile, "in-cluster", "token");
  return {
    server: `https://${net.isIPv6(host) ? `[${host}]` : host}:${port}`,
    ca: mustRead(caFile, "in-cluster", "ca.crt"),
    insecureSkipTLSVerify: false,
    tokenFile,
    source: "in-cluster",
  };
}

/**
 * The configuration of one context. `files` in KUBECONFIG order: the first file
 * to set a cluster, user or context name wins it, and the first to set
 * current-context wins that (client-go's loading rules); a file that does not
 * exist is skipped, as kubectl skips it, unless it is the only one.
 */
export function kubeconfigFiles(files: string[], context: string | undefined): ClientConfig {
  const merged: Merged = { clusters: new Map(), users: new Map(), contexts: new Map() };
  let loaded = 0;
  for (const file of files) {
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT" && files.length > 1) continue;
      throw new KubeConfigError(`${file}: cannot read it (${code ?? (err as Error).message})`);
    }
    mergeFile(merged, file, text);
    loaded++;
  }
  if (loaded === 0) throw new KubeConfigError(`none of the kubeconfig files exists: ${files.join(", ")}`);
  const ctxName = context ?? merged.currentContext?.name;
  if (!ctxName) throw new KubeConfigError(`${files.join(":")}: current-context: not set (set it or give --kube-context)`);
  const ctx = merged.contexts.get(ctxName);
  if (!ctx) throw new KubeConfigError(`${context !== undefined ? "--kube-context" : `${merged.currentContext!.file}: current-context`}: no context named "${ctxName}"`);
  const clusterName = str(ctx, "cluster", `contexts[${ctxName}].context`);
  const userName = str(ctx, "user", `contexts[${ctxName}].context`);
  const cluster = merged.clusters.get(clusterName ?? "");
  if (!cluster) throw new KubeConfigError(`${ctx.file}: contexts[${ctxName}].context.cluster: no cluster named "${clusterName ?? ""}"`);
  const user = userName ? merged.users.get(userName) : undefined;
  if (userName && !user) throw new KubeConfigError(`${ctx.file}: contexts[${ctxName}].context.user: no user named "${userName}"`);
  return { ...clusterPart(cluster), ...userPart(user), source: ctx.file };
}

function mergeFile(merged: Merged, file: string, text: string): void {
  let doc: unknown;
  try {
    const parsed = parseDocument(text);
    if (parsed.errors.length > 0) throw new Error(parsed.errors[0]!.message.split("\n")[0]);
    doc = parsed.toJS();
  } catch (err) {
    throw new KubeConfigError(`${file}: not a kubeconfig (${(err as Error).message})`);
  }
  if (doc === null || doc === undefined) return; // an empty file is allowed, as kubectl allows it
  if (typeof doc !== "object" || Array.isArray(doc)) throw new KubeConfigError(`${file}: not a kubeconfig (expected a map)`);
  const d = doc as Obj;
  const take = (field: "clusters" | "users" | "contexts", inner: string, into: Map<string, Named>) => {
    const list = d[field];
    if (list === undefined || list === null) return;
    if (!Array.isArray(list)) throw new KubeConfigError(`${file}: ${field}: expected a list`);
    list.forEach((item: unknown, i) => {
      const e = item as Obj;
      if (!e || typeof e !== "object" || typeof e.name !== "string" || e.name === "") {
        throw new KubeConfigError(`${file}: ${field}[${i}].name: missing`);
      }
      const value = e[inner] ?? {};
      if (typeof value !== "object" || Array.isArray(value)) throw new KubeConfigError(`${file}: ${field}[${e.name}].${inner}: expected a map`);
      if (!into.has(e.name)) into.set(e.name, { name: e.name, value: value as Obj, file });
    });
  };
  take("clusters", "cluster", merged.clusters);
  take("users", "user", merged.users);
  take("contexts", "context", merged.contexts);
  const cc = d["current-context"];
  if (typeof cc === "string" && cc !== "" && !merged.currentContext) merged.currentContext = { name: cc, file };
}

function str(n: Named, key: string, where: string): string | undefined {
  const v = n.value[key];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new KubeConfigError(`${n.file}: ${where}.${key}: expected a string`);
  return v;
}

function resolve(n: Named, p: string): string {
  return path.isAbsolute(p) ? p : path.resolve(path.dirname(n.file), p);
}

function mustRead(file: string, origin: string, field: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    throw new KubeConfigError(`${origin}: ${field}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

function base64(n: Named, where: string, key: string): Buffer | undefined {
  const v = str(n, key, where);
  if (v === undefined) return undefined;
  const b = Buffer.from(v, "base64");
  if (b.length === 0) throw new KubeConfigError(`${n.file}: ${where}.${key}: not base64`);
  return b;
}

/** One of FILE or DATA; both is an error, as kubectl's validation says. */
function fileOrData(n: Named, where: string, fileKey: string, dataKey: string): Buffer | undefined {
  const f = str(n, fileKey, where);
  const data = base64(n, where, dataKey);
  if (f !== undefined && data !== undefined) throw new KubeConfigError(`${n.file}: ${where}: both ${fileKey} and ${dataKey} are set; keep one`);
  return data ?? (f !== undefined ? mustRead(resolve(n, f), n.file, `${where}.${fileKey}`) : undefined);
}

function refuse(n: Named, where: string, keys: Record<string, string>): void {
  for (const [key, why] of Object.entries(keys)) {
    if (n.value[key] !== undefined && n.value[key] !== null && n.value[key] !== "") throw new KubeConfigError(`${n.file}: ${where}.${key}: ${why}`);
  }
}

function clusterPart(c: Named): Pick<ClientConfig, "server" | "ca" | "tlsServerName" | "insecureSkipTLSVerify"> {
  const where = `clusters[${c.name}].cluster`;
  refuse(c, where, { "proxy-url": "proxies are not supported by probegate's client; reach the API server directly" });
  const server = str(c, "server", where);
  if (!server) throw new KubeConfigError(`${c.file}: ${where}.server: missing`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new KubeConfigError(`${c.file}: ${where}.server: "${server}" is not a URL`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw new KubeConfigError(`${c.file}: ${where}.server: "${server}" is not http(s)`);
  const insecure = c.value["insecure-skip-tls-verify"] === true;
  const ca = fileOrData(c, where, "certificate-authority", "certificate-authority-data");
  if (insecure && ca) throw new KubeConfigError(`${c.file}: ${where}: insecure-skip-tls-verify and a certificate authority are both set; keep one`);
  return {
    server: server.replace(/\/+$/, ""),
    ca,
    tlsServerName: str(c, "tls-server-name", where),
    insecureSkipTLSVerify: insecure,
  };
}

function userPart(u: Named | undefined): Omit<ClientConfig, "server" | "ca" | "tlsServerName" | "insecureSkipTLSVerify" | "source"> {
  if (!u) return {};
  const where = `users[${u.name}].user`;
  refuse(u, where, {
    "auth-provider": "auth-provider plugins are not supported (client-go removed them too); use an exec credential plugin",
    username: "basic authentication is not supported; use a token, a client certificate or an exec plugin",
    password: "basic authentication is not supported; use a token, a client certificate or an exec plugin",
  });
  const token = str(u, "token", where);
  const tokenFileRaw = str(u, "tokenFile", where);
  const tokenFile = tokenFileRaw !== undefined ? resolve(u, tokenFileRaw) : undefined;
  if (tokenFile && token === undefined) mustRead(tokenFile, u.file, `${where}.tokenFile`);
  const clientCert = fileOrData(u, where, "client-certificate", "client-certificate-data");
  const clientKey = fileOrData(u, where, "client-key", "client-key-data");
  if (Boolean(clientCert) !== Boolean(clientKey)) throw new KubeConfigError(`${u.file}: ${where}: a client certificate needs a client key and the other way round`);
  const exec = execPart(u, where);
  if (exec && (token !== undefined || tokenFile !== undefined)) throw new KubeConfigError(`${u.file}: ${where}: exec and token/tokenFile are both set; only one authentication method is allowed`);
  const as = str(u, "as", where);
  const asUid = str(u, "as-uid", where);
  const groups = u.value["as-groups"];
  const extra = u.value["as-user-extra"];
  if (groups !== undefined && (!Array.isArray(groups) || groups.some((g) => typeof g !== "string"))) throw new KubeConfigError(`${u.file}: ${where}.as-groups: expected a list of strings`);
  const impersonate =
    as || asUid || groups || extra
      ? { user: as, uid: asUid, groups: (groups as string[] | undefined) ?? [], extra: (extra as Record<string, string[]> | undefined) ?? {} }
      : undefined;
  // A static token wins over tokenFile (client-go reads the file only without one).
  return { token, tokenFile: token === undefined ? tokenFile : undefined, clientCert, clientKey, exec, impersonate };
}

function execPart(u: Named, where: string): ExecConfig | undefined {
  const e = u.value.exec as Obj | undefined;
  if (e === undefined || e === null) return undefined;
  const w = `${where}.exec`;
  if (typeof e !== "object") throw new KubeConfigError(`${u.file}: ${w}: expected a map`);
  const apiVersion = e.apiVersion;
  if (apiVersion !== "client.authentication.k8s.io/v1" && apiVersion !== "client.authentication.k8s.io/v1beta1") {
    throw new KubeConfigError(`${u.file}: ${w}.apiVersion: "${String(apiVersion ?? "")}" is not client.authentication.k8s.io/v1 or v1beta1`);
  }
  if (typeof e.command !== "string" || e.command === "") throw new KubeConfigError(`${u.file}: ${w}.command: missing`);
  if (e.interactiveMode === "Always") throw new KubeConfigError(`${u.file}: ${w}.interactiveMode: Always needs a terminal, and probegate has none; use Never or IfAvailable`);
  const args = e.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) throw new KubeConfigError(`${u.file}: ${w}.args: expected a list of strings`);
  const env = e.env ?? [];
  if (!Array.isArray(env) || env.some((x) => !x || typeof (x as Obj).name !== "string" || typeof (x as Obj).value !== "string")) {
    throw new KubeConfigError(`${u.file}: ${w}.env: expected a list of {name, value}`);
  }
  // A command with a path separator is relative to the kubeconfig; a bare name is looked up on PATH.
  const command = e.command.includes("/") ? resolve(u, e.command) : e.command;
  return {
    apiVersion,
    command,
    args: args as string[],
    env: env as ExecConfig["env"],
    provideClusterInfo: e.provideClusterInfo === true,
    origin: `${u.file}: ${w}`,
  };
}

/** The kubeconfig files (--kubeconfig, or KUBECONFIG's list) or, without any, in-cluster. */
export function loadClientConfig(opts: { files?: string[]; context?: string; env: NodeJS.ProcessEnv }): ClientConfig {
  if (opts.files && opts.files.length > 0) return kubeconfigFiles(opts.files, opts.context);
  if (opts.context !== undefined) throw new KubeConfigError("--kube-context: needs a kubeconfig (--kubeconfig or KUBECONFIG)");
  return inClusterConfig(opts.env);
}
