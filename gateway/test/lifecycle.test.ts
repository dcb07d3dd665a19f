// Issue 2: the process's life: sockets, flags, listen errors, graceful shutdown.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../src/cli/config.js";
import { runProbegate, startGatewayProcess, tempDir } from "./helpers/gateway-process.js";

describe("the CSI unix socket", () => {
  it("creates the parent directory and removes the socket on exit", async () => {
    const socket = path.join(tempDir(), "deep", "er", "csi.sock");
    const gw = await startGatewayProcess([], { socket });
    expect(fs.statSync(socket).isSocket()).toBe(true);
    expect(await gw.stop("SIGTERM")).toBe(0);
    expect(fs.existsSync(socket)).toBe(false);
  });

  it("replaces a stale socket left by a crashed predecessor", async () => {
    const socket = path.join(tempDir(), "csi.sock");
    // A real crash: a process bound to the path is SIGKILLed, so nobody unlinks it.
    const crashed = spawn(process.execPath, ["-e", `require("net").createServer().listen(${JSON.stringify(socket)}, () => console.log("up"))`], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise((r) => crashed.stdout!.once("data", r));
    crashed.kill("SIGKILL");
    await new Promise((r) => crashed.once("exit", r));
    expect(fs.statSync(socket).isSocket()).toBe(true);

    const gw = await startGatewayProcess([], { socket });
    const res = await fetch(`http://${gw.http}/healthz`);
    expect(await res.text()).toBe("ok");
    expect(await gw.stop()).toBe(0);
  });

  it("refuses, naming the socket, when a live process serves on it", async () => {
    const socket = path.join(tempDir(), "csi.sock");
    const owner = net.createServer((c) => c.destroy());
    await new Promise<void>((r) => owner.listen(socket, r));
    try {
      const r = await runProbegate([`--csi-endpoint=unix://${socket}`, "--http-endpoint=off"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`${socket} is in use: another process is serving on it`);
      expect(fs.statSync(socket).isSocket()).toBe(true); // left alone
    } finally {
      owner.close();
    }
  });

  it("refuses to replace a path that is not a socket", async () => {
    const file = path.join(tempDir(), "csi.sock");
    fs.writeFileSync(file, "precious");
    const r = await runProbegate([`--csi-endpoint=unix://${file}`, "--http-endpoint=off"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("exists and is not a socket");
    expect(fs.readFileSync(file, "utf8")).toBe("precious");
  });

  it("serves gRPC on a TCP CSI endpoint too", async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    const port = (probe.address() as net.AddressInfo).port;
    probe.close();
    const gw = await startGatewayProcess([`--csi-endpoint=tcp://127.0.0.1:${port}`]);
    const start = gw.logs().find((l) => l.msg === "probegate started")!;
    expect(start.csiEndpoint).toBe(`127.0.0.1:${port}`);
    expect(await gw.stop()).toBe(0);
  });
});

describe("flags", () => {
  it.each([
    [["--bogus"], /^probegate: unknown flag --bogus \(see --help\)\n$/],
    [["--mode=edge"], /^probegate: --mode: expected node or controller, got "edge"\n$/],
    [["--driver-name=-bad-"], /^probegate: --driver-name: "-bad-" must begin and end with an alphanumeric/],
    [[`--driver-name=${"a".repeat(64)}`], /must be at most 63 characters \(got 64\)/],
    [["--http-endpoint=nope"], /^probegate: --http-endpoint: nope: expected HOST:PORT\n$/],
    [["--csi-endpoint=ftp://x"], /^probegate: --csi-endpoint: ftp:\/\/x: unsupported scheme/],
    [["--check-interval=5"], /^probegate: --check-interval: invalid duration "5"/],
    [["--capabilities=teleport"], /unknown capability "teleport"/],
    [["--log-level=loud"], /--log-level: expected one of/],
    [["--gate=node-stage"], /--gate: needs --upstream/],
    [["--quarantine-backoff=1m", "--quarantine-backoff-max=30s"], /--quarantine-backoff-max: must not be shorter than --quarantine-backoff/],
    [["--quarantine-backoff=soon"], /--quarantine-backoff: invalid duration "soon"/],
    [["--plugins-dir=/x", "--plugins-dir=/x"], /--plugins-dir: \/x is given twice/],
    [["--probe-ready=upstream"], /^probegate: --probe-ready=upstream: needs --upstream/],
    [["--probe-ready=sometimes"], /^probegate: --probe-ready: expected upstream, startup, readiness, got "sometimes"\n$/],
    [["--exec-in-process=/app/azurelustreplugin"], /^probegate: --exec-in-process: expected an executable name \(no '\/', no spaces\)/],
    [["--exec-in-process=azurelustreplugin", "--command-prefix=nsenter --target 1 --mount --"], /--exec-in-process and --command-prefix cannot be combined/],
    [["--require-checks=lnet-nets,../x"], /^probegate: --require-checks: invalid check name "..\/x"\n$/],
    [["stray"], /unexpected argument "stray"/],
  ])("%j → one line naming the flag, exit 2", async (args, message) => {
    const r = await runProbegate(args as string[]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message as RegExp);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  });

  // Issue 31 item 5: what a demanding user expects of the flags.
  it.each([
    [["--check-interval=0s"], /^probegate: --check-interval: must be at least 1s \(each round runs every check and its commands\), got "0s"\n$/],
    [["--check-interval=500ms"], /^probegate: --check-interval: must be at least 1s .*got "500ms"\n$/],
    [["--help=yes"], /^probegate: --help is a switch and takes no value: give --help alone, or leave it out\n$/],
    [["--readyz-detail-remote=true"], /^probegate: --readyz-detail-remote is a switch and takes no value/],
    [["--mode"], /^probegate: --mode needs a value\n$/],
    [["--csi-endpoint=/var/lib/kubelet/plugins/x/csi.sock"], /^probegate: --csi-endpoint: "\/var\/lib\/kubelet\/plugins\/x\/csi.sock" has no scheme; a unix socket is written unix:\/\/\/var\/lib\/kubelet\/plugins\/x\/csi.sock\n$/],
    [["--upstream=/csi/csi.sock"], /^probegate: --upstream: "\/csi\/csi.sock" has no scheme; a unix socket is written unix:\/\/\/csi\/csi.sock\n$/],
    [["--node-name=node-a", "--node-condition=x.example.com/A", "--node-operations-condition=x.example.com/A"], /^probegate: --node-operations-condition: must differ from --node-condition and --node-storage-condition/],
    [["--unstick=always"], /^probegate: --unstick: expected off or unmount, got "always"/],
    [["--node-name=node-a"], /^probegate: --node-name: nothing to report: node reporting needs --node-condition, --node-taint, --node-storage-condition and\/or --node-operations-condition/],
    [["--kubeconfig=/etc/kubernetes/kubelet.conf"], /^probegate: --kubeconfig: nothing to report: node reporting needs --node-condition, --node-taint, --node-storage-condition and\/or --node-operations-condition/],
  ])("%j → one line saying what to do, exit 2", async (args, message) => {
    const r = await runProbegate(args as string[]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message as RegExp);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("NODE_NAME and KUBECONFIG in the environment alone are no request to report (nothing is refused)", () => {
    const cfg = parseConfig([], { NODE_NAME: "node-a", KUBECONFIG: "/root/.kube/config" });
    expect(cfg.kube).toBeUndefined();
  });

  it("reads no driver's environment: AZURELUSTRE_CSI_INSTALL_LUSTRE_CLIENT is the azurelustre component's business (it passes --mode)", () => {
    expect(parseConfig([], { AZURELUSTRE_CSI_INSTALL_LUSTRE_CLIENT: "no" }).mode).toBe("node");
    expect(parseConfig([], { AZURELUSTRE_CSI_INSTALL_LUSTRE_CLIENT: "maybe" }).mode).toBe("node");
    expect(parseConfig([], { CSI_ENDPOINT: "unix:///csi/csi.sock" }).csiEndpoint.display).toBe("unix:///csi/csi.sock");
  });

  it("every flag's default parses with the flag's own parser (a default cannot be one the flag would refuse)", async () => {
    const { FLAGS } = await import("../src/cli/flags.js");
    for (const f of FLAGS as ReadonlyArray<{ name: string; default?: string; parse?: (raw: string, flag: string) => unknown }>) {
      if (f.default !== undefined && f.parse) expect(() => f.parse!(f.default!, f.name), f.name).not.toThrow();
    }
    // And parseConfig with no flags at all is a valid configuration.
    expect(parseConfig([], {}).checkIntervalMs).toBe(5000);
  });

  it("--help lists every flag and --version prints the package version", async () => {
    const help = await runProbegate(["--help"]);
    expect(help.code).toBe(0);
    for (const flag of ["--mode", "--csi-endpoint", "--http-endpoint", "--driver-name", "--plugins-dir", "--path.procfs", "--path.sysfs", "--log-level", "--upstream"]) {
      expect(help.stdout).toContain(flag);
    }
    const version = await runProbegate(["--version"]);
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "../../package.json"), "utf8"));
    expect(version.stdout.trim()).toBe(`probegate ${pkg.version}`);
  });

});

describe("listen errors", () => {
  it("names the port that is in use and exits 1", async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, "127.0.0.1", r));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const r = await runProbegate([`--csi-endpoint=unix://${path.join(tempDir(), "c.sock")}`, `--http-endpoint=127.0.0.1:${port}`]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`tcp://127.0.0.1:${port} is already in use`);
    } finally {
      busy.close();
    }
  });
});

describe("SIGTERM", () => {
  it("finishes a call in flight, then removes the socket and exits 0", async () => {
    const gw = await startGatewayProcess(["--shutdown-timeout=10s"]);
    const [host, port] = gw.http.split(":");
    // A Connect call whose body is still being sent when the signal arrives.
    const body = "{}";
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        { host, port: Number(port), method: "POST", path: "/csi.v1.Identity/Probe", headers: { "content-type": "application/json", "content-length": body.length } },
        (res) => {
          let text = "";
          res.on("data", (d) => (text += d));
          res.on("end", () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on("error", reject);
      req.write(body.slice(0, 1));
      setTimeout(() => {
        gw.child.kill("SIGTERM");
        setTimeout(() => req.end(body.slice(1)), 300);
      }, 300);
    });
    const r = await response;
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ ready: true });
    expect(await gw.exited).toBe(0);
    expect(fs.existsSync(gw.socket)).toBe(false);
    expect(gw.logs().some((l) => l.msg === "shutting down")).toBe(true);
  });

  it("stops within the bound when a client never finishes", async () => {
    const gw = await startGatewayProcess(["--shutdown-timeout=500ms"]);
    const [host, port] = gw.http.split(":");
    const req = http.request({ host, port: Number(port), method: "POST", path: "/csi.v1.Identity/Probe", headers: { "content-type": "application/json", "content-length": 100 } });
    req.on("error", () => {});
    req.write("{");
    await new Promise((r) => setTimeout(r, 200));
    gw.child.kill("SIGINT");
    expect(await gw.exited).toBe(0);
    expect(fs.existsSync(gw.socket)).toBe(false);
  });
});
