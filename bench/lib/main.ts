import { pathToFileURL } from "node:url";

/** True when the module at metaUrl is the script node was started with. */
export function isMain(metaUrl: string): boolean {
  return !!process.argv[1] && pathToFileURL(process.argv[1]).href === metaUrl;
}

/**
 * Entry point of a bench child process: when this module is the script node
 * started, run `fn` on the JSON parameters in argv[2] and print its result as
 * the last stdout line (what run.ts's runChild reads); exit 1 on failure.
 */
export function runAsChild<P, R>(metaUrl: string, fn: (params: P) => R | Promise<R>): void {
  if (!isMain(metaUrl)) return;
  Promise.resolve()
    .then(() => fn(JSON.parse(process.argv[2]!) as P))
    .then(
      (r) => {
        process.stdout.write(JSON.stringify(r) + "\n");
        process.exit(0);
      },
      (e) => {
        process.stderr.write(String(e?.stack ?? e) + "\n");
        process.exit(1);
      },
    );
}
