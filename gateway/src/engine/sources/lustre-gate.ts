// No Lustre command whose answer cannot matter. On a node where the mount
// table has no Lustre file system, `lctl get_param {osc,mdc,mgc}.*.state`
// (and `.import`) can only answer "no such parameter", and `lfs getname`
// nothing: the catalog does not start them and answers for them. Where the
// `lustre` module is not loaded, `health_check` does not exist either. Both
// facts come from the two files the checks already read (`proc.mounts` of the
// namespace the commands run in, `proc.modules`), through the catalog, so a
// round reads each at most once.
//
// Fail closed: a file that cannot be read (missing, cut, failed) says nothing,
// and the command runs as before. What a source that was not run answers is
// what the tool prints on such a node (plugins/ABI.md, "no mounts"), with
// `exitCode` null and `error` "not run: <why>", so a check reaches the
// verdict it reaches on a real run ("no Lustre file system is mounted").
//
// Nor an LNet ping of the peers a check names (`lnet.peer_pings`, e.g.
// lnet-self-ping's `peers:`) before LNet is configured: with the `lnet`
// module not loaded, or `lnetctl net show` answering an error document or
// only `lo`, a ping can only fail here (ENETDOWN), and on an
// `lnetConfiguredAt: mount` node that is every minute until the first mount.
// The test is the one plugins/sdk/phase.ts lnetPhase makes, on the same two
// sources, so the check that reads the pings and the gate agree; what cannot
// be told (an unreadable module list, a net show that timed out) lets the
// pings run.
//
// `health_check` is the exception with a module loaded: an LBUG wedges the
// client until reboot whether or not anything is mounted (and a wedged client
// may never finish the next mount), so it is read while nothing is mounted
// too, but kept (keep-while.ts) as long as the mount table still has no Lustre
// line and the module line reads the same, and re-read at least every 5 min.

import { KEEP_MAX_AGE_MS, type KeepWhile } from "./keep-while.js";
import type { Produced, SourceDef } from "./definitions.js";

type Read = Pick<Produced, "ok" | "truncated" | "stdout" | "stderr">;
/** Reads another source of the same catalog (cached and shared like any read). */
export type CatalogRead = (name: "proc.mounts" | "proc.modules" | "lnetctl.net_show") => Promise<Read>;

/** A mounts table (`/proc/<pid>/mounts` format) lists a file system of type `lustre`; undefined when it cannot be told. */
export function lustreMounted(r: Read): boolean | undefined {
  if (!r.ok || r.truncated) return undefined;
  for (const line of r.stdout.split("\n")) if (line.split(" ")[2] === "lustre") return true;
  return false;
}

/** The `lustre` line of /proc/modules (null: not loaded); undefined when it cannot be told. */
export function lustreModuleLine(r: Read): string | null | undefined {
  if (!r.ok || r.truncated) return undefined;
  for (const line of r.stdout.split("\n")) if (line.startsWith("lustre ")) return line;
  return null;
}

/** Why nothing Lustre can answer (module not loaded, or no Lustre mount), or undefined. */
async function whyNoLustre(read: CatalogRead, paths: Paths, mountsToo: boolean): Promise<string | undefined> {
  if ((await read("proc.modules").then(lustreModuleLine)) === null) return `the lustre module is not loaded (${paths.modules})`;
  if (mountsToo && (await read("proc.mounts").then(lustreMounted)) === false) return `no Lustre file system is mounted (no lustre line in ${paths.mounts})`;
  return undefined;
}

/** What `lctl get_param P…` prints where no P exists: one line per parameter on stderr, nothing on stdout. */
export function getParamNotRun(params: readonly string[], why: string): Produced {
  const stderr = params.map((p) => `error: get_param: param_path '${p.replaceAll(".", "/")}': No such file or directory\n`).join("");
  return { ok: false, exitCode: null, stdout: "", stderr, error: `not run: ${why}`, truncated: false, outcome: "skipped" };
}

/** A `net show` listing a net other than `lo` (`net type: tcp`, quoted or not). */
function listsRemoteNet(text: string): boolean {
  for (const m of text.matchAll(/^\s*(?:-\s*)?net type:\s*"?([^"\s]+)"?\s*$/gm)) if (m[1] !== "lo") return true;
  return false;
}

/** Why LNet cannot answer a ping yet (as lnetPhase tells "not yet configured"), or undefined: configured, or it cannot be told. */
async function whyLnetUnconfigured(read: CatalogRead, paths: Paths): Promise<string | undefined> {
  const mod = await read("proc.modules");
  if (!mod.ok || mod.truncated) return undefined;
  if (!mod.stdout.split("\n").some((l) => l.startsWith("lnet "))) return `LNet is not configured: the lnet module is not loaded (${paths.modules})`;
  const ns = await read("lnetctl.net_show");
  if (ns.truncated || listsRemoteNet(ns.stdout)) return undefined;
  const errno = /^\s*errno:\s*-?[0-9]+\s*$/m;
  if (errno.test(ns.stdout) || errno.test(ns.stderr)) return "LNet is not configured: lnetctl net show answers an error document";
  return ns.ok ? "LNet is not configured: lnetctl net show lists no non-loopback net" : undefined;
}

function notRun(why: string): Produced {
  return { ok: false, exitCode: null, stdout: "", stderr: "", error: `not run: ${why}`, truncated: false, outcome: "skipped" };
}

interface Paths {
  mounts: string;
  modules: string;
}

function gated(def: SourceDef, why: () => Promise<string | undefined>, answer: (why: string) => Produced): SourceDef {
  return {
    ...def,
    prepare(facts) {
      const p = def.prepare(facts);
      if ("error" in p) return p;
      return {
        key: p.key,
        run: async () => {
          const w = await why().catch(() => undefined);
          return w === undefined ? p.run() : answer(w);
        },
      };
    },
  };
}

/** Kept while the mount table has no Lustre line; the key carries the module line, so a reload re-reads. */
function whileNothingMounted(read: CatalogRead, paths: Paths): KeepWhile {
  return {
    what: `no lustre line in ${paths.mounts} (and the lustre line of ${paths.modules})`,
    maxAgeMs: KEEP_MAX_AGE_MS,
    key: async () => {
      if ((await read("proc.mounts").then(lustreMounted)) !== false) return undefined;
      const mod = await read("proc.modules").then(lustreModuleLine);
      return mod === undefined ? undefined : `none\n${mod ?? ""}`;
    },
  };
}

/** The params of a `lctl get_param [-n] P…` argv (what the not-run answer names). */
function paramsOf(def: SourceDef): string[] {
  const argv = def.argv ?? [];
  const at = argv.indexOf("get_param");
  return at < 0 ? [] : argv.slice(at + 1).filter((a) => !a.startsWith("-"));
}

/** The built-in Lustre sources, gated as above; every other definition unchanged. */
export function gateLustreSources(defs: SourceDef[], read: CatalogRead): SourceDef[] {
  const byName = new Map(defs.map((d) => [d.name, d]));
  const paths: Paths = { mounts: byName.get("proc.mounts")?.path ?? "proc.mounts", modules: byName.get("proc.modules")?.path ?? "proc.modules" };
  return defs.map((d) => {
    switch (d.name) {
      case "lctl.imports":
      case "lctl.import_states": {
        const params = paramsOf(d);
        return gated(d, () => whyNoLustre(read, paths, true), (w) => getParamNotRun(params, w));
      }
      case "lfs.getname":
      // Peers of a client are its servers: none to judge while nothing Lustre is mounted.
      case "lnetctl.peer_show_health":
        return gated(d, () => whyNoLustre(read, paths, true), notRun);
      case "lnet.peer_pings":
        return gated(d, () => whyLnetUnconfigured(read, paths), notRun);
      case "lustre.health_check": {
        const params = paramsOf(d);
        return { ...gated(d, () => whyNoLustre(read, paths, false), (w) => getParamNotRun(params, w)), keepWhile: whileNothingMounted(read, paths) };
      }
      default:
        return d;
    }
  });
}
