// Shared plumbing for the peer servers: arguments, readiness line, clean exit
// (a clean exit lets `node --cpu-prof` write its profile).
import fs from "node:fs";
import { pathToFileURL } from "node:url";

export interface PeerOptions {
  /** Unix socket for gRPC (h2c). */
  socket?: string;
  /** TCP port for gRPC (h2c) on 127.0.0.1. */
  port?: number;
  /** TCP port for HTTP/1.1 (/healthz, Connect JSON Probe) on 127.0.0.1. */
  httpPort?: number;
}

export interface RunningPeer {
  close(): Promise<void>;
}

export function parsePeerArgs(argv: string[]): PeerOptions {
  const o: PeerOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    if (argv[i] === "--socket") (o.socket = v), i++;
    else if (argv[i] === "--port") (o.port = Number(v)), i++;
    else if (argv[i] === "--http-port") (o.httpPort = Number(v)), i++;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  return o;
}

export function removeStaleSocket(p: string): void {
  try {
    fs.unlinkSync(p);
  } catch {
    /* absent */
  }
}

/** Runs a peer as a process: prints READY when listening, exits cleanly on SIGTERM/SIGINT. */
export function runAsMain(metaUrl: string, start: (o: PeerOptions) => Promise<RunningPeer>): void {
  if (!process.argv[1] || pathToFileURL(process.argv[1]).href !== metaUrl) return;
  start(parsePeerArgs(process.argv.slice(2))).then(
    (peer) => {
      process.stdout.write("READY\n");
      const stop = () => {
        peer.close().finally(() => process.exit(0));
        setTimeout(() => process.exit(0), 1000).unref();
      };
      process.on("SIGTERM", stop);
      process.on("SIGINT", stop);
    },
    (err) => {
      process.stderr.write(`peer failed to start: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
}

export function listenPromise(server: { listen: (...a: any[]) => unknown; once: (e: string, f: (e: Error) => void) => unknown }, ...args: unknown[]): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(...args, () => resolve());
  });
}
