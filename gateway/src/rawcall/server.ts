// The raw-call core's server: reads a unary gRPC call off the raw HTTP/2
// stream (DATA frames under a cap, grpc-timeout, grpc-encoding identity or
// gzip, exactly one message), has its route answer it, and writes the reply,
// trailers and errors. Nothing per call but one state object and its chunk
// list: Probe's fast path runs here.
import { Code } from "@connectrpc/connect";
import type { IncomingHttpHeaders, OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { Logger } from "../observability/logger.js";
import { echo } from "../support/echo.js";
import { GRPC_OK, respondTrailersOnly, statusTrailers } from "../transport/grpc-wire.js";
import { resetUnreadRequest, type StreamContext, type StreamRoute } from "../transport/stream-route.js";
import { viaConnect, type ConnectInvoker } from "./connect-fallback.js";
import { ACCEPTED_ENCODINGS, callerTimeoutMs, isGrpcCall, MALFORMED_TIMEOUT, RequestBody, requestEncoding, tooLargeMessage, type RequestEncoding } from "./request.js";
import type { CallObserver, Reply, UnaryRoute } from "./route.js";

export interface UnaryServerOptions {
  logger: Logger;
  /** Needed when a route has a fallback. */
  connect?: ConnectInvoker;
  /** Response encodings to name in grpc-encoding, first the client accepts (as Connect negotiates); none: no header. */
  negotiate?: ReadonlySet<string>;
  /** Told of every call the core ends (not of those handed to Connect). */
  observe?: CallObserver;
}

/** The raw stream route serving a set of unary routes; `routes` lets the Connect side build their twins. */
export type UnaryServer = StreamRoute & { readonly routes: readonly UnaryRoute[] };

const OK_TRAILERS: OutgoingHttpHeaders = { "grpc-status": String(GRPC_OK) };
const RESPOND = { waitForTrailers: true } as const;
/** Shared listeners, so an ordinary answer allocates no closures for them. */
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}
function ignore(): void {}

/** One call in progress: its request body, and what the answer needs. */
class PendingCall extends RequestBody {
  /** Read only when someone observes calls: no clock read per Probe otherwise. */
  readonly t0: number;
  constructor(
    readonly server: Served,
    readonly route: UnaryRoute,
    readonly headers: IncomingHttpHeaders,
    readonly ctx: StreamContext,
    readonly encoding: RequestEncoding,
    readonly timeoutMs: number,
  ) {
    super(route.maxBytes);
    this.t0 = server.observing ? performance.now() : 0;
  }
}

const PENDING = Symbol("probegate.pendingCall");
type CallStream = ServerHttp2Stream & { [PENDING]?: PendingCall };

function onData(this: CallStream, chunk: Buffer): void {
  const call = this[PENDING]!;
  if (!call.add(chunk)) call.server.tooLarge(this, call);
}
function onEnd(this: CallStream): void {
  const call = this[PENDING]!;
  call.server.ended(this, call);
}

/** Connect's rule, kept by the fast path: the first encoding the client accepts that the server supports. */
function responseEncoding(accept: string | string[] | undefined, supported: ReadonlySet<string>): string | undefined {
  if (accept === undefined || accept === "") return undefined;
  for (const name of String(accept).split(",")) {
    const n = name.trim();
    if (supported.has(n)) return n;
  }
  return undefined;
}

/** Ends a call the core refuses before any answer: trailers-only, the rest of the request unread. */
export function refuse(stream: ServerHttp2Stream, code: Code, message: string): void {
  if (respondTrailersOnly(stream, code, message)) resetUnreadRequest(stream);
}

class Served {
  readonly observing: boolean;
  constructor(private readonly opts: UnaryServerOptions) {
    this.observing = opts.observe !== undefined;
  }

  handOver(stream: CallStream, call: PendingCall, read: Buffer[], rest: AsyncIterable<Buffer> | undefined): void {
    call.route.counts && call.route.counts.fallback.n++;
    viaConnect(this.opts.connect!, this.opts.logger, stream, call.headers, call.route.fallback!, read, rest, call.ctx);
  }

  tooLarge(stream: CallStream, call: PendingCall): void {
    stream.removeListener("data", onData);
    stream.removeListener("end", onEnd);
    if (call.route.fallback) {
      // Connect enforces its limit in its own words.
      stream.pause();
      this.handOver(stream, call, call.chunks ?? [], stream);
      return;
    }
    call.chunks = undefined;
    this.end(call, undefined, Code.ResourceExhausted);
    refuse(stream, Code.ResourceExhausted, tooLargeMessage(call.route.maxBytes));
  }

  ended(stream: CallStream, call: PendingCall): void {
    if (stream.destroyed) return;
    const { route } = call;
    const message = call.message(call.encoding);
    if (message === undefined) {
      if (route.fallback) return this.handOver(stream, call, call.chunks ?? [], undefined);
      this.end(call, undefined, Code.InvalidArgument);
      return refuse(stream, Code.InvalidArgument, "request is not one gRPC message");
    }
    const reply = route.answer(message, call.ctx, call.timeoutMs);
    if (reply === undefined) return this.handOver(stream, call, call.chunks ?? [], undefined);
    route.counts && route.counts.answered.n++;
    if (!(reply instanceof Promise)) return this.reply(stream, call, message, reply);
    reply.then(
      (r) => this.reply(stream, call, message, r),
      (err) => {
        this.opts.logger.warn({ err, path: route.path }, "answer failed");
        this.end(call, message, Code.Internal);
        refuse(stream, Code.Internal, "answer failed");
      },
    );
  }

  private reply(stream: ServerHttp2Stream, call: PendingCall, message: Buffer, reply: Reply): void {
    const ok = "frame" in reply;
    this.end(call, message, ok ? GRPC_OK : reply.code);
    if (stream.destroyed || stream.headersSent) return;
    const headers: OutgoingHttpHeaders = { ":status": 200, "content-type": "application/grpc+proto" };
    const encoding = this.opts.negotiate && responseEncoding(call.headers["grpc-accept-encoding"], this.opts.negotiate);
    if (encoding) headers["grpc-encoding"] = encoding;
    stream.respond(headers, RESPOND);
    if (ok) {
      stream.once("wantTrailers", sendOkTrailers);
      stream.end(reply.frame);
    } else {
      const trailers = statusTrailers(reply.code, reply.message);
      stream.once("wantTrailers", () => stream.sendTrailers(trailers));
      stream.end();
    }
  }

  /** The call's last word, for an observer. */
  private end(call: PendingCall, request: Buffer | undefined, status: number): void {
    const observe = this.opts.observe;
    if (observe) observe({ path: call.route.path, request, status, durationMs: performance.now() - call.t0 });
  }

  take(stream: CallStream, headers: IncomingHttpHeaders, ctx: StreamContext, route: UnaryRoute): boolean {
    if (route.csiOnly && ctx.surface !== "csi") return false;
    if (!isGrpcCall(headers)) return false;
    if (route.takes && !route.takes()) return false;
    const encoding = requestEncoding(headers);
    const timeoutMs = callerTimeoutMs(headers);
    if (encoding !== "identity" || timeoutMs === MALFORMED_TIMEOUT) {
      // Connect's when it serves the method: it answers a compressed request in kind, and refuses in its own words.
      if (route.fallback) return false;
      if (encoding === undefined) {
        stream.on("error", ignore);
        stream.respond(
          {
            ":status": 200,
            "content-type": "application/grpc",
            "grpc-accept-encoding": ACCEPTED_ENCODINGS,
            ...statusTrailers(Code.Unimplemented, `grpc-encoding ${echo(String(headers["grpc-encoding"]))} is not supported`),
          },
          { endStream: true },
        );
        resetUnreadRequest(stream);
        return true;
      }
    }
    stream.on("error", ignore);
    stream[PENDING] = new PendingCall(this, route, headers, ctx, encoding ?? "identity", timeoutMs === MALFORMED_TIMEOUT ? Number.NaN : timeoutMs);
    stream.on("data", onData);
    stream.once("end", onEnd);
    return true;
  }
}

/** Serves `routes` on the raw stream; a call for any other path, or not gRPC, is left to the next route. */
export function serveUnary(routes: readonly UnaryRoute[], opts: UnaryServerOptions): UnaryServer {
  const byPath = new Map(routes.map((r) => [r.path, r]));
  for (const r of routes) if (r.fallback && !opts.connect) throw new Error(`${r.path}: a fallback needs opts.connect`);
  const served = new Served(opts);
  const route: StreamRoute = (stream, headers, ctx) => {
    const r = byPath.get(headers[":path"] as string);
    return r !== undefined && served.take(stream as CallStream, headers, ctx, r);
  };
  return Object.assign(route, { routes });
}
