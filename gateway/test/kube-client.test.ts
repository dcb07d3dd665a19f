// probegate's own Kubernetes client, end to end: a real probegate process
// under the image's node flags, a fake API server over TLS with a CA and a
// server certificate made here, and the ways a node authenticates: a rotating
// token file, client certificates, an exec credential plugin, the pod's
// service-account files; watches that resume and relist after 410 Gone.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { FakeKubeApi } from "./helpers/fake-kube-api.js";
import { fakeLnet, type FakeLnet } from "./helpers/fake-lnet.js";
import { IMAGE_NODE_FLAGS, ROOT, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { makeCA, makeCert, type Pem } from "./helpers/test-pki.js";
import { RestClient, type KubeError } from "../src/kube/client/rest.js";

const COND = "lustre.csi.example.com/NodeReady";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

let pki: { dir: string; ca: Pem; server: Pem; otherCA: Pem; clientCA: Pem; client: Pem };
beforeAll(() => {
  const dir = tempDir("probegate-kube-pki-");
  const ca = makeCA(dir, "cluster-ca");
  const otherCA = makeCA(dir, "other-ca");
  const clientCA = makeCA(dir, "client-ca");
  pki = {
    dir,
    ca,
    otherCA,
    clientCA,
    server: makeCert(dir, ca, "apiserver", { cn: "kube-apiserver", serverIP: "127.0.0.1" }),
    client: makeCert(dir, clientCA, "probegate", { cn: "probegate-node-a" }),
  };
}, 30_000);

async function until<T>(what: string, f: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    const v = await f();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function fakeApi(opts: ConstructorParameters<typeof FakeKubeApi>[0] = {}): Promise<FakeKubeApi> {
  const api = await new FakeKubeApi({ tls: { key: pki.server.key, cert: pki.server.cert }, ...opts }).start();
  cleanups.push(() => api.close());
  api.addNode("node-a");
  return api;
}

function kubeconfig(dir: string, cluster: string, user: string): string {
  const file = path.join(dir, "kubeconfig");
  fs.writeFileSync(
    file,
    ["apiVersion: v1", "kind: Config", "clusters:", "- name: c", `  cluster: {${cluster}}`, "users:", "- name: u", `  user: {${user}}`,
      "contexts:", "- name: x", "  context: {cluster: c, user: u}", "current-context: x", ""].join("\n"),
  );
  return file;
}

async function gateway(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ gw: GatewayProcess; node: FakeLnet }> {
  const node = fakeLnet({ base: "healthy" });
  cleanups.push(() => node.cleanup());
  const gw = await startGatewayProcess(
    [
      `--plugins-dir=${path.join(ROOT, "dist", "plugins")}`,
      `--path.procfs=${node.procfs}`,
      `--path.sysfs=${node.sysfs}`,
      "--check-interval=1s",
      "--plugin-timeout=5s",
      "--node-name=node-a",
      `--node-condition=${COND}`,
      "--node-backoff-cap=1s",
      "--node-write-interval=50ms",
      ...args,
    ],
    { env: { ...node.env, KUBECONFIG: "", KUBERNETES_SERVICE_HOST: "", ...env }, nodeArgs: IMAGE_NODE_FLAGS },
  );
  cleanups.push(async () => void (await gw.stop()));
  return { gw, node };
}

const breakNode = (n: FakeLnet) => n.update({ operstate: { eth0: "down\n" } });
const healNode = (n: FakeLnet) => n.update({ operstate: { eth0: "up\n" } });

async function probe(gw: GatewayProcess): Promise<{ ready?: boolean }> {
  const res = await fetch(`http://${gw.http}/csi.v1.Identity/Probe`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  return (await res.json()) as { ready?: boolean };
}

describe("TLS and credentials", () => {
  it("a CA file and a tokenFile: the token rotates on disk, the old one is refused, reporting goes on; no token is logged", async () => {
    const api = await fakeApi({ tokens: { "token-one": "node-a" } });
    const dir = tempDir("probegate-kube-tls-");
    const tokenFile = path.join(dir, "token");
    fs.writeFileSync(tokenFile, "token-one\n");
    const kc = kubeconfig(dir, `server: "${api.url}", certificate-authority: ${pki.ca.certFile}`, "tokenFile: token");
    const { gw, node } = await gateway([`--kubeconfig=${kc}`]);
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");

    // The kubelet writes a new projected token; the API server stops accepting the old one.
    fs.writeFileSync(tokenFile, "token-two\n");
    api.addToken("token-two", "node-a");
    api.revokeToken("token-one");
    breakNode(node);
    await until("condition False with the new token", () => api.condition("node-a", COND)?.status === "False");
    healNode(node);
    await until("condition True again", () => api.condition("node-a", COND)?.status === "True");
    // The old token was tried once more and refused; the client re-read the file at once.
    expect(api.requests.some((r) => r.status === 401)).toBe(true);
    expect(gw.stderr()).not.toMatch(/token-one|token-two/);
  }, 60_000);

  it("a CA that did not sign the server: no request gets through, Probe answers, the log names the certificate problem", async () => {
    const api = await fakeApi({ tokens: { "token-a": "node-a" } });
    const dir = tempDir("probegate-kube-badca-");
    const kc = kubeconfig(dir, `server: "${api.url}", certificate-authority: ${pki.otherCA.certFile}`, 'token: "token-a"');
    const { gw } = await gateway([`--kubeconfig=${kc}`]);
    await until("the failure logged", () => gw.logs().find((l) => l.msg === "Kubernetes API request failed; retrying"));
    const failure = gw.logs().find((l) => l.msg === "Kubernetes API request failed; retrying")!;
    expect(String(failure.error)).toMatch(/certificate/i);
    // Probe is unaffected: it answers, and says ready once the checks have run.
    await until("Probe ready", async () => (await probe(gw)).ready === true);
    expect(api.requests).toEqual([]);
    expect(api.tlsErrors.length).toBeGreaterThan(0);
    expect(api.condition("node-a", COND)).toBeUndefined();
  }, 60_000);

  // Issue 31 item 5: OpenSSL's raw text ("unable to verify the first certificate") becomes a sentence naming the server and what to check.
  it.each([
    ["a CA that did not sign the server", () => `certificate-authority: ${pki.otherCA.certFile}`,
      (url: string) => `the API server at ${url} presented a certificate that the CA probegate trusts (the kubeconfig's certificate-authority, or the service account's ca.crt in a pod) did not sign: check that it is this cluster's CA (UNABLE_TO_VERIFY_LEAF_SIGNATURE)`],
    ["a certificate that does not name the server", () => `certificate-authority: ${pki.ca.certFile}, tls-server-name: api.elsewhere.example`,
      (url: string) => `the certificate of the API server at ${url} does not name api.elsewhere.example: use a server address it was issued for in the kubeconfig, or set tls-server-name to one of its names (ERR_TLS_CERT_ALTNAME_INVALID)`],
  ])("TLS failure, %s: logged as a sentence naming the server", async (_what, cluster, sentence) => {
    const api = await fakeApi({ tokens: { "token-a": "node-a" } });
    const dir = tempDir("probegate-kube-tlsmsg-");
    const kc = kubeconfig(dir, `server: "${api.url}", ${cluster()}`, 'token: "token-a"');
    const { gw } = await gateway([`--kubeconfig=${kc}`]);
    const failure = await until("the failure logged", () => gw.logs().find((l) => l.msg === "Kubernetes API request failed; retrying"));
    expect(failure.error).toBe(sentence(api.url));
    expect(api.requests).toEqual([]);
  }, 60_000);

  it("client certificates: the server requires and verifies them (cert from a file, key as data)", async () => {
    const api = await fakeApi({
      tls: { key: pki.server.key, cert: pki.server.cert, clientCA: pki.clientCA.cert },
      certUsers: { "probegate-node-a": "node-a" },
    });
    const dir = tempDir("probegate-kube-cert-");
    const keyData = Buffer.from(pki.client.key).toString("base64");
    const kc = kubeconfig(
      dir,
      `server: "${api.url}", certificate-authority-data: ${Buffer.from(pki.ca.cert).toString("base64")}`,
      `client-certificate: ${pki.client.certFile}, client-key-data: ${keyData}`,
    );
    const { gw } = await gateway([`--kubeconfig=${kc}`]);
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
    expect(api.writes().every((r) => r.user === "system:serviceaccount:probegate:probegate-node@node-a")).toBe(true);
    // Without the certificate the handshake itself fails: the fake does verify.
    const noCert = kubeconfig(tempDir("probegate-kube-nocert-"), `server: "${api.url}", certificate-authority: ${pki.ca.certFile}`, 'token: "none"');
    const { gw: gw2 } = await gateway([`--kubeconfig=${noCert}`]);
    await until("the refused handshake logged", () => gw2.logs().find((l) => l.msg === "Kubernetes API request failed; retrying"));
    expect(gw.stderr()).not.toContain(keyData);
  }, 60_000);

  it("an exec credential plugin with an expiry: run by argv with KUBERNETES_EXEC_INFO, cached, run again when it expires", async () => {
    const api = await fakeApi({ tokens: { "exec-token": "node-a" } });
    const dir = tempDir("probegate-kube-exec-");
    const plugin = path.join(dir, "credential-plugin");
    const runs = path.join(dir, "runs");
    // A script run directly (its #! line): the client starts it by argv, no shell of ours.
    fs.writeFileSync(
      plugin,
      [
        `#!${process.execPath}`,
        'const fs = require("node:fs");',
        `fs.appendFileSync(${JSON.stringify(runs)}, JSON.stringify({ info: JSON.parse(process.env.KUBERNETES_EXEC_INFO), arg: process.argv[2], extra: process.env.PLUGIN_EXTRA }) + "\\n");`,
        // Valid for 12 s: the client renews 10 s before expiry, so it runs again about every 2 s.
        'const exp = new Date(Date.now() + 12000).toISOString().replace(/\\.\\d+Z$/, "Z");',
        'process.stdout.write(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", status: { token: "exec-token", expirationTimestamp: exp } }));',
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    const kc = kubeconfig(
      dir,
      `server: "${api.url}", certificate-authority: ${pki.ca.certFile}`,
      "exec: {apiVersion: client.authentication.k8s.io/v1, command: ./credential-plugin, args: [--for-probegate], env: [{name: PLUGIN_EXTRA, value: yes}], interactiveMode: Never, provideClusterInfo: true}",
    );
    const { node } = await gateway([`--kubeconfig=${kc}`, "--node-heartbeat=1s"]);
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
    await until("the plugin run again after expiry", () => fs.existsSync(runs) && fs.readFileSync(runs, "utf8").trim().split("\n").length >= 2, 20_000);
    const calls = fs.readFileSync(runs, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    expect(calls[0].info).toMatchObject({ apiVersion: "client.authentication.k8s.io/v1", kind: "ExecCredential", spec: { interactive: false, cluster: { server: api.url } } });
    expect(calls[0].arg).toBe("--for-probegate");
    expect(calls[0].extra).toBe("yes");
    // Cached: far fewer runs than requests.
    expect(calls.length).toBeLessThan(api.requests.length);
    breakNode(node);
    await until("condition False", () => api.condition("node-a", COND)?.status === "False");
  }, 60_000);

  it("an exec credential without an expiry is cached until a 401, then the plugin runs again (v1beta1)", async () => {
    const api = await fakeApi({ tokens: { "exec-1": "node-a" } });
    const dir = tempDir("probegate-kube-exec401-");
    const tokenFile = path.join(dir, "current-token");
    const runs = path.join(dir, "runs");
    fs.writeFileSync(tokenFile, "exec-1");
    fs.writeFileSync(
      path.join(dir, "plugin"),
      [
        `#!${process.execPath}`,
        'const fs = require("node:fs");',
        `fs.appendFileSync(${JSON.stringify(runs)}, "run\\n");`,
        `const token = fs.readFileSync(${JSON.stringify(tokenFile)}, "utf8");`,
        'process.stdout.write(JSON.stringify({ apiVersion: "client.authentication.k8s.io/v1beta1", kind: "ExecCredential", status: { token } }));',
        "",
      ].join("\n"),
      { mode: 0o755 },
    );
    const kc = kubeconfig(dir, `server: "${api.url}", certificate-authority: ${pki.ca.certFile}`, "exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./plugin}");
    const { gw, node } = await gateway([`--kubeconfig=${kc}`]);
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
    const runCount = () => fs.readFileSync(runs, "utf8").trim().split("\n").length;
    expect(runCount()).toBe(1);
    fs.writeFileSync(tokenFile, "exec-2");
    api.addToken("exec-2", "node-a");
    api.revokeToken("exec-1");
    breakNode(node);
    await until("condition False with the plugin's new token", () => api.condition("node-a", COND)?.status === "False");
    expect(runCount()).toBe(2);
    expect(gw.stderr()).not.toMatch(/exec-1|exec-2/);
  }, 60_000);

  it("insecure-skip-tls-verify works only with a loud warning at start", async () => {
    const api = await fakeApi({ tokens: { "token-a": "node-a" } });
    const kc = kubeconfig(tempDir("probegate-kube-insecure-"), `server: "${api.url}", insecure-skip-tls-verify: true`, 'token: "token-a"');
    const { gw } = await gateway([`--kubeconfig=${kc}`]);
    const warning = gw.logs().find((l) => /^INSECURE: insecure-skip-tls-verify/.test(String(l.msg)));
    expect(warning?.level).toBe(40);
    expect(warning?.kubeconfig).toBe(kc);
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
  }, 60_000);

  it("in-cluster: KUBERNETES_SERVICE_HOST/PORT and the service-account token and CA", async () => {
    const api = await fakeApi({ tokens: { "sa-token": "node-a" } });
    const sa = tempDir("probegate-kube-sa-");
    fs.writeFileSync(path.join(sa, "token"), "sa-token");
    fs.copyFileSync(pki.ca.certFile, path.join(sa, "ca.crt"));
    await gateway([], { KUBERNETES_SERVICE_HOST: "127.0.0.1", KUBERNETES_SERVICE_PORT: String(api.port), PROBEGATE_KUBE_SERVICEACCOUNT_DIR: sa });
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
  }, 60_000);
});

describe("watch", () => {
  it("resumes from the last bookmark without re-reading the Node; after 410 Gone lists it again and watches from the list", async () => {
    const api = await new FakeKubeApi({ tokens: { "token-a": "node-a" } }).start();
    cleanups.push(() => api.close());
    api.addNode("node-a");
    const dir = tempDir("probegate-kube-watch-");
    fs.writeFileSync(path.join(dir, "kc"), api.kubeconfig("token-a"));
    const { node } = await gateway([`--kubeconfig=${path.join(dir, "kc")}`, "--node-resync=2s"]);
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
    await until("a watch", () => api.watchesFrom().length >= 1);
    const reads = () => api.requests.filter((r) => r.method === "GET" && !r.watch).length;
    const readsBefore = reads();
    // Another node changes: only a bookmark tells this watch the newer resourceVersion.
    api.addNode("node-b");
    api.mutateNode("node-b", (n) => (n.metadata.labels.x = "y"));
    api.bookmark();
    const bookmarkRv = String(api.node("node-b").metadata.resourceVersion);
    const n = api.watchesFrom().length;
    await until("the watch renewed (timeoutSeconds=2)", () => api.watchesFrom().length > n, 10_000);
    const resumedFrom = api.watchesFrom()[n]!;
    expect(Number(resumedFrom)).toBeGreaterThanOrEqual(Number(bookmarkRv));
    expect(reads()).toBe(readsBefore);

    // The history is compacted and the watch cut: resuming is 410, so the Node is listed again.
    api.compact();
    const m = api.watchesFrom().length;
    api.endWatches();
    await until("a list of the node", () => api.requests.find((r) => r.path === "/api/v1/nodes" && !r.watch && r.query.includes("fieldSelector")));
    await until("a watch from the list's resourceVersion", () => api.watchesFrom().slice(m).some((rv) => rv !== "" && Number(rv) >= Number(api.node("node-a").metadata.resourceVersion)));
    breakNode(node);
    await until("condition False after the relist", () => api.condition("node-a", COND)?.status === "False");
  }, 60_000);

  it("a line that is JSON but no event (null, an event whose object is null) ends the watch with an error; it is watched again and reporting goes on", async () => {
    const api = await new FakeKubeApi({ tokens: { "token-a": "node-a" } }).start();
    cleanups.push(() => api.close());
    api.addNode("node-a");
    const dir = tempDir("probegate-kube-badline-");
    fs.writeFileSync(path.join(dir, "kc"), api.kubeconfig("token-a"));
    const { gw, node } = await gateway([`--kubeconfig=${path.join(dir, "kc")}`, "--node-resync=30s"]);
    await until("condition True", () => api.condition("node-a", COND)?.status === "True");
    await until("a watch", () => api.watchesFrom().length >= 1);
    for (const line of ["null", JSON.stringify({ type: "MODIFIED", object: null })]) {
      const n = api.watchesFrom().length;
      api.sendWatchLine(line);
      await until(`a new watch after ${line}`, () => api.watchesFrom().length > n, 10_000);
    }
    expect(gw.logs().some((l) => l.step === "watch node" && /bad event/.test(String(l.error)))).toBe(true);
    breakNode(node);
    await until("condition False after the bad lines", () => api.condition("node-a", COND)?.status === "False");
  }, 60_000);
});

describe("deadlines", () => {
  it("a server that sends the headers and then stalls: the request and the watch fail as timeout, not as a reset connection", async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write("{");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    cleanups.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
    const rest = new RestClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, insecureSkipTLSVerify: false, source: "test" }, 300, "test");
    cleanups.push(() => rest.close());

    await expect(rest.json({ method: "GET", path: "/api/v1/nodes/node-a" })).rejects.toMatchObject({ kind: "timeout", status: undefined });
    const watchErr = await new Promise<KubeError | null>((resolve) => rest.watch({ method: "GET", path: "/api/v1/nodes?watch=true" }, 300, () => {}, resolve));
    expect(watchErr).toMatchObject({ kind: "timeout", status: undefined });
  });
});
