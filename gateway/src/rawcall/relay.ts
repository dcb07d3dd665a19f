// The raw-call core's relay: one unary gRPC call passed on to another server
// (gateway mode's driver) and its reply passed back, frame for frame, or read
// whole (reply.ts) and rewritten when the forwarder asks. The request's cap
// and copy (request.ts), the deadline, hop-by-hop headers, trailers, resets
// mapped to a status and the rule that a call ends with exactly one status
// live here; what is forwarded, when, and what a reply is rewritten to is the
// forwarder's (upstream/proxy.ts), through the hooks below.
import { Code } from "@connectrpc/connect";
import http2 from "node:http2";
import type { Logger } from "../observability/logger.js";
import { formatGrpcTimeout } from "../transport/grpc-timeout.js";
import { encodeFrame, GRPC_OK, respondTrailersOnly, statusOf, statusTrailers } from "../transport/grpc-wire.js";
import type { StreamOpener } from "./client.js";
import { closedWithoutStatus, replyBody } from "./reply.js";
import { RequestBody, requestEncoding, tooLargeMessage } from "./request.js";

const { NGHTTP2_CANCEL, NGHTTP2_FLAG_END_STREAM, NGHTTP2_NO_ERROR } = http2.constants;

/** Hop-by-hop and transport headers that must not cross the relay (grpc-timeout is set anew). */
const DROP_REQUEST = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "http2-settings", "grpc-timeout", "content-length"]);
const DROP_RESPONSE = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]);

function copyHeaders(src: http2.IncomingHttpHeaders, drop: Set<string>, keepStatus: boolean): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const key of Object.keys(src)) {
    if (key.startsWith(":") ? !(keepStatus && key === ":status") : drop.has(key)) continue;
    out[key] = src[key];
  }
  return out;
}

/** What every call a forwarder relays shares: one per forwarder, not per call. */
export interface RelayConfig {
  opener: StreamOpener;
  logger: Logger;
  /** Largest request message relayed; a larger one ends the call RESOURCE_EXHAUSTED. */
  maxRequestBytes: number;
  /** How callers are told the limit is set (" (--max-request-bytes)"). */
  limitName: string;
  /**
   * Requests are kept for requestMessage() up to this size only: decoding is
   * what turns a hostile message into many objects. Larger ones are relayed,
   * not looked into.
   */
  keepRequestBytes: number;
  /** The text callers see when the callee cannot be reached (names it). */
  unavailable(err: unknown): string;
}

/** One relayed call, from the caller's stream arriving to its one final status. */
export abstract class UnaryRelay {
  private up: http2.ClientHttp2Stream | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The final status is known and was handed to ended(). */
  protected finished = false;
  /** A status is on its way in trailers; later failures must not replace it. */
  private ending = false;
  /** The status to send when the caller's stream asks for trailers. */
  private trailers: http2.OutgoingHttpHeaders | undefined;
  /** The request's DATA frames, counted against the cap; kept only when the forwarder asked. */
  private body: RequestBody | undefined;

  constructor(
    protected readonly relay: RelayConfig,
    protected readonly stream: http2.ServerHttp2Stream,
    protected readonly headers: http2.IncomingHttpHeaders,
    protected readonly path: string,
    /** Names the call in logs (its method). */
    private readonly label: string,
  ) {}

  /** The call's final status (NaN when none could be told); called exactly once. */
  protected abstract ended(code: number): void;

  /**
   * The new message for an OK reply read whole (only with `rewrite`), or
   * undefined to relay it unchanged. A throw relays it unchanged too.
   */
  protected rewriteReply(_message: Buffer): Uint8Array | undefined {
    return undefined;
  }

  /** The caller's request has been read to its end (and relayed). */
  protected requestRead(): void {}

  /** Watches the caller's stream: gone before the end (cancelled, deadline, connection lost) cancels the callee's work too. */
  protected watchCaller(): void {
    const { stream } = this;
    stream.on("error", (err) => this.relay.logger.debug({ err, method: this.label }, "caller stream error"));
    stream.once("close", () => {
      if (this.finished) return;
      this.up?.close(NGHTTP2_CANCEL);
      this.finish(Code.Canceled);
    });
  }

  /**
   * Opens the callee's stream with the caller's headers and the given
   * deadline, and pipes the request (which resumes a paused caller stream).
   * `rewrite`: the reply is asked for uncompressed and read whole for
   * rewriteReply(); `keepRequest`: the request is kept for requestMessage().
   */
  protected forward(timeoutMs: number, rewrite: boolean, keepRequest: boolean): void {
    const { relay, stream } = this;
    const out: http2.OutgoingHttpHeaders = {
      ":method": "POST",
      ":scheme": "http",
      ":path": this.path,
      ":authority": typeof this.headers[":authority"] === "string" ? this.headers[":authority"] : "localhost",
      ...copyHeaders(this.headers, DROP_REQUEST, false),
      "grpc-timeout": formatGrpcTimeout(timeoutMs),
    };
    if (rewrite) out["grpc-accept-encoding"] = "identity";

    let up: http2.ClientHttp2Stream;
    try {
      up = relay.opener.request(out);
    } catch (err) {
      this.fail(Code.Unavailable, relay.unavailable(err));
      return;
    }
    this.up = up;
    this.timer = setTimeout(() => {
      up.close(NGHTTP2_CANCEL);
      this.fail(Code.DeadlineExceeded, `upstream did not answer within ${timeoutMs} ms`);
    }, timeoutMs);

    // Unary: the body is one frame header and the message.
    const body = (this.body = new RequestBody(relay.maxRequestBytes, relay.keepRequestBytes));
    if (!keepRequest) body.chunks = undefined;
    stream.on("data", (chunk: Buffer) => {
      if (body.add(chunk)) return;
      body.chunks = undefined;
      stream.unpipe(up);
      this.fail(Code.ResourceExhausted, tooLargeMessage(relay.maxRequestBytes, relay.limitName));
      // The rest of the body is not wanted: RST_STREAM(NO_ERROR) after the status, as gRPC servers do.
      if (!stream.destroyed) stream.close(NGHTTP2_NO_ERROR);
    });
    stream.once("end", () => this.requestRead());
    stream.pipe(up);

    up.once("response", (h, flags) => this.onResponse(up, h, flags, rewrite));
    up.once("trailers", (t) => {
      if (!this.trailers) this.trailers = copyHeaders(t, DROP_RESPONSE, false);
    });
    up.on("error", (err) => {
      relay.logger.debug({ err, method: this.label }, "upstream stream error");
      this.fail(Code.Unavailable, relay.unavailable(err));
    });
    up.once("close", () => {
      // Normal completion: trailers arrived (or the call already ended).
      if (this.finished || this.trailers) return;
      const closed = closedWithoutStatus(up.rstCode);
      if (closed.reached) this.fail(closed.code, closed.detail);
      else this.fail(Code.Unavailable, relay.unavailable(new Error(closed.detail)));
    });
  }

  /** The request message, when it was kept and is one (gzip inflated within the keep cap). */
  protected requestMessage(): Buffer | undefined {
    return this.body?.message(requestEncoding(this.headers) ?? "identity");
  }

  private onResponse(up: http2.ClientHttp2Stream, h: http2.IncomingHttpHeaders, flags: number, rewrite: boolean): void {
    if (this.finished) return;
    const headers = copyHeaders(h, DROP_RESPONSE, true);
    if (flags & NGHTTP2_FLAG_END_STREAM) {
      // Trailers-only reply (how gRPC sends most errors): relay in one HEADERS frame.
      this.stream.respond(headers, { endStream: true });
      this.finish(statusOf(h));
      return;
    }
    if (rewrite) {
      this.readWhole(up, headers);
      return;
    }
    this.respondStreaming(headers);
    up.pipe(this.stream);
  }

  private respondStreaming(headers: http2.OutgoingHttpHeaders): void {
    const { stream } = this;
    stream.respond(headers, { waitForTrailers: true });
    stream.once("wantTrailers", () => {
      const t = this.trailers ?? statusTrailers(Code.Internal, "upstream ended the call without a status");
      stream.sendTrailers(t);
      this.finish(Number(t["grpc-status"]));
    });
  }

  private readWhole(up: http2.ClientHttp2Stream, headers: http2.OutgoingHttpHeaders): void {
    const body = replyBody();
    const onData = (c: Buffer) => {
      if (body.add(c)) return;
      // Too big to be a reply we understand: relay it untouched (every chunk so far is kept).
      up.removeListener("data", onData);
      up.removeListener("end", onEnd);
      this.respondStreaming(headers);
      for (const b of body.chunks ?? []) this.stream.write(b);
      body.chunks = undefined;
      up.pipe(this.stream);
    };
    const onEnd = () => {
      if (!this.finished) this.sendRewritten(headers, body);
    };
    up.on("data", onData);
    up.once("end", onEnd);
  }

  private sendRewritten(headers: http2.OutgoingHttpHeaders, body: RequestBody): void {
    const bytes = body.bytes() ?? Buffer.alloc(0);
    let out: Uint8Array = bytes;
    const message = statusOf(this.trailers as http2.IncomingHttpHeaders) === GRPC_OK ? body.message("identity") : undefined;
    if (message) {
      try {
        const rewritten = this.rewriteReply(message);
        if (rewritten) out = encodeFrame(rewritten);
      } catch (err) {
        this.relay.logger.warn({ err, method: this.label }, "could not rewrite upstream reply; relaying it unchanged");
      }
    }
    if (this.finished || this.stream.destroyed) return;
    delete headers["content-length"];
    this.respondStreaming(headers);
    this.stream.end(out);
  }

  /** Ends the call with a status, however far the reply has got. */
  protected fail(code: Code, message: string): void {
    if (this.finished || this.ending) return;
    const { stream, up } = this;
    if (up) {
      up.unpipe(stream);
      if (!up.closed) up.close(NGHTTP2_CANCEL);
    }
    if (!stream.headersSent) {
      respondTrailersOnly(stream, code, message);
      this.finish(code);
      return;
    }
    // Headers are out and respondStreaming waits for trailers: they carry the status.
    this.ending = true;
    this.trailers = statusTrailers(code, message);
    if (!stream.writableEnded) stream.end();
  }

  private finish(code: number): void {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    this.ended(code);
  }
}
