// The demo node's scratch directory: a copy of a scenario in the temp dir
// (the fake tools log their calls into it, and the package may be read-only).
// It is removed when the gateway exits; directories left behind by demo
// gateways that died without cleaning up are removed at the next start.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const PREFIX = "probegate-demo-";
const OWNER_FILE = ".probegate-demo-owner";
/** Unmarked directories (made by versions before the marker) count as stale once idle this long. */
const LEGACY_IDLE_MS = 10 * 60_000;

export interface DemoDir {
  path: string;
  remove(): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function mtimeMs(p: string): number {
  try {
    return fs.statSync(p).mtimeMs;
  } catch {
    return 0;
  }
}

/** Whether `dir` is a demo directory of ours whose gateway is gone. */
function isStale(dir: string, now: number): boolean {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch {
    return false;
  }
  if (!st.isDirectory() || (typeof process.getuid === "function" && st.uid !== process.getuid())) return false;
  let owner: { pid?: unknown; host?: unknown } | null = null;
  try {
    owner = JSON.parse(fs.readFileSync(path.join(dir, OWNER_FILE), "utf8"));
  } catch {
    owner = null;
  }
  if (owner && typeof owner.pid === "number") {
    // Another host's gateway (a shared /tmp) is not ours to judge.
    return owner.host === os.hostname() && !alive(owner.pid);
  }
  // A demo layout nobody has touched for a while (the fake tools append to calls.log on every check).
  if (!fs.existsSync(path.join(dir, "proc")) || !fs.existsSync(path.join(dir, "sys"))) return false;
  return now - Math.max(st.mtimeMs, mtimeMs(path.join(dir, "calls.log"))) > LEGACY_IDLE_MS;
}

/** Removes stale demo directories in `tmp`; returns the paths removed. Never throws. */
export function removeStaleDemoDirs(tmp = os.tmpdir(), now = Date.now()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = fs.readdirSync(tmp);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = path.join(tmp, name);
    if (!isStale(dir, now)) continue;
    try {
      fs.rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // Someone else's problem now; the next start tries again.
    }
  }
  return removed;
}

/** Copies the scenario into a fresh marked directory, removed on exit (also an unclean one). */
export function createDemoDir(scenario: string, source: string, tmp = os.tmpdir()): DemoDir {
  const dir = fs.mkdtempSync(path.join(tmp, `${PREFIX}${scenario}-`));
  const markOwner = () => fs.writeFileSync(path.join(dir, OWNER_FILE), JSON.stringify({ pid: process.pid, host: os.hostname() }));
  markOwner();
  fs.cpSync(source, dir, { recursive: true });
  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    process.removeListener("exit", remove);
    // A fake lnetctl started just before shutdown may still append to its
    // calls.log while the tree goes (ENOTEMPTY): retry a few times, and never
    // fail the exit over it. What is left gets its owner mark back, so the
    // next start sees a dead owner and removes it.
    try {
      fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
    } catch {
      try {
        markOwner();
      } catch {
        /* nothing more to do on the way out */
      }
    }
  };
  process.once("exit", remove);
  return { path: dir, remove };
}
