/** A bad --sources file; its own module so the YAML parser loads only when a file is given. */
export class SourcesFileError extends Error {
  override name = "SourcesFileError";
}
