// Where commands run: the rule, written once, that every command the gateway
// starts follows (source commands, statfs probes, and whatever comes next).
// Either a fixed argv prefix (--command-prefix, e.g. nsenter into the host's
// namespaces; none by default) or, with --exec-in-process, the mount
// namespace of the newest process with that name, found anew for each run
// because the driver's container may have restarted (process-namespace.ts).
// The CLI refuses both at once; were both given, the namespace comes first.

import { ProcessNamespace } from "./process-namespace.js";

export type PlacePrefix = { ok: true; argv: readonly string[] } | { ok: false; error: string };

export interface CommandPlaceOptions {
  /** --path.procfs: where the --exec-in-process target is looked for. */
  procfs: string;
  commandPrefix?: readonly string[];
  /** --exec-in-process: the target process's executable name. */
  execInProcess?: string;
}

export class CommandPlace {
  readonly commandPrefix: readonly string[];
  /** The --exec-in-process target, when there is one. */
  readonly namespace: ProcessNamespace | undefined;
  private readonly fixed: PlacePrefix;

  constructor(opts: CommandPlaceOptions) {
    this.commandPrefix = Object.freeze([...(opts.commandPrefix ?? [])]);
    this.namespace = opts.execInProcess ? new ProcessNamespace(opts.procfs, opts.execInProcess) : undefined;
    this.fixed = { ok: true, argv: this.commandPrefix };
  }

  /** The prefix now: a namespace is found (or found gone) at each call; a fixed prefix costs nothing. */
  prefix(): PlacePrefix | Promise<PlacePrefix> {
    const ns = this.namespace;
    if (!ns) return this.fixed;
    return ns.prefix().then((found) => (found.ok ? { ok: true, argv: [...found.argv, ...this.commandPrefix] } : found));
  }

  /** For describe(): the prefix with a placeholder where the namespace's PID goes. */
  describe(): string[] {
    return [...(this.namespace?.describe() ?? []), ...this.commandPrefix];
  }
}
