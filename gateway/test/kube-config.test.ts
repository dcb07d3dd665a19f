// Loading the client's configuration: kubeconfig files merged as kubectl
// merges KUBECONFIG, the in-cluster files, and one clear line naming the file
// and field for everything refused or missing. Real files in a temp directory.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { inClusterConfig, kubeconfigFiles, loadClientConfig } from "../src/kube/client/kubeconfig.js";
import { tempDir } from "./helpers/gateway-process.js";

function write(dir: string, name: string, text: string): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text);
  return f;
}

const CA_PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

describe("kubeconfig files", () => {
  it("merges a KUBECONFIG list: the first file to set a name or current-context wins; relative paths follow the file that set them", () => {
    const a = tempDir("probegate-kc-a-");
    const b = tempDir("probegate-kc-b-");
    write(b, "ca.crt", CA_PEM);
    write(b, "tok", "from-b\n");
    const first = write(a, "config", [
      "clusters:",
      "- name: prod",
      "  cluster: {server: https://first.example:6443, insecure-skip-tls-verify: true}",
      "contexts:",
      "- name: main",
      "  context: {cluster: prod, user: robot}",
      "",
    ].join("\n"));
    const second = write(b, "config", [
      "clusters:",
      "- name: prod",
      "  cluster: {server: https://second.example:6443}",
      "- name: other",
      "  cluster: {server: https://other.example, certificate-authority: ca.crt, tls-server-name: api.internal}",
      "users:",
      "- name: robot",
      "  user: {tokenFile: tok, as: someone, as-groups: [g1, g2]}",
      "contexts:",
      "- name: main",
      "  context: {cluster: other, user: robot}",
      "- name: alt",
      "  context: {cluster: other, user: robot}",
      "current-context: alt",
      "",
    ].join("\n"));
    const third = write(a, "late", "current-context: main\n");
    const missing = path.join(a, "does-not-exist");
    // The first file's "main" context wins over the second's; the second file sets current-context first.
    const cfg = kubeconfigFiles([first, missing, second, third], "main");
    expect(cfg.server).toBe("https://first.example:6443");
    expect(cfg.insecureSkipTLSVerify).toBe(true);
    expect(cfg.tokenFile).toBe(path.join(b, "tok"));
    expect(cfg.impersonate).toEqual({ user: "someone", uid: undefined, groups: ["g1", "g2"], extra: {} });
    expect(cfg.source).toBe(first);
    const cur = kubeconfigFiles([first, second, third], undefined);
    expect(cur.server).toBe("https://other.example");
    expect(cur.ca?.toString()).toBe(CA_PEM);
    expect(cur.tlsServerName).toBe("api.internal");
    expect(cur.source).toBe(second);
  });

  it("refuses what it does not support, and bad or missing pieces, with one line naming file and field", () => {
    const d = tempDir("probegate-kc-bad-");
    const kc = (cluster: string, user: string, extra = "") =>
      write(d, `kc-${Math.random().toString(16).slice(2)}`, [
        "clusters:", "- name: c", `  cluster: {${cluster}}`,
        "users:", "- name: u", `  user: {${user}}`,
        "contexts:", "- name: x", "  context: {cluster: c, user: u}",
        extra || "current-context: x", "",
      ].join("\n"));
    const cases: Array<[string, RegExp]> = [
      [kc("server: https://a, proxy-url: http://proxy:3128", "token: t"), /: clusters\[c\]\.cluster\.proxy-url: proxies are not supported/],
      [kc("server: https://a", "auth-provider: {name: gcp}"), /: users\[u\]\.user\.auth-provider: auth-provider plugins are not supported/],
      [kc("server: https://a", "username: admin, password: secret"), /users\[u\]\.user\.username: basic authentication is not supported/],
      [kc("server: https://a", "token: t, exec: {apiVersion: client.authentication.k8s.io/v1, command: x}"), /users\[u\]\.user: exec and token\/tokenFile are both set/],
      [kc("server: https://a", "exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}"), /users\[u\]\.user\.exec\.apiVersion: "client\.authentication\.k8s\.io\/v1alpha1" is not/],
      [kc("server: https://a", "exec: {apiVersion: client.authentication.k8s.io/v1, command: x, interactiveMode: Always}"), /exec\.interactiveMode: Always needs a terminal/],
      [kc("server: https://a", "tokenFile: /nonexistent/token"), /users\[u\]\.user\.tokenFile: cannot read \/nonexistent\/token \(ENOENT\)/],
      [kc("server: https://a, certificate-authority: missing.crt", "token: t"), /clusters\[c\]\.cluster\.certificate-authority: cannot read .*missing\.crt/],
      [kc("server: https://a, certificate-authority: x, certificate-authority-data: eA==", "token: t"), /both certificate-authority and certificate-authority-data are set/],
      [kc("server: https://a, insecure-skip-tls-verify: true, certificate-authority-data: eA==", "token: t"), /insecure-skip-tls-verify and a certificate authority are both set/],
      [kc("server: https://a", "client-certificate-data: eA=="), /a client certificate needs a client key/],
      [kc("insecure-skip-tls-verify: true", "token: t"), /clusters\[c\]\.cluster\.server: missing/],
      [kc("server: ftp://a", "token: t"), /cluster\.server: "ftp:\/\/a" is not http\(s\)/],
      [kc("server: https://a", "token: t", "current-context: nope"), /: current-context: no context named "nope"/],
      [kc("server: https://a", "token: t", "# no current context"), /current-context: not set/],
      [write(d, "not-yaml", "clusters: [unclosed\n"), /not-yaml: not a kubeconfig/],
    ];
    for (const [file, message] of cases) {
      expect(() => kubeconfigFiles([file], undefined), file).toThrow(message);
      try {
        kubeconfigFiles([file], undefined);
      } catch (err) {
        const msg = (err as Error).message;
        expect(msg.split("\n")).toHaveLength(1);
        expect(msg).not.toContain("secret");
      }
    }
    expect(() => kubeconfigFiles([kc("server: https://a", "token: t")], "elsewhere")).toThrow(/--kube-context: no context named "elsewhere"/);
  });
});

describe("in-cluster", () => {
  it("reads the service-account files and brackets an IPv6 service host", () => {
    const sa = tempDir("probegate-sa-");
    fs.writeFileSync(path.join(sa, "token"), "t");
    fs.writeFileSync(path.join(sa, "ca.crt"), CA_PEM);
    const env = { KUBERNETES_SERVICE_HOST: "fd00:10:96::1", KUBERNETES_SERVICE_PORT: "443", PROBEGATE_KUBE_SERVICEACCOUNT_DIR: sa };
    const cfg = inClusterConfig(env);
    expect(cfg.server).toBe("https://[fd00:10:96::1]:443");
    expect(cfg.tokenFile).toBe(path.join(sa, "token"));
    expect(cfg.ca?.toString()).toBe(CA_PEM);
    expect(inClusterConfig({ ...env, KUBERNETES_SERVICE_HOST: "10.96.0.1" }).server).toBe("https://10.96.0.1:443");
    fs.rmSync(path.join(sa, "ca.crt"));
    expect(() => inClusterConfig(env)).toThrow(/in-cluster: ca\.crt: cannot read .*ca\.crt \(ENOENT\)/);
    expect(() => loadClientConfig({ env: {} })).toThrow(/not running in a cluster/);
  });
});
