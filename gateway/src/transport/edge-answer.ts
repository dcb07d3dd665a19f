import { Code } from "@connectrpc/connect";
import type http from "node:http";
import http2 from "node:http2";
import { trailersOnlyHeaders } from "./grpc-wire.js";

/** An answer the edge gives by itself, in whichever protocol the client speaks. */
export interface EdgeStatus {
  /** gRPC status (gRPC and gRPC-Web). */
  grpc: Code;
  /** Connect error code name; its HTTP status follows the Connect protocol. */
  connect: "resource_exhausted" | "deadline_exceeded" | "invalid_argument";
  /** HTTP status for plain HTTP requests (/metrics, /healthz, ...). */
  http: number;
  message: string;
}

const CONNECT_HTTP: Record<EdgeStatus["connect"], number> = {
  resource_exhausted: 429,
  deadline_exceeded: 504,
  invalid_argument: 400,
};

export const tooBusy = (what: string): EdgeStatus => ({
  grpc: Code.ResourceExhausted,
  connect: "resource_exhausted",
  http: 503,
  message: `server busy: ${what}; retry later`,
});
export const requestTimedOut = (ms: number): EdgeStatus => ({
  grpc: Code.DeadlineExceeded,
  connect: "deadline_exceeded",
  http: 408,
  message: `request not received in full within ${ms} ms`,
});
export const badAuthority = (): EdgeStatus => ({
  grpc: Code.InvalidArgument,
  connect: "invalid_argument",
  http: 400,
  message: "invalid :authority or Host header",
});

type Protocol = "grpc" | "grpc-web" | "connect" | "http";

function protocolOf(contentType: string | string[] | undefined): Protocol {
  const ct = typeof contentType === "string" ? contentType : "";
  if (ct.startsWith("application/grpc-web")) return "grpc-web";
  if (ct.startsWith("application/grpc")) return "grpc";
  if (/^application\/(connect\+)?(proto|json)/.test(ct)) return "connect";
  return "http";
}

/** Header block and body for an edge answer; one place for both HTTP versions. */
function render(
  contentType: string | string[] | undefined,
  s: EdgeStatus,
): { status: number; headers: Record<string, string>; body: string | undefined; trailersOnly: boolean } {
  const proto = protocolOf(contentType);
  if (proto === "grpc" || proto === "grpc-web") {
    const ct = String(contentType).split(";")[0];
    return {
      status: 200,
      headers: trailersOnlyHeaders(ct, s.grpc, s.message),
      body: undefined,
      trailersOnly: true,
    };
  }
  if (proto === "connect") {
    return {
      status: CONNECT_HTTP[s.connect],
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ code: s.connect, message: s.message }),
      trailersOnly: false,
    };
  }
  return { status: s.http, headers: { "content-type": "text/plain; charset=utf-8" }, body: s.message + "\n", trailersOnly: false };
}

/**
 * Answers a raw HTTP/2 stream and ends it; the request body is not read. A
 * request still open is then reset with NO_ERROR (RFC 9113 §8.1): a refused
 * stream the client never half-closes would otherwise stay open, uncounted.
 */
export function answerStream(stream: http2.ServerHttp2Stream, contentType: string | string[] | undefined, s: EdgeStatus): void {
  if (stream.destroyed || stream.headersSent) return;
  const r = render(contentType, s);
  stream.respond({ ":status": r.status, ...r.headers }, { endStream: r.body === undefined });
  if (r.body !== undefined) stream.end(r.body);
  if (!stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
}

/** Answers an HTTP/1.1 (or HTTP/2 compat) request and asks the client to close when told to. */
export function answerResponse(
  res: http.ServerResponse | http2.Http2ServerResponse,
  contentType: string | string[] | undefined,
  s: EdgeStatus,
  close: boolean,
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const r = render(contentType, s);
  const headers: Record<string, string | number> = { ...r.headers, "content-length": Buffer.byteLength(r.body ?? "") };
  // Connection is an HTTP/1.1 header; node:http2 refuses it.
  if (close && (res as http.ServerResponse).shouldKeepAlive !== undefined) headers.connection = "close";
  if (s.grpc === Code.ResourceExhausted && r.status !== 200) headers["retry-after"] = 1;
  res.writeHead(r.status, headers);
  if (r.body === undefined) res.end();
  else res.end(r.body);
}
