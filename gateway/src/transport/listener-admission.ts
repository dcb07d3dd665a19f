import type net from "node:net";
import { callClass, type CallClass } from "./admission.js";
import { ConnectionTable, type Conn } from "./connection-table.js";
import { validAuthority } from "./authority.js";
import { badAuthority, tooBusy, type EdgeStatus } from "./edge-answer.js";
import type { EdgeLimits, EdgeRejection } from "./edge-limits.js";
import type { Edge } from "./edge.js";
import { requestPath } from "./request-path.js";
import type { Listener } from "./stream-route.js";

/** A request let in: hand it back to release() when the call ends. */
export interface Ticket {
  readonly admitted: true;
  readonly cls: CallClass;
}

/** A request turned away, with the answer it gets (in the client's protocol, see edge-answer). */
export interface AdmissionRefusal {
  readonly admitted: false;
  readonly reason: EdgeRejection;
  readonly answer: EdgeStatus;
  /** HTTP/1.1: whether the connection must close after the answer (it cannot be trusted to frame the next request). */
  readonly closeConnection: boolean;
}

// One of each, made once: Probe's fast path is admitted here and allocates nothing for it.
const TICKETS: Record<CallClass, Ticket> = {
  probe: Object.freeze({ admitted: true, cls: "probe" }),
  watch: Object.freeze({ admitted: true, cls: "watch" }),
  other: Object.freeze({ admitted: true, cls: "other" }),
};
const BAD_AUTHORITY: AdmissionRefusal = Object.freeze({ admitted: false, reason: "bad_authority", answer: badAuthority(), closeConnection: true });
const TOO_MANY_CALLS: AdmissionRefusal = Object.freeze({ admitted: false, reason: "inflight", answer: tooBusy("too many calls in progress"), closeConnection: false });
const TOO_MANY_WATCHES: AdmissionRefusal = Object.freeze({ admitted: false, reason: "watches", answer: tooBusy("too many Watch streams"), closeConnection: false });

/**
 * The edge's admission for one listener, for both HTTP versions: connections
 * through its connection table (accept), requests through admit(), which
 * checks in one order:
 *
 * 1. the authority (Host / :authority) is well formed, else 400 /
 *    INVALID_ARGUMENT, and the connection closes (HTTP/1.1);
 * 2. the call fits the shared in-flight and Watch caps, else 503 /
 *    RESOURCE_EXHAUSTED with Retry-After.
 *
 * The malformed request is refused first because it can never succeed: it
 * should neither hold an in-flight slot (not even while its 400 is written)
 * nor be told "busy, retry later" and come back.
 */
export class ListenerAdmission {
  readonly table: ConnectionTable;
  readonly limits: EdgeLimits;

  constructor(
    private readonly edge: Edge,
    readonly listener: Listener,
  ) {
    this.limits = edge.limits;
    this.table = new ConnectionTable(edge.limits, edge, listener);
  }

  /** A new connection: its entry, or undefined when it was refused (and closed). */
  accept(socket: net.Socket): Conn | undefined {
    return this.table.accept(socket);
  }

  /**
   * A request for a path (its target as sent, query included) with the
   * authority it names (undefined when none: the caller uses DEFAULT_AUTHORITY).
   * Refusals are counted and logged here.
   */
  admit(target: string | undefined, authority: unknown): Ticket | AdmissionRefusal {
    if (authority !== undefined && (typeof authority !== "string" || !validAuthority(authority))) {
      this.edge.rejected("bad_authority", { listener: this.listener });
      return BAD_AUTHORITY;
    }
    const path = typeof target === "string" ? requestPath(target) : undefined;
    const cls = path === undefined ? "other" : callClass(path);
    const reason = this.edge.admission.enter(cls);
    if (reason === undefined) return TICKETS[cls];
    this.edge.rejected(reason, { listener: this.listener, path });
    return reason === "watches" ? TOO_MANY_WATCHES : TOO_MANY_CALLS;
  }

  /** The call a ticket admitted has ended. */
  release(ticket: Ticket): void {
    this.edge.admission.leave(ticket.cls);
  }

  /** Counts (and, rate-limited, logs) a refusal on this listener that is not admission's (timeouts, pipelining). */
  rejected(reason: EdgeRejection): void {
    this.edge.rejected(reason, { listener: this.listener });
  }

  stop(): void {
    this.table.stop();
  }
}
