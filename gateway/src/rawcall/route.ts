// An RPC probegate answers from memory, as one value: its path, where it may
// be served, its request cap and its answer. The core serves it over gRPC on
// the raw stream (server.ts) and, from the same answer, over Connect and
// gRPC-Web (connect-twin.ts).
import type { DescMethodUnary } from "@bufbuild/protobuf";
import type { Code } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { StreamContext } from "../transport/stream-route.js";

/** A framed reply message (flag 0, length, message), or the status the call ends with. */
export type Reply = { readonly frame: Buffer } | { readonly code: Code; readonly message: string };

/** Counters a route may bump per call (pre-labelled, so the hot path hashes no labels). */
export interface RouteCounts {
  answered: { n: number };
  /** Handed to the route's Connect fallback. */
  fallback: { n: number };
}

export interface UnaryRoute {
  /** "/csi.v1.Node/NodeGetStorageHealth" */
  readonly path: string;
  /**
   * Set for a method the core also serves over Connect and gRPC-Web (its
   * twin is built from `answer`); unset when the Connect router already
   * serves it (then `fallback` is that handler).
   */
  readonly method?: DescMethodUnary;
  /** Served on the CSI endpoint only (a Node RPC), never on the network port. */
  readonly csiOnly: boolean;
  /** Largest request message, after decompression. */
  readonly maxBytes: number;
  /**
   * false while the call is someone else's (gateway mode: the driver's, and
   * the proxy after this route forwards it); `elsewhere` then says whose,
   * for protocols the other cannot speak.
   */
  takes?(): boolean;
  readonly elsewhere?: string;
  /**
   * When set, what the core does not answer itself (a compressed request, a
   * malformed deadline, a body over the cap or not one message, or an answer
   * of undefined) goes there with the bytes read, so Connect's semantics and
   * wording apply. Without it the core inflates gzip itself and refuses the rest.
   */
  readonly fallback?: UniversalHandler;
  /**
   * The answer to one request message. timeoutMs is the caller's deadline
   * (NaN when none). undefined: not answerable here (only with a fallback).
   * Must not throw; a rejected promise ends the call INTERNAL.
   */
  answer(request: Buffer, ctx: StreamContext, timeoutMs: number): Reply | Promise<Reply> | undefined;
  readonly counts?: RouteCounts;
}

/** What a finished unary call was, for whoever tracks calls (a forwarded mount call, a health answer). */
export interface CallRecord {
  /** "/csi.v1.Node/NodeUnpublishVolume" */
  path: string;
  /** The request message, when it was read whole (undefined past the decode cap or on a cut-off body). */
  request: Uint8Array | undefined;
  /** Final grpc-status; NaN when none could be told. */
  status: number;
  durationMs: number;
}

export type CallObserver = (call: CallRecord) => void;
