// A stand-in CSI driver for gateway-mode tests: a real @grpc/grpc-js server on
// a unix socket serving Identity, Node, Controller (and optionally
// GroupController) with scripted replies. Messages stay raw bytes both ways
// (identity serializers), so tests can compare exactly what went in and out.

import * as grpc from "@grpc/grpc-js";
import http2 from "node:http2";
import { rmSync } from "node:fs";
import { create, toBinary, type DescService } from "@bufbuild/protobuf";
import { Controller, GetPluginInfoResponseSchema, GroupController, Identity, Node, ProbeResponseSchema } from "../../gen/csi/v1/csi_pb.js";

export type ServiceName = "Identity" | "Node" | "Controller" | "GroupController";

const SERVICES: Record<ServiceName, DescService> = { Identity, Node, Controller, GroupController };

export interface ScriptedReply {
  /** Response message bytes (default: empty message). */
  message?: Uint8Array;
  /** Fail with this status instead; metadata goes out as trailers (e.g. grpc-status-details-bin). */
  error?: { code: grpc.status; details: string; metadata?: Record<string, string | Buffer> };
  /** Response headers (initial metadata). */
  headers?: Record<string, string | Buffer>;
  /** Trailers on success. */
  trailers?: Record<string, string | Buffer>;
  /** Wait this long before answering; a cancelled call is recorded and not answered. */
  delayMs?: number;
}

export interface RecordedCall {
  path: string;
  request: Buffer;
  metadata: Record<string, Array<string | Buffer>>;
  /** Absolute deadline as the driver's gRPC stack understood it; Infinity when none. */
  deadline: number;
  receivedAt: number;
  cancelled: boolean;
}

/** A function may answer later (a stand-in driver doing real work, e.g. running umount). */
type Script = ScriptedReply | ((request: Buffer) => ScriptedReply | Promise<ScriptedReply>);

const identity = (b: Buffer) => b;

export class FakeCsiDriver {
  readonly calls: RecordedCall[] = [];
  private readonly scripts = new Map<string, Script>();
  private server: grpc.Server | undefined;

  constructor(
    readonly socketPath: string,
    private readonly services: readonly ServiceName[] = ["Identity", "Node", "Controller"],
  ) {}

  /** Scripts the reply for one method path, e.g. `/csi.v1.Node/NodeStageVolume`. */
  script(path: string, reply: Script): this {
    this.scripts.set(path, reply);
    return this;
  }

  callsTo(path: string): RecordedCall[] {
    return this.calls.filter((c) => c.path === path);
  }

  async start(): Promise<this> {
    const server = new grpc.Server();
    for (const name of this.services) {
      const svc = SERVICES[name];
      const def: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
      const impl: grpc.UntypedServiceImplementation = {};
      for (const m of svc.methods) {
        const path = `/${svc.typeName}/${m.name}`;
        def[m.name] = {
          path,
          requestStream: false,
          responseStream: false,
          requestSerialize: identity,
          requestDeserialize: identity,
          responseSerialize: identity,
          responseDeserialize: identity,
        };
        impl[m.name] = (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
          this.handle(path, call, callback);
      }
      server.addService(def, impl);
    }
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix:${this.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
    );
    this.server = server;
    return this;
  }

  private handle(path: string, call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>): void {
    const deadline = call.getDeadline();
    const record: RecordedCall = {
      path,
      request: Buffer.from(call.request),
      metadata: Object.fromEntries(
        Object.keys(call.metadata.getMap()).map((k) => [k, call.metadata.get(k)]),
      ) as Record<string, Array<string | Buffer>>,
      deadline: deadline instanceof Date ? deadline.getTime() : deadline,
      receivedAt: Date.now(),
      cancelled: false,
    };
    this.calls.push(record);
    const script = this.scripts.get(path);
    call.on("cancelled", () => {
      record.cancelled = true;
    });
    const made = typeof script === "function" ? script(record.request) : (script ?? {});
    if (made instanceof Promise) void made.then((reply) => this.reply(record, call, callback, reply));
    else this.reply(record, call, callback, made);
  }

  private reply(record: RecordedCall, call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>, reply: ScriptedReply): void {
    const answer = () => {
      if (record.cancelled) return;
      if (reply.headers) call.sendMetadata(toMetadata(reply.headers));
      if (reply.error) {
        callback({ code: reply.error.code, details: reply.error.details, metadata: toMetadata(reply.error.metadata ?? {}) });
        return;
      }
      callback(null, Buffer.from(reply.message ?? new Uint8Array()), reply.trailers ? toMetadata(reply.trailers) : undefined);
    };
    if (reply.delayMs) setTimeout(answer, reply.delayMs);
    else answer();
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.forceShutdown();
  }
}

export function toMetadata(entries: Record<string, string | Buffer>): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(entries)) md.set(k, v);
  return md;
}

export interface CallResult {
  error?: grpc.ServiceError;
  response?: Buffer;
  headers?: grpc.Metadata;
  trailers?: grpc.Metadata;
}

/** One raw unary call with @grpc/grpc-js, as kubelet or a sidecar would make it. */
export function rawCall(
  client: grpc.Client,
  path: string,
  request: Uint8Array,
  opts: { metadata?: Record<string, string | Buffer>; deadline?: number } = {},
): Promise<CallResult> {
  return new Promise((resolve) => {
    const result: CallResult = {};
    const call = client.makeUnaryRequest(
      path,
      identity,
      identity,
      Buffer.from(request),
      toMetadata(opts.metadata ?? {}),
      opts.deadline !== undefined ? { deadline: opts.deadline } : {},
      (err, value) => {
        if (err) result.error = err;
        else result.response = value;
      },
    );
    call.on("metadata", (md) => (result.headers = md));
    call.on("status", (st) => {
      result.trailers = st.metadata;
      // The callback runs before 'status'; settle after both.
      setImmediate(() => resolve(result));
    });
  });
}

export function unixClient(socketPath: string): grpc.Client {
  return new grpc.Client(`unix:${socketPath}`, grpc.credentials.createInsecure());
}

/** How a faulty driver misbehaves on a call: resets the stream, never answers, or answers what is not gRPC. */
export type DriverFault = "reset" | "silent" | "garbage";

/**
 * A driver that fails below gRPC, where grpc-js's server cannot be made to:
 * a raw HTTP/2 server on the unix socket. Calls `faultFor` picks answer with
 * that fault; every other call (its Probe, GetPluginInfo) answers OK, so the
 * gateway's view of the driver stays up while its mount calls fail.
 *   reset:   RST_STREAM INTERNAL_ERROR, no status
 *   silent:  headers never sent; the stream stays open until the caller gives up
 *   garbage: HTTP 200 text/html with an HTML body and no trailers
 */
export class FaultyCsiDriver {
  readonly calls: Array<{ path: string; fault: DriverFault | undefined }> = [];
  private server: http2.Http2Server | undefined;
  private readonly open = new Set<http2.ServerHttp2Stream>();
  private readonly sessions = new Set<http2.ServerHttp2Session>();

  constructor(
    readonly socketPath: string,
    private readonly faultFor: (path: string, request: Buffer) => DriverFault | undefined,
    private readonly driverName = "probegate.test",
  ) {}

  async start(): Promise<this> {
    rmSync(this.socketPath, { force: true });
    const server = http2.createServer();
    server.on("stream", (stream, headers) => this.handle(stream, String(headers[":path"] ?? "")));
    server.on("session", (session) => {
      this.sessions.add(session);
      session.once("close", () => this.sessions.delete(session));
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.socketPath, () => resolve());
    });
    this.server = server;
    return this;
  }

  private handle(stream: http2.ServerHttp2Stream, path: string): void {
    this.open.add(stream);
    stream.once("close", () => this.open.delete(stream));
    stream.on("error", () => undefined);
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.once("end", () => {
      // One unary frame: 1 flag byte, 4 length bytes, the message.
      const request = Buffer.concat(chunks).subarray(5);
      let fault: DriverFault | undefined;
      try {
        fault = this.faultFor(path, request);
      } catch {
        fault = undefined;
      }
      this.calls.push({ path, fault });
      if (fault === "reset") stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      else if (fault === "garbage") {
        stream.respond({ ":status": 200, "content-type": "text/html" });
        stream.end("<html><body>502 Bad Gateway</body></html>");
      } else if (fault === undefined) this.answer(stream, path);
      // silent: nothing, ever.
    });
  }

  private answer(stream: http2.ServerHttp2Stream, path: string): void {
    const message =
      path === "/csi.v1.Identity/Probe"
        ? toBinary(ProbeResponseSchema, create(ProbeResponseSchema, { ready: true }))
        : path === "/csi.v1.Identity/GetPluginInfo"
          ? toBinary(GetPluginInfoResponseSchema, create(GetPluginInfoResponseSchema, { name: this.driverName, vendorVersion: "0.0.0" }))
          : new Uint8Array();
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(frame);
  }

  async stop(): Promise<void> {
    for (const s of this.open) s.close(http2.constants.NGHTTP2_CANCEL);
    // The gateway keeps its connection open: close() alone would wait for it.
    for (const s of this.sessions) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
