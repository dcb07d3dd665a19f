import type net from "node:net";

/** The fixed client connection preface every HTTP/2 connection starts with (RFC 9113 §3.4). */
export const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export type SniffedProtocol = "h2c" | "http1";

/**
 * Reads a new connection's first bytes to tell h2c prior-knowledge from HTTP/1.x,
 * waiting for more bytes while they still match a prefix of the preface (slow
 * clients may send it in pieces), then hands the socket over with every byte it
 * read pushed back, so the chosen server sees the stream from its start.
 * The socket is left paused for HTTP/2: Node's session replays buffered bytes on
 * the next tick, and resuming first would lose them.
 * A connection that never sends enough to tell is the connection table's to
 * close (header timeout, or eviction when the table is full).
 */
export function sniffConnection(socket: net.Socket, onProtocol: (proto: SniffedProtocol, socket: net.Socket) => void): void {
  let buffered: Buffer = Buffer.alloc(0);
  const cleanup = () => {
    socket.removeListener("data", onData);
    socket.removeListener("error", onError);
    socket.removeListener("close", onClose);
  };
  const onError = () => cleanup();
  const onClose = () => cleanup();
  const onData = (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    const n = Math.min(buffered.length, H2_PREFACE.length);
    const matches = buffered.compare(H2_PREFACE, 0, n, 0, n) === 0;
    if (matches && buffered.length < H2_PREFACE.length) return;
    cleanup();
    socket.pause();
    socket.unshift(buffered);
    const proto: SniffedProtocol = matches ? "h2c" : "http1";
    onProtocol(proto, socket);
    if (proto === "http1") socket.resume();
  };
  socket.on("data", onData);
  socket.on("error", onError);
  socket.on("close", onClose);
}
