// The bounds the network edge enforces, and the names of its refusals.
// Defaults are sized for the heap cap the image sets (--max-old-space-size=48):
// see README "Limits" for the arithmetic.

export interface EdgeLimits {
  /** Open connections per listener; a new one over it closes the one idle the longest, or is refused when all are busy. */
  maxConnections: number;
  /** Open connections per listener from one remote address (loopback and this node's own addresses are not capped). */
  maxConnectionsPerAddress: number;
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; more streams are refused (REFUSED_STREAM). */
  maxStreamsPerConnection: number;
  /** Calls and HTTP requests in progress, both listeners together. */
  maxInflight: number;
  /** Open Health/Watch streams, both listeners together (they count as in-flight calls too). */
  maxWatches: number;
  /** A connection's first request (HTTP/1.1 headers, an HTTP/2 stream) must arrive within this from accept. */
  headerTimeoutMs: number;
  /** A request must arrive in full (headers, body, half-close) within this. */
  requestTimeoutMs: number;
  /** A connection with nothing in progress is closed after this long. */
  idleTimeoutMs: number;
}

export const DEFAULT_EDGE_LIMITS: EdgeLimits = {
  maxConnections: 256,
  maxConnectionsPerAddress: 64,
  maxStreamsPerConnection: 100,
  maxInflight: 256,
  maxWatches: 64,
  headerTimeoutMs: 10_000,
  requestTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
};

/**
 * How long a connection we asked to go away (GOAWAY, Connection: close) may
 * linger before its socket is destroyed, and how long an idle HTTP/2 peer has
 * to answer a PING. node:http2 never closes a socket after a connection error
 * on its own (nor says it sent GOAWAY), so without this every bad frame leaks a descriptor.
 */
export const GOAWAY_GRACE_MS = 2_000;

/** HTTP/1.1 requests a connection may pipeline ahead of the one being served. */
export const MAX_PIPELINED = 16;

/**
 * Values of probegate_edge_rejected_total{reason}. A list, not only a type, so
 * each series can start at 0: increase() and rate() then see a pod's first
 * rejection, and a dashboard shows the edge before anything was refused.
 * An oversized request gets its status only (README "Limits"); a session
 * that hits a protocol error is protocol_error where node:http2 ends it
 * (Node 24), goaway_grace where it only sends GOAWAY and waits (Node 20).
 */
export const EDGE_REJECTIONS = [
  "connections",
  "per_address",
  "evicted",
  "inflight",
  "watches",
  "header_timeout",
  "request_timeout",
  "idle_timeout",
  "goaway_grace",
  "protocol_error",
  "pipeline_depth",
  "bad_authority",
] as const;
export type EdgeRejection = (typeof EDGE_REJECTIONS)[number];
