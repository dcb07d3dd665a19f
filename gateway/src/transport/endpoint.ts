import net from "node:net";
import path from "node:path";

export type Endpoint =
  | { kind: "unix"; path: string; display: string }
  | { kind: "tcp"; host: string; port: number; display: string };

export class EndpointError extends Error {}

/**
 * Parses the CSI convention: `unix:///abs/path.sock`, `unix://rel/path.sock`
 * (relative to cwd, as csi-lib-utils treats it), `unix:/abs`, or `tcp://host:port`.
 * A bare `host:port` (or `:port`) is accepted for TCP, as --http-endpoint uses it,
 * and so is an unbracketed IPv6 address followed by its port.
 */
export function parseEndpoint(raw: string, cwd = process.cwd()): Endpoint {
  const value = raw.trim();
  if (value === "") throw new EndpointError("endpoint is empty");
  if (value.startsWith("unix:")) {
    let p = value.slice("unix:".length);
    if (p.startsWith("//")) p = p.slice(2);
    if (p === "") throw new EndpointError(`${raw}: unix endpoint needs a socket path`);
    const abs = path.isAbsolute(p) ? p : path.resolve(cwd, p);
    return { kind: "unix", path: abs, display: `unix://${abs}` };
  }
  let hostPort = value;
  if (value.startsWith("tcp://")) hostPort = value.slice("tcp://".length);
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    throw new EndpointError(`${raw}: unsupported scheme (use unix:// or tcp://)`);
  }
  hostPort = hostPort.replace(/\/+$/, "");
  // A bare IPv6 address before the port, as the downward API writes status.podIP: fd00::1:8080.
  const bare = /^([0-9a-fA-F:.]+):(\d{1,5})$/.exec(hostPort);
  if (bare && net.isIPv6(bare[1])) hostPort = `[${bare[1]}]:${bare[2]}`;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]\/]*)):(\d{1,5})$/.exec(hostPort);
  if (!m) throw new EndpointError(`${raw}: expected HOST:PORT`);
  const port = Number(m[3]);
  if (port > 65535) throw new EndpointError(`${raw}: port ${port} is out of range`);
  const host = m[1] ?? (m[2] === "" ? "0.0.0.0" : m[2]);
  const display = `tcp://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return { kind: "tcp", host, port, display };
}

/**
 * True when a TCP endpoint can only be reached from this host: 127.0.0.0/8,
 * ::1 (also as an IPv4-mapped ::ffff:127.x address) or the name localhost.
 */
export function isLoopback(ep: Endpoint): boolean {
  if (ep.kind !== "tcp") return false;
  const host = ep.host.toLowerCase();
  if (host === "localhost" || host === "::1" || host === "0:0:0:0:0:0:0:1") return true;
  const v4 = host.startsWith("::ffff:") ? host.slice("::ffff:".length) : host;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}
