import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";

export class SocketInUseError extends Error {}

/** True when something accepts connections on the socket path. */
function isLive(socketPath: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(socketPath);
    const done = (live: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(live);
    };
    // A listener that never accepts is still a live owner; don't steal its path.
    const timer = setTimeout(() => done(true), timeoutMs);
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

/**
 * Makes a unix socket path ready to listen on: creates the parent directory,
 * removes a stale socket left by a crashed predecessor, and refuses when a live
 * process serves on it or the path is something other than a socket.
 */
export async function prepareSocketPath(socketPath: string): Promise<void> {
  await fs.mkdir(path.dirname(socketPath), { recursive: true });
  let st;
  try {
    st = await fs.lstat(socketPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  if (!st.isSocket()) {
    throw new SocketInUseError(`${socketPath} exists and is not a socket; refusing to replace it`);
  }
  if (await isLive(socketPath)) {
    throw new SocketInUseError(`${socketPath} is in use: another process is serving on it`);
  }
  await fs.unlink(socketPath);
}

/** Removes our socket file on exit; a missing file is fine. */
export async function removeSocketPath(socketPath: string): Promise<void> {
  await fs.unlink(socketPath).catch(() => {});
}
