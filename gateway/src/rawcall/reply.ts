// The response side of a unary gRPC call probegate makes or relays: its one
// reply message, read under a cap with the same framing as a request's, and
// the status a reply's stream means when it closed without one. Used by the
// core's client (probegate's own calls) and its relay (forwarded calls).
import { Code } from "@connectrpc/connect";
import { statusForRstCode } from "../transport/grpc-wire.js";
import { RequestBody } from "./request.js";

/**
 * The largest reply read whole (probegate's own calls, and replies a relay
 * rewrites). CSI replies are a few hundred bytes; a driver answering more is
 * not one to buffer for.
 */
export const MAX_REPLY_BYTES = 4 * 1024 * 1024;

/**
 * A reply's DATA frames, counted against MAX_REPLY_BYTES and kept whole under
 * it: the request's accounting, so a reply is unframed by the same code
 * (`message("identity")`: replies are asked for uncompressed). A RequestBody
 * itself, not a subclass: a third shape through RequestBody.add would make
 * its property accesses, which Probe's fast path runs, more polymorphic.
 */
export function replyBody(): RequestBody {
  return new RequestBody(MAX_REPLY_BYTES);
}

/** The refusal of a reply that outgrew MAX_REPLY_BYTES (as grpc-js ends a call whose reply is over its receive limit). */
export const REPLY_TOO_LARGE = `reply message is larger than ${MAX_REPLY_BYTES} bytes`;

/**
 * What a callee's stream that closed without a grpc-status means, mapped as a
 * gRPC client maps it: not reached when the callee refused the stream or the
 * session went away under it (no reset code), else the reset's status.
 */
export type Closed = { readonly reached: false; readonly detail: string } | { readonly reached: true; readonly code: Code; readonly detail: string };

export function closedWithoutStatus(rstCode: number | undefined): Closed {
  if (rstCode === undefined) return { reached: false, detail: "stream closed without a status" };
  const code = statusForRstCode(rstCode);
  if (code === Code.Unavailable) return { reached: false, detail: "stream refused" };
  return { reached: true, code, detail: `upstream reset the stream (HTTP/2 error ${rstCode})` };
}
