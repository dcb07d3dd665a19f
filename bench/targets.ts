// The servers under test. probegate is one config entry like the peers; change
// its arguments here (or with PROBEGATE_BENCH_ARGS, whitespace-separated, which
// replaces `extraArgs`) without touching the harness.

import { PROBEGATE_NODE_ENV, PROBEGATE_NODE_FLAGS } from "./lib/launch.js";

export interface ServerCtx {
  root: string;
  socket: string;
  /** TCP port for gRPC h2c */
  port: number;
  /** TCP port for HTTP/1.1 (may equal port when one port sniffs both) */
  httpPort: number;
  /** The node binary for servers written in Node (default: the one running the bench). */
  node?: string;
  /** probegate's --plugins-dir (default: the bundled plugins in dist/plugins). */
  pluginsDir?: string;
  /** The fake node probegate checks (default: the one useFakeNode set). */
  fakeNode?: FakeNodeDirs;
}

/** A fake node: the compiled fake tools' directory and the scenario (procfs, sysfs, tool outputs; a kubelet directory when it has volumes). */
export interface FakeNodeDirs {
  bin: string;
  scenario: string;
  kubeletDir?: string;
}

export interface ServerTarget {
  id: string;
  label: string;
  role: "subject" | "peer";
  /** true when gRPC h2c and HTTP/1.1 share one port (probegate's --http-endpoint sniffs) */
  sharedHttpPort: boolean;
  /** HTTP/1.1 paths to load, if any */
  http: { healthz: boolean; connectJson: boolean };
  /** "stdout": wait for a READY line; "probe": poll Probe on the socket until it answers ready */
  readiness: "stdout" | "probe";
  command(ctx: ServerCtx): { cmd: string; args: string[]; env?: Record<string, string> };
}

const node = process.execPath;


const BENCH_ARGS = process.env.PROBEGATE_BENCH_ARGS?.trim() ? process.env.PROBEGATE_BENCH_ARGS.trim().split(/\s+/) : undefined;

/**
 * The node probegate checks while it is measured: compiled fake lnetctl/lctl
 * (a C program, as the real tools are) serving the healthy scenario. The demo
 * node's Node.js fakes cost ~0.5 s of CPU per call, which would bill the
 * benchmark for the fake rather than for probegate.
 */
let fakeNode: FakeNodeDirs | undefined;
export function useFakeNode(node: FakeNodeDirs): void {
  fakeNode = node;
}

function probegateNodeArgs(node = fakeNode): { args: string[]; env?: Record<string, string> } {
  if (BENCH_ARGS) return { args: BENCH_ARGS };
  if (!node) return { args: ["--demo", "healthy"] };
  return {
    args: [`--path.procfs=${node.scenario}/proc`, `--path.sysfs=${node.scenario}/sys`, ...(node.kubeletDir ? [`--kubelet-dir=${node.kubeletDir}`] : [])],
    env: { PATH: `${node.bin}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: node.scenario },
  };
}

export const TARGETS: ServerTarget[] = [
  {
    id: "probegate",
    label: "probegate",
    role: "subject",
    sharedHttpPort: true,
    http: { healthz: true, connectJson: true },
    readiness: "probe",
    command: (c) => {
      const nodeArgs = probegateNodeArgs(c.fakeNode);
      return {
        cmd: c.node ?? node,
        args: [
          ...PROBEGATE_NODE_FLAGS,
          "bin/probegate.js",
          "--csi-endpoint", `unix://${c.socket}`,
          "--http-endpoint", `127.0.0.1:${c.port}`,
          "--plugins-dir", c.pluginsDir ?? "dist/plugins",
          "--log-level", "warn",
          ...nodeArgs.args,
        ],
        env: { ...nodeArgs.env, ...PROBEGATE_NODE_ENV },
      };
    },
  },
  {
    id: "grpc-js",
    label: "@grpc/grpc-js",
    role: "peer",
    sharedHttpPort: false,
    http: { healthz: false, connectJson: false },
    readiness: "stdout",
    command: (c) => ({ cmd: c.node ?? node, args: ["dist/bench/peers/grpcjs.js", "--socket", c.socket, "--port", String(c.port)] }),
  },
  {
    id: "node-http2-raw",
    label: "raw node:http2 (canned)",
    role: "peer",
    sharedHttpPort: false,
    http: { healthz: true, connectJson: true },
    readiness: "stdout",
    command: (c) => ({
      cmd: c.node ?? node,
      args: ["dist/bench/peers/raw-h2.js", "--socket", c.socket, "--port", String(c.port), "--http-port", String(c.httpPort)],
    }),
  },
  {
    id: "connect-naive",
    label: "naive connect-node",
    role: "peer",
    sharedHttpPort: false,
    http: { healthz: false, connectJson: true },
    readiness: "stdout",
    command: (c) => ({
      cmd: c.node ?? node,
      args: ["dist/bench/peers/connect-naive.js", "--socket", c.socket, "--port", String(c.port), "--http-port", String(c.httpPort)],
    }),
  },
];

/** The condition the reporting target writes. */
export const KUBERNETES_BENCH_CONDITION = "probegate.csi.io/NodeReady";

/**
 * probegate with Kubernetes node reporting on (a Node condition, written to
 * the fake API server at `kubeconfig` for node `nodeName`), started as the
 * node-reporting component starts it: with the image's own node flags. Its
 * RSS is reported beside the target, not held to it (the 64 MiB is for
 * reporting off; bench/kube-api.ts holds on against off).
 */
export function withKubernetesReporting(pg: ServerTarget, kubeconfig: string, nodeName: string): ServerTarget {
  return {
    ...pg,
    id: "probegate+kubernetes",
    label: "probegate + Kubernetes reporting",
    command: (c) => {
      const base = pg.command(c);
      return {
        ...base,
        args: [...base.args, `--kubeconfig=${kubeconfig}`, `--node-name=${nodeName}`, `--node-condition=${KUBERNETES_BENCH_CONDITION}`],
      };
    },
  };
}
