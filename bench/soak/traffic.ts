// The requests of the soak, each the way its real client makes it, each
// ending in the recorder (deadline) and, where it says ready or not, the
// readiness oracle.
import http from "node:http";
import type http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import {
  Identity,
  NodeGetStorageHealthRequestSchema,
  NodeGetStorageHealthResponseSchema,
  NodeGetVolumeHealthRequestSchema,
  NodeGetVolumeHealthResponseSchema,
  NodeGetVolumeStatsRequestSchema,
  StorageHealthErrorType,
  VolumeHealthErrorType,
  NodePublishVolumeRequestSchema,
  NodeStageVolumeRequestSchema,
  NodeUnpublishVolumeRequestSchema,
  VolumeCapability_AccessMode_Mode,
} from "../../gateway/gen/csi/v1/csi_pb.js";
import { HealthCheckRequestSchema } from "../../gateway/gen/grpc/health/v1/health_pb.js";
import { ServerReflection } from "../../gateway/gen/grpc/reflection/v1/reflection_pb.js";
import { HEALTH_CHECK_PATH, PROBE_PATH, decodeProbeReady } from "../lib/grpc.js";
import type { GatewayProc } from "./gateway-proc.js";
import { connectSession, grpcUnary, type CallOutcome, type Dial } from "./grpc-call.js";
import type { Cause, ReadinessOracle } from "./oracle.js";
import type { Recorder } from "./recorder.js";

export const PROBE_DEADLINE_MS = 3_000;
export const HTTP_DEADLINE_MS = 3_000;
export const CALL_DEADLINE_MS = 5_000;
export const HARD_CAP_MS = 30_000;

export interface Target {
  proc: GatewayProc;
  oracle: ReadinessOracle;
  /** Causes in force for what an observer ("probe-unix", "readyz", "health-tcp", "connect-json", "grpc-web") promises to reflect. */
  causes(observer: string): Cause[];
}

const HEALTH_READINESS = Buffer.from(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service: "readiness" })));

/** Runs fn and reports whether the gateway was down or restarted meanwhile. */
export async function watched<T>(t: Target, fn: () => Promise<T>): Promise<{ r: T; outage: boolean; sentAt: number }> {
  const starts = t.proc.starts;
  const up = t.proc.alive();
  const sentAt = Date.now();
  const r = await fn();
  // A restarted gateway takes a few seconds to listen again; failures meanwhile are the crash's.
  const restarting = t.proc.lastCrashAt > 0 && Date.now() - t.proc.lastCrashAt < 15_000;
  return { r, outage: !up || !t.proc.alive() || t.proc.starts !== starts || restarting, sentAt };
}

export function fromCall(o: CallOutcome): { outcome: "ok" | "clean-error" | "lost" | "broken"; code?: string; detail?: string } {
  if (o.kind === "ok") return { outcome: "ok", code: "0" };
  if (o.kind === "status") return { outcome: "clean-error", code: String(o.code), detail: o.detail };
  if (o.kind === "hung") return { outcome: "lost", detail: "no answer by the hard cap" };
  return { outcome: "broken", detail: o.error };
}

/** kubelet → livenessprobe sidecar → CSI socket: a new connection per Probe. */
export async function probeUnix(t: Target, rec: Recorder, kind = "probe-unix-newconn"): Promise<void> {
  const { r, outage, sentAt } = await watched(t, () => grpcUnary({ socketPath: t.proc.spec.socket }, PROBE_PATH, new Uint8Array(), { timeoutMs: PROBE_DEADLINE_MS, capMs: HARD_CAP_MS }));
  const c = fromCall(r);
  const outcome = rec.record(kind, { ...c, ms: r.ms, deadlineMs: PROBE_DEADLINE_MS, outage, latencySeries: `${t.proc.spec.name}:probe` });
  if (outcome === "ok" || outcome === "clean-error") {
    let ready = false;
    if (r.kind === "ok") {
      try {
        ready = decodeProbeReady(r.message) ?? true;
      } catch {
        rec.record(`${kind}-decode`, { outcome: "broken", ms: r.ms, deadlineMs: PROBE_DEADLINE_MS, detail: "ProbeResponse does not decode" });
      }
    }
    t.oracle.observe("probe-unix", sentAt, ready, t.causes("probe-unix"));
  }
}

/** kubelet's native gRPC probe: a new connection per check, grpc.health.v1 on the TCP port. */
export async function healthTcp(t: Target, rec: Recorder): Promise<void> {
  const dial: Dial = { host: "127.0.0.1", port: t.proc.port };
  const { r, outage, sentAt } = await watched(t, () => grpcUnary(dial, HEALTH_CHECK_PATH, HEALTH_READINESS, { timeoutMs: PROBE_DEADLINE_MS, capMs: HARD_CAP_MS }));
  const outcome = rec.record("health-tcp-newconn", { ...fromCall(r), ms: r.ms, deadlineMs: PROBE_DEADLINE_MS, outage });
  if (outcome === "ok") {
    // HealthCheckResponse{status: SERVING (1)} is 08 01.
    const serving = r.kind === "ok" && r.message.length === 2 && r.message[0] === 0x08 && r.message[1] === 0x01;
    t.oracle.observe("health-tcp", sentAt, serving, t.causes("health-tcp"));
  }
}

/** kubelet's httpGet probe: HTTP/1.1, a new connection each time. */
export async function httpGet(t: Target, rec: Recorder, path: "/readyz" | "/healthz"): Promise<void> {
  const kind = `${path.slice(1)}-http1`;
  const { r, outage, sentAt } = await watched(
    t,
    () =>
      new Promise<{ status?: number; error?: string; hung?: boolean; ms: number }>((resolve) => {
        const start = performance.now();
        const req = http.get({ host: "127.0.0.1", port: t.proc.port, path, agent: false, headers: { Connection: "close" } }, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode, ms: performance.now() - start }));
          res.on("error", (e) => resolve({ error: e.message, ms: performance.now() - start }));
        });
        req.on("error", (e) => resolve({ error: e.message, ms: performance.now() - start }));
        req.setTimeout(HARD_CAP_MS, () => {
          req.destroy();
          resolve({ hung: true, ms: performance.now() - start });
        });
      }),
  );
  const good = r.status === 200 || r.status === 503;
  const outcome = rec.record(kind, {
    outcome: r.hung ? "lost" : good ? "ok" : "broken",
    code: r.status !== undefined ? String(r.status) : undefined,
    detail: r.error ?? (good ? undefined : `HTTP ${r.status}`),
    ms: r.ms,
    deadlineMs: HTTP_DEADLINE_MS,
    outage,
  });
  if (outcome === "ok" && path === "/readyz") t.oracle.observe("readyz", sentAt, r.status === 200, t.causes("readyz"));
}

type ConnectKind = "connect-json" | "grpc-web";

/** Connect and gRPC-Web clients (connect-node), kept per gateway and protocol. */
export class ConnectClients {
  private readonly identity = new Map<string, ReturnType<typeof createClient<typeof Identity>>>();
  private readonly refl = new Map<string, ReturnType<typeof createClient<typeof ServerReflection>>>();

  private client(kind: ConnectKind, port: number) {
    const key = `${kind}:${port}`;
    let c = this.identity.get(key);
    if (!c) {
      const baseUrl = `http://127.0.0.1:${port}`;
      const transport = kind === "connect-json" ? createConnectTransport({ baseUrl, httpVersion: "1.1" }) : createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
      c = createClient(Identity, transport);
      this.identity.set(key, c);
    }
    return c;
  }

  async probe(t: Target, rec: Recorder, kind: ConnectKind): Promise<void> {
    const client = this.client(kind, t.proc.port);
    const { r, outage, sentAt } = await watched(t, () => timedConnect(() => client.probe({}, { timeoutMs: PROBE_DEADLINE_MS })));
    const outcome = rec.record(`${kind}-probe`, { ...r.c, ms: r.ms, deadlineMs: PROBE_DEADLINE_MS, outage });
    if (outcome === "ok" || outcome === "clean-error") t.oracle.observe(kind, sentAt, r.value ? (r.value.ready ?? true) : false, t.causes(kind));
  }

  async reflection(t: Target, rec: Recorder): Promise<void> {
    const key = String(t.proc.port);
    let c = this.refl.get(key);
    if (!c) {
      c = createClient(ServerReflection, createGrpcTransport({ baseUrl: `http://127.0.0.1:${t.proc.port}` }));
      this.refl.set(key, c);
    }
    const client = c;
    const { r, outage } = await watched(t, () =>
      timedConnect(async () => {
        const names: string[] = [];
        async function* one() {
          yield { messageRequest: { case: "listServices" as const, value: "" } };
        }
        for await (const res of client.serverReflectionInfo(one(), { timeoutMs: PROBE_DEADLINE_MS })) {
          if (res.messageResponse.case === "listServicesResponse") names.push(...res.messageResponse.value.service.map((s) => s.name));
        }
        if (!names.includes("csi.v1.Identity")) throw new Error(`reflection lists ${names.join(",")}`);
        return names;
      }),
    );
    rec.record("reflection-grpc", { ...r.c, ms: r.ms, deadlineMs: PROBE_DEADLINE_MS, outage });
  }
}

async function timedConnect<T>(fn: () => Promise<T>): Promise<{ c: { outcome: "ok" | "clean-error" | "lost" | "broken"; code?: string; detail?: string }; ms: number; value?: T }> {
  const start = performance.now();
  try {
    const value = await fn();
    return { c: { outcome: "ok", code: "0" }, ms: performance.now() - start, value };
  } catch (e) {
    const ms = performance.now() - start;
    if (!(e instanceof ConnectError)) return { c: { outcome: "broken", detail: String((e as Error).message ?? e) }, ms };
    const cause = (e.cause as NodeJS.ErrnoException | undefined)?.code;
    if (e.code === Code.DeadlineExceeded) return { c: { outcome: "lost", code: Code[e.code], detail: "no answer within the deadline" }, ms };
    // A transport failure carries the socket's error as its cause; an error the server sent does not.
    if (cause) return { c: { outcome: "broken", code: Code[e.code], detail: `${cause ?? ""} ${e.rawMessage}` }, ms };
    return { c: { outcome: "clean-error", code: Code[e.code], detail: e.rawMessage }, ms };
  }
}

/** Gateway mode: kubelet's calls on the CSI socket, forwarded to the driver, over one kept connection. */
export class Forwarder {
  private session: http2.ClientHttp2Session | undefined;
  private readonly messages: Record<string, Uint8Array>;

  constructor(private readonly t: Target) {
    const cap = { accessMode: { mode: VolumeCapability_AccessMode_Mode.MULTI_NODE_MULTI_WRITER }, accessType: { case: "mount" as const, value: { fsType: "lustre" } } };
    this.messages = {
      NodePublishVolume: toBinary(NodePublishVolumeRequestSchema, create(NodePublishVolumeRequestSchema, { volumeId: "soak-vol", targetPath: "/var/lib/kubelet/pods/p/volumes/v/mount", stagingTargetPath: "/staging/soak-vol", volumeCapability: cap, secrets: { password: "never-logged" } })),
      NodeUnpublishVolume: toBinary(NodeUnpublishVolumeRequestSchema, create(NodeUnpublishVolumeRequestSchema, { volumeId: "soak-vol", targetPath: "/var/lib/kubelet/pods/p/volumes/v/mount" })),
      NodeStageVolume: toBinary(NodeStageVolumeRequestSchema, create(NodeStageVolumeRequestSchema, { volumeId: "soak-vol", stagingTargetPath: "/staging/soak-vol", volumeCapability: cap })),
      NodeGetVolumeStats: toBinary(NodeGetVolumeStatsRequestSchema, create(NodeGetVolumeStatsRequestSchema, { volumeId: "soak-vol", volumePath: "/var/lib/kubelet/pods/p/volumes/v/mount" })),
    };
  }

  methods(): string[] {
    return Object.keys(this.messages);
  }

  private sessionFor(): http2.ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) this.session = connectSession({ socketPath: this.t.proc.spec.socket });
    return this.session;
  }

  async call(rec: Recorder, method: string): Promise<void> {
    const { r, outage } = await watched(this.t, () => grpcUnary(this.sessionFor(), `/csi.v1.Node/${method}`, this.messages[method], { timeoutMs: CALL_DEADLINE_MS, capMs: HARD_CAP_MS }));
    if (r.kind === "transport") this.session?.destroy();
    rec.record(`forward-${method}`, { ...fromCall(r), ms: r.ms, deadlineMs: CALL_DEADLINE_MS, outage });
  }

  close(): void {
    this.session?.destroy();
  }
}

/**
 * kubelet 1.37's health calls on the CSI socket, over one kept connection:
 * NodeGetStorageHealth, and NodeGetVolumeHealth for each volume it mounted.
 * Each must answer in time (from memory, whatever the mounts do); the
 * decoded entries go to `onAnswer` for the health invariants.
 */
export class HealthCalls {
  private session: http2.ClientHttp2Session | undefined;
  private readonly storageRequest = toBinary(NodeGetStorageHealthRequestSchema, create(NodeGetStorageHealthRequestSchema));

  constructor(private readonly t: Target) {}

  private sessionFor(): http2.ClientHttp2Session {
    if (!this.session || this.session.closed || this.session.destroyed) this.session = connectSession({ socketPath: this.t.proc.spec.socket });
    return this.session;
  }

  async storage(rec: Recorder, onAnswer?: (sentAt: number, entries: Array<{ status: string; reason: string }>) => void): Promise<void> {
    const { r, outage, sentAt } = await watched(this.t, () => grpcUnary(this.sessionFor(), "/csi.v1.Node/NodeGetStorageHealth", this.storageRequest, { timeoutMs: CALL_DEADLINE_MS, capMs: HARD_CAP_MS }));
    if (r.kind === "transport") this.session?.destroy();
    const outcome = rec.record(`${this.t.proc.spec.name}-storage-health`, { ...fromCall(r), ms: r.ms, deadlineMs: CALL_DEADLINE_MS, outage });
    if (outcome !== "ok" || r.kind !== "ok") return;
    let entries: Array<{ status: string; reason: string }>;
    try {
      entries = fromBinary(NodeGetStorageHealthResponseSchema, r.message).backendHealth.map((b) => ({ status: StorageHealthErrorType[b.status] ?? String(b.status), reason: b.reason }));
    } catch {
      rec.record(`${this.t.proc.spec.name}-storage-health-decode`, { outcome: "broken", ms: r.ms, deadlineMs: CALL_DEADLINE_MS, detail: "NodeGetStorageHealthResponse does not decode" });
      return;
    }
    onAnswer?.(sentAt, entries);
  }

  async volume(rec: Recorder, volumeId: string, publishPath: string, onAnswer?: (sentAt: number, entries: Array<{ status: string; reason: string }>) => void): Promise<void> {
    const req = toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId, volumePublishPath: publishPath }));
    const { r, outage, sentAt } = await watched(this.t, () => grpcUnary(this.sessionFor(), "/csi.v1.Node/NodeGetVolumeHealth", req, { timeoutMs: CALL_DEADLINE_MS, capMs: HARD_CAP_MS }));
    if (r.kind === "transport") this.session?.destroy();
    const outcome = rec.record(`${this.t.proc.spec.name}-volume-health`, { ...fromCall(r), ms: r.ms, deadlineMs: CALL_DEADLINE_MS, outage });
    if (outcome !== "ok" || r.kind !== "ok") return;
    let entries: Array<{ status: string; reason: string }>;
    try {
      const v = fromBinary(NodeGetVolumeHealthResponseSchema, r.message).volumeHealth;
      if (v && v.volumeId !== volumeId) throw new Error("another volume's answer");
      entries = (v?.healthStatuses ?? []).map((e) => ({ status: VolumeHealthErrorType[e.status] ?? String(e.status), reason: e.reason }));
    } catch {
      rec.record(`${this.t.proc.spec.name}-volume-health-decode`, { outcome: "broken", ms: r.ms, deadlineMs: CALL_DEADLINE_MS, detail: "NodeGetVolumeHealthResponse does not decode or names another volume" });
      return;
    }
    onAnswer?.(sentAt, entries);
  }

  close(): void {
    this.session?.destroy();
  }
}
