import { pathToFileURL } from "node:url";

/** True when the module at metaUrl is the script node was started with. */
export function isMain(metaUrl: string): boolean {
  return !!process.argv[1] && pathToFileURL(process.argv[1]).href === metaUrl;
}
