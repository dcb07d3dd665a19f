// --pin: the server under test on one core, every load generator on another,
// so the load never steals the server's core and the ratios compare servers
// that each had exactly one core (the reference method for the targets).
import os from "node:os";
import { spawnSync } from "node:child_process";

export interface Pinning {
  /** taskset CPU list for the server under test */
  server: string;
  /** taskset CPU list for h2load and the load-generator children (and this orchestrator) */
  load: string;
}

let pinning: Pinning | null = null;

/** Server on the last CPU, load on CPU 0; needs taskset (util-linux) and 2 CPUs. */
export function enablePinning(): Pinning {
  const n = os.cpus().length;
  if (n < 2) throw new Error("--pin needs at least 2 CPUs");
  if (spawnSync("taskset", ["-V"], { stdio: "ignore" }).status !== 0) throw new Error("--pin needs taskset (util-linux)");
  pinning = { server: String(n - 1), load: "0" };
  // The orchestrator itself (and so every child it starts unpinned) stays off the server's core.
  spawnSync("taskset", ["-a", "-p", "-c", pinning.load, String(process.pid)], { stdio: "ignore" });
  return pinning;
}

export function currentPinning(): Pinning | null {
  return pinning;
}

/** Wraps a command so it runs on the given role's cores (unchanged when not pinning). */
export function pinned(role: keyof Pinning, cmd: string, args: string[]): { cmd: string; args: string[] } {
  if (!pinning) return { cmd, args };
  return { cmd: "taskset", args: ["-c", pinning[role], cmd, ...args] };
}
