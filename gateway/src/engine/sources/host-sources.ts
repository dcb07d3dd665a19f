// Sources the engine composes itself instead of reading through the catalog:
// `volume.statfs` is the statfs prober's result for a volume's paths (the
// HOST side of issue #30 implements it). Plugins may list them, so loaders
// and `plugin test` must know their names even where the catalog does not.
export const HOST_COMPOSED_SOURCES: readonly string[] = Object.freeze(["volume.statfs"]);

export function isHostComposedSource(name: string): boolean {
  return HOST_COMPOSED_SOURCES.includes(name);
}
