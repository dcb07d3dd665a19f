// The command spawner (exec/spawner.ts) as metrics, read from it when
// Prometheus scrapes: the spawner only counts and knows its state; nothing here
// is pushed into it. A gateway on the direct spawn forks itself for every
// source command (1-3 ms of its CPU each), which otherwise only a log line says.
import type { Registry } from "prom-client";
import { counter, gauge } from "./declare.js";

/** What the metrics read from the spawner (CommandSpawner has it). */
export interface SpawnerStatus {
  /** Processes started to replace one that died or was killed as wedged. */
  readonly restarts: number;
  /** Why commands go the direct way for good (binary missing, kept failing), or undefined. */
  readonly fallbackReason: string | undefined;
}

/**
 * active: the spawner starts the commands (also while one that died is being
 * replaced); fallback: it is not built or kept failing, so the gateway forks
 * for each; off: --command-spawner=off.
 */
export const SPAWNER_STATES = ["active", "fallback", "off"] as const;
export type SpawnerState = (typeof SPAWNER_STATES)[number];

export function spawnerState(spawner: SpawnerStatus | undefined): SpawnerState {
  if (spawner === undefined) return "off";
  return spawner.fallbackReason === undefined ? "active" : "fallback";
}

export class CommandSpawnerMetrics {
  private attached = false;
  private spawner: SpawnerStatus | undefined;

  constructor(registry: Registry) {
    const self = this;
    counter(registry, "probegate_command_spawner_restarts_total", "Command spawner processes started to replace one that died or stopped answering (killed as wedged).", [], {
      collect() {
        this.reset();
        this.inc(self.spawner?.restarts ?? 0);
      },
    });
    gauge(
      registry,
      "probegate_command_spawner_state",
      "1 for how source commands are started, 0 for the other states: active (by the command spawner), fallback (by a fork of the gateway each: the spawner is not built or kept failing), off (--command-spawner=off).",
      ["state"] as const,
      {
        collect() {
          this.reset();
          if (!self.attached) return;
          const now = spawnerState(self.spawner);
          for (const state of SPAWNER_STATES) this.set({ state }, state === now ? 1 : 0);
        },
      },
    );
  }

  /** The catalog's spawner, or undefined when commands are not started through one (off); before this, no state is shown. */
  attach(spawner: SpawnerStatus | undefined): void {
    this.attached = true;
    this.spawner = spawner;
  }
}
