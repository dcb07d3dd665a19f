import type http2 from "node:http2";
import type net from "node:net";
import os from "node:os";
import type { EdgeLimits } from "./edge-limits.js";
import type { Edge } from "./edge.js";
import type { Listener } from "./stream-route.js";

/**
 * One accepted connection, whatever protocol it turns out to speak: what
 * admission, the idle sweep and shutdown need to know about it.
 */
export interface Conn {
  readonly socket: net.Socket;
  /** The remote address it is capped under; undefined for local peers (loopback, this node's own addresses, unix). */
  readonly address: string | undefined;
  /** Calls in progress on it (HTTP/2 streams admitted, the HTTP/1.1 request being served). */
  busy: number;
  /** When it last had nothing in progress (its accept time until its first request). */
  idleSince: number;
  /** No request has arrived yet: it gets the header timeout, not the idle timeout. */
  awaitingFirst: boolean;
  /** The peer half-closed: it is closed as soon as nothing is in progress. */
  peerEnded: boolean;
  /** Set once the table has asked it to go, so it is asked once (and evicted first). */
  expiring: boolean;
  /** How the protocol that took it closes it at its timeout (answer, GOAWAY); without one the socket is destroyed. */
  onTimeout?: (reason: "header_timeout" | "idle_timeout") => void;
  /** Called on each sweep while it is idle (HTTP/2's ping of a peer that went quiet after sending frames). */
  onIdleTick?: () => void;
  session?: http2.ServerHttp2Session;
}

/** The shortest an idle or header timeout is cut to when the table is nearly full. */
const FLOOR_MS = 1_000;

/**
 * The shortest the idle timeout of a connection that has made a request is
 * cut to. Closing a kept connection races with its client's next request
 * (HTTP/1.1 gets EPIPE, HTTP/2 a refused stream), and a flood is made of
 * connections that never ask anything: those go at the header timeout and
 * are evicted first, so kept clients polling every few seconds keep theirs.
 */
const KEPT_FLOOR_MS = 10_000;

/** Above this fill, idle and header timeouts shrink in proportion to the room left. */
const SHRINK_FROM = 0.5;

/**
 * Every connection of one listener. When it is full, a new connection is let
 * in by closing the one idle the longest (no call in progress, or none ever
 * made), as nginx and Envoy do under overload; only when every connection is
 * busy is the new one refused. A remote address holds at most a share of the
 * table (local peers are counted apart: kubelet reaches probegate over
 * loopback, and anyone on the node could spread over 127/8 anyway). Idle and
 * header timeouts shrink as the table fills, so connections that do nothing
 * make room by themselves before anyone has to be evicted.
 */
export class ConnectionTable {
  private readonly conns = new Map<net.Socket, Conn>();
  private readonly perAddress = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly tickMs: number;
  private localAddresses: Set<string> | undefined;
  private localAddressesAt = 0;

  constructor(
    private readonly limits: EdgeLimits,
    private readonly edge: Edge,
    private readonly listener: Listener,
  ) {
    const shortest = Math.min(limits.headerTimeoutMs, limits.idleTimeoutMs, FLOOR_MS);
    this.tickMs = Math.min(1000, Math.max(100, Math.floor(shortest / 4)));
  }

  get size(): number {
    return this.conns.size;
  }

  /** Admits a new socket (closing an idle one to make room), or destroys it and returns undefined. */
  accept(socket: net.Socket): Conn | undefined {
    const address = this.addressOf(socket);
    if (address !== undefined && (this.perAddress.get(address) ?? 0) >= this.limits.maxConnectionsPerAddress) {
      if (!this.evict(address)) return this.refuse(socket, "per_address");
    }
    if (this.conns.size >= this.limits.maxConnections && !this.evict(undefined)) return this.refuse(socket, "connections");
    const conn: Conn = { socket, address, busy: 0, idleSince: Date.now(), awaitingFirst: true, peerEnded: false, expiring: false };
    this.conns.set(socket, conn);
    if (address !== undefined) this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
    socket.once("close", () => this.remove(conn));
    socket.once("end", () => {
      conn.peerEnded = true;
      if (conn.busy === 0) socket.destroy();
    });
    this.arm();
    return conn;
  }

  /** The entry of an admitted socket. */
  get(socket: net.Socket): Conn | undefined {
    return this.conns.get(socket);
  }

  /** A call starts on the connection. */
  busy(conn: Conn): void {
    conn.busy++;
    conn.awaitingFirst = false;
  }

  /** A call on the connection ended. */
  done(conn: Conn): void {
    if (--conn.busy > 0) return;
    if (conn.peerEnded) {
      conn.socket.destroySoon();
      return;
    }
    conn.idleSince = Date.now();
  }

  /** The idle or header timeout for a connection now, shortened as the table fills. */
  timeoutMs(base: number, floor = FLOOR_MS): number {
    const fill = this.conns.size / this.limits.maxConnections;
    if (fill <= SHRINK_FROM) return base;
    return Math.max(Math.min(base, floor), Math.floor(base * (1 - fill) / (1 - SHRINK_FROM)));
  }

  /** Every connection, for shutdown. */
  all(): IterableIterator<Conn> {
    return this.conns.values();
  }

  /**
   * Waits until every connection is gone or the deadline passes, closing each
   * as soon as it has nothing in progress, then destroys the rest.
   */
  async drain(deadlineMs: number): Promise<void> {
    for (const c of this.conns.values()) c.session?.close();
    const start = Date.now();
    while (this.conns.size > 0 && Date.now() - start < deadlineMs) {
      for (const c of this.conns.values()) if (c.busy === 0 && !c.session) c.socket.destroy();
      await new Promise((r) => setTimeout(r, 20));
    }
    for (const c of [...this.conns.values()]) c.socket.destroy();
    this.stop();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private refuse(socket: net.Socket, reason: "connections" | "per_address"): undefined {
    this.edge.rejected(reason, { listener: this.listener });
    socket.destroy();
    return undefined;
  }

  /**
   * Closes an idle connection (of one address, or of all); false when none is
   * idle. Ones already asked to go come first, then ones that never sent a
   * request (what a flood is made of), then kept-alive ones: closing a kept
   * connection races with its client's next request, which then fails
   * ("socket hang up") instead of being answered. Within each, the one idle
   * the longest.
   */
  private evict(address: string | undefined): boolean {
    let victim: Conn | undefined;
    for (const c of this.conns.values()) {
      if (c.busy > 0 || (address !== undefined && c.address !== address)) continue;
      if (!victim || evictBefore(c, victim)) victim = c;
    }
    if (!victim) return false;
    this.edge.rejected("evicted", { listener: this.listener });
    this.remove(victim);
    victim.socket.destroy();
    return true;
  }

  private remove(conn: Conn): void {
    if (!this.conns.delete(conn.socket)) return;
    if (conn.address === undefined) return;
    const n = (this.perAddress.get(conn.address) ?? 1) - 1;
    if (n === 0) this.perAddress.delete(conn.address);
    else this.perAddress.set(conn.address, n);
  }

  private arm(): void {
    if (this.timer) return;
    // Judged after the loop's next poll, not in the timer phase: after a stall
    // a request already waiting unread would otherwise count as idleness.
    this.timer = setInterval(() => setImmediate(this.sweepNow), this.tickMs);
    this.timer.unref();
  }

  private readonly sweepNow = (): void => {
    if (this.timer) this.sweep();
  };

  private sweep(): void {
    if (this.conns.size === 0) {
      this.stop();
      return;
    }
    const now = Date.now();
    const header = this.timeoutMs(this.limits.headerTimeoutMs);
    const idle = this.timeoutMs(this.limits.idleTimeoutMs, KEPT_FLOOR_MS);
    for (const c of this.conns.values()) {
      if (c.busy > 0 || c.expiring) continue;
      if (now - c.idleSince < (c.awaitingFirst ? header : idle)) {
        c.onIdleTick?.();
        continue;
      }
      c.expiring = true;
      const reason = c.awaitingFirst ? "header_timeout" : "idle_timeout";
      if (c.onTimeout) c.onTimeout(reason);
      else {
        this.edge.rejected(reason, { listener: this.listener });
        c.socket.destroy();
      }
    }
  }

  /** The per-address key of a peer, or undefined when it is local (uncapped). */
  private addressOf(socket: net.Socket): string | undefined {
    let a = socket.remoteAddress;
    if (a === undefined) return undefined;
    if (a.startsWith("::ffff:")) a = a.slice(7);
    if (a === "::1" || a.startsWith("127.")) return undefined;
    const now = Date.now();
    // Interfaces come and go (a CNI adding one); re-read them at most once a minute.
    if (!this.localAddresses || now - this.localAddressesAt > 60_000) {
      this.localAddresses = new Set(Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address)));
      this.localAddressesAt = now;
    }
    return this.localAddresses.has(a) ? undefined : a;
  }
}

/** Eviction order: asked to go, then never used, then kept-alive; idle the longest first within each. */
function evictBefore(a: Conn, b: Conn): boolean {
  const rank = (c: Conn) => (c.expiring ? 0 : c.awaitingFirst ? 1 : 2);
  const ra = rank(a);
  const rb = rank(b);
  return ra !== rb ? ra < rb : a.idleSince < b.idleSince;
}
