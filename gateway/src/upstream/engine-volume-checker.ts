import { runPlugin, type PluginRunDeps } from "../engine/run-plugin.js";
import { combineVolumeOutcomes } from "../engine/volume-verdict.js";
import type { PluginRuntime } from "../runtime/runtime.js";
import type { LoadedPlugin } from "../runtime/types.js";
import type { VolumeChecker, VolumeRef, VolumeVerdict } from "./volume-checker.js";

// Shared with the background volume evaluation (engine/health), which keeps the verdict in memory.
export { combineVolumeOutcomes };

export interface EngineVolumeCheckerOptions extends PluginRunDeps {
  /** The runtime the check engine runs (the loaded plugin set and its sandbox); with the engine's catalog and mode. */
  runtime: Pick<PluginRuntime, "current" | "runCheck">;
}

/**
 * Runs the engine's `probe:"volume"` plugins against one volume, on demand.
 * The volume's identity reaches the plugins as facts (volume.id, volume.path,
 * volume.stagingPath), the same channel checks use to pass values on, so
 * volume plugins need no ABI change. A required plugin's fail makes the
 * volume abnormal; warnings and plugin faults are reported in the message
 * but do not, since they say nothing certain about the volume.
 */
export class EngineVolumeChecker implements VolumeChecker {
  constructor(private readonly opts: EngineVolumeCheckerOptions) {}

  private volumePlugins(): LoadedPlugin[] {
    return this.opts.runtime
      .current()
      .plugins.filter((p) => p.manifest.probe === "volume" && p.manifest.modes.includes(this.opts.mode));
  }

  hasVolumePlugins(): boolean {
    return this.volumePlugins().length > 0;
  }

  async check(volume: VolumeRef): Promise<VolumeVerdict> {
    const facts: Record<string, string> = { "volume.id": volume.id, "volume.path": volume.path };
    if (volume.stagingPath) facts["volume.stagingPath"] = volume.stagingPath;
    const plugins = this.volumePlugins();
    const outcomes = await Promise.all(plugins.map((p) => runPlugin(this.opts, p, facts)));
    return combineVolumeOutcomes(plugins, outcomes);
  }
}
