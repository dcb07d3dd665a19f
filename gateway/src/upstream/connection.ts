import http2 from "node:http2";
import net from "node:net";
import type { Logger } from "../observability/logger.js";
import type { Endpoint } from "../transport/endpoint.js";

/**
 * One persistent HTTP/2 session to the upstream driver, shared by every
 * forwarded call and by upstream Probe. A session that fails, closes or gets
 * GOAWAY is dropped; the next request dials again. There is no backoff: a
 * local socket dial is cheap and the callers themselves are rate-limited
 * (Probe by its cache, the rest by the CO).
 */
export class UpstreamConnection {
  private session: http2.ClientHttp2Session | undefined;
  private closed = false;
  /** Set when a session has completed its HTTP/2 handshake at least once. */
  everConnected = false;
  connected = false;

  constructor(
    readonly endpoint: Endpoint,
    private readonly logger: Logger,
    private readonly onState: (connected: boolean) => void = () => {},
  ) {}

  get display(): string {
    return this.endpoint.display;
  }

  /** Opens a stream; throws when the gateway is shutting down. Errors surface on the stream. */
  request(headers: http2.OutgoingHttpHeaders): http2.ClientHttp2Stream {
    if (this.closed) throw new Error("gateway is shutting down");
    return this.current().request(headers, { endStream: false });
  }

  private current(): http2.ClientHttp2Session {
    const s = this.session;
    if (s && !s.closed && !s.destroyed) return s;
    return this.dial();
  }

  private dial(): http2.ClientHttp2Session {
    const ep = this.endpoint;
    const session =
      ep.kind === "unix"
        ? http2.connect("http://localhost", { createConnection: () => net.connect(ep.path) })
        : http2.connect(`http://${ep.host.includes(":") ? `[${ep.host}]` : ep.host}:${ep.port}`);
    this.session = session;
    // Idle sessions must not keep a stopping process alive.
    session.unref();
    const drop = () => {
      if (this.session === session) {
        this.session = undefined;
        this.setConnected(false);
      }
    };
    session.once("connect", () => {
      this.everConnected = true;
      this.setConnected(true);
    });
    session.on("error", (err) => {
      this.logger.debug({ err, upstream: this.display }, "upstream session error");
      drop();
    });
    session.once("goaway", drop);
    session.once("close", drop);
    return session;
  }

  private setConnected(v: boolean): void {
    if (this.connected === v) return;
    this.connected = v;
    this.onState(v);
  }

  async close(): Promise<void> {
    this.closed = true;
    const s = this.session;
    this.session = undefined;
    if (!s || s.destroyed) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        s.destroy();
        resolve();
      }, 1000);
      s.close(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }
}

/** The text callers see when the upstream cannot be reached. */
export function unavailableMessage(display: string, err: unknown): string {
  const e = err as (Error & { cause?: Error; code?: string }) | undefined;
  const detail = e?.cause?.message ?? e?.message ?? String(err);
  return `upstream CSI driver at ${display} is unavailable: ${detail}`;
}
