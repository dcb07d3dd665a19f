// A throw-away fake Lustre client for tests: the fake LNet node of
// fake-lnet.ts plus mounted Lustre file systems, answered by the fake tools in
// gateway/demo/bin from files in the scenario directory.
//
//   const node = fakeLustre({
//     lustre: { version: "2.16", filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000",
//               mountpoint: "/mnt/lustre", mdts: 1, osts: 4 }] },
//   });
//   // … start a gateway with env: node.env, --path.procfs=node.procfs, --path.sysfs=node.sysfs …
//   node.setLustre({ ...spec, filesystems: [{ ...fs, states: { OST0003: "EVICTED" },
//                    history: { OST0003: [[t, "DISCONN"], [t, "EVICTED"]] } }] });  // next round sees it
//   node.hang("imports");        // `lctl get_param …import` now hangs (calls are still logged)
//   node.missing("lfs");         // `lfs` is no longer on PATH (spawn ENOENT, like a node without it)
//   node.restore("lfs"); node.unhang("imports");
//   node.unmountAll();           // get_param then fails with "param_path … No such file or directory"
//   expect(node.calls("imports")).toHaveLength(2);
//   node.cleanup();
//
// What each command reads (keys as in gateway/demo/README.md, files `<key>.out|.err|.exit|.delay_ms`):
//   lctl get_param osc.*.import mdc.*.import mgc.*.import   → imports
//   lctl get_param osc.*.state mdc.*.state mgc.*.state       → import_states
//   lctl get_param -n health_check                           → health_check  (default "healthy\n")
//   lfs getname                                              → getname
//   lnetctl net show -v 3                                    → net_show_health (else net_show's files)
// The outputs are rendered by gateway/demo/lib/fake-lustre.js in the chosen
// version's byte format; a test that needs bytes no renderer makes (garbage,
// a truncated block) writes them with `node.update({ raw: { imports: { out: "…" } } })`.
// Rewriting between rounds is safe: the fake reads its files on every call.
// The commands' own results are cached by the gateway for about a round (TTL),
// so a test waits for the next round after a change.

import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { demoBinDir } from "../../src/engine/sources/demo.js";
// The fake tools' renderer: plain JS shared with the demo node and the fixture generator.
import { renderGetname, renderImports, renderStates } from "../../demo/lib/fake-lustre.js";
import { fakeLnet, type FakeCommand, type FakeLnet, type FakeLnetSpec } from "./fake-lnet.js";

export type LustreVersion = "2.12" | "2.15" | "2.15.7" | "2.16" | "2.17" | "master";
export type ImportState = "FULL" | "IDLE" | "NEW" | "DISCONN" | "CONNECTING" | "REPLAY" | "REPLAY_LOCKS" | "REPLAY_WAIT" | "RECOVER" | "EVICTED" | "CLOSED" | string;

export interface FakeFilesystem {
  name: string;
  /** 16 lowercase hex digits (the super_block pointer). */
  instance: string;
  mountpoint: string;
  mdts?: number;
  osts?: number;
  /** Target ("MDT0000", "OST0003") → state; default FULL. */
  states?: Record<string, ImportState>;
  /** Target → state_history entries `[epoch, STATE]`, oldest first (at most 16 are printed). */
  history?: Record<string, Array<[number, ImportState]>>;
  /** Target → its server's NIDs in the import (current connection, then failover partners); default [mgsNid]. */
  servers?: Record<string, string[]>;
}

export interface FakeLustreState {
  version?: LustreVersion;
  mgsNid?: string;
  mgcState?: ImportState;
  /** Epoch seconds stamped on default histories (CONNECTING, FULL). */
  since?: number;
  /** Entries in each default history (default 2; 16 = the kernel's full ring, idle/reconnect cycles before `since`). */
  historyLength?: number;
  /** The MGC's state_history entries (default: as a target's, from mgcState). */
  mgcHistory?: Array<[number, ImportState]>;
  filesystems: FakeFilesystem[];
}

export type LustreKey = "imports" | "import_states" | "health_check" | "getname" | "net_show_health";
const LUSTRE_KEYS: readonly LustreKey[] = ["imports", "import_states", "health_check", "getname", "net_show_health"];
const TOOLS = ["lctl", "lnetctl", "lfs", "mount.lustre"] as const;
export type FakeTool = (typeof TOOLS)[number];

export interface FakeLustreSpec extends FakeLnetSpec {
  /** Mounted file systems; omit (or `filesystems: []`) for a node with nothing mounted. */
  lustre?: FakeLustreState;
  /** `lctl get_param -n health_check` output; default "healthy\n" ("LBUG\n", "NOT HEALTHY\n"). */
  healthCheck?: string;
  /** Exact command behaviour, written after the rendered files (garbage, exit codes, delays). */
  raw?: Partial<Record<LustreKey, FakeCommand>>;
}

export interface FakeLustre extends FakeLnet {
  /** Re-render the Lustre files from a new state (an eviction, a recovery, a new mount). */
  setLustre(state: FakeLustreState): void;
  /** No Lustre mounted: imports/states/getname answer as on a client with nothing mounted. */
  unmountAll(): void;
  setHealthCheck(text: string): void;
  /** Exact behaviour of one command (see FakeCommand). */
  setRaw(key: LustreKey, cmd: FakeCommand): void;
  /** The command sleeps "forever" (its calls are still logged). */
  hang(key: LustreKey | "net_show" | "list_nids" | "ping"): void;
  unhang(key: LustreKey | "net_show" | "list_nids" | "ping"): void;
  /** Remove a tool from the PATH the env points at (the runner then reports ENOENT … not found). */
  missing(tool: FakeTool): void;
  restore(tool: FakeTool): void;
  /** This node's bin directory (links to gateway/demo/bin), first in env.PATH. */
  bin: string;
}

const HANG_MS = 1e12;

function removeKey(dir: string, key: string): void {
  for (const s of ["out", "err", "exit", "delay_ms"]) rmSync(join(dir, `${key}.${s}`), { force: true });
}

function writeRaw(dir: string, key: string, cmd: FakeCommand): void {
  if (cmd.out !== undefined) writeFileSync(join(dir, `${key}.out`), cmd.out);
  if (cmd.err !== undefined) writeFileSync(join(dir, `${key}.err`), cmd.err);
  if (cmd.exit !== undefined) writeFileSync(join(dir, `${key}.exit`), `${cmd.exit}\n`);
  if (cmd.delayMs !== undefined) writeFileSync(join(dir, `${key}.delay_ms`), `${cmd.delayMs}\n`);
}

export function fakeLustre(spec: FakeLustreSpec = {}): FakeLustre {
  const { lustre, healthCheck, raw, ...lnet } = spec;
  const node = fakeLnet(lnet);
  const dir = node.dir;
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  for (const t of TOOLS) symlinkSync(join(demoBinDir(), t), join(bin, t));

  const setLustre = (state: FakeLustreState): void => {
    for (const k of ["imports", "import_states", "getname"] as const) removeKey(dir, k);
    if (state.filesystems.length === 0) return; // the fake then answers like a node with nothing mounted
    writeFileSync(join(dir, "imports.out"), renderImports(state));
    writeFileSync(join(dir, "import_states.out"), renderStates(state));
    writeFileSync(join(dir, "getname.out"), renderGetname(state));
  };
  const setHealthCheck = (text: string): void => {
    removeKey(dir, "health_check");
    writeFileSync(join(dir, "health_check.out"), text);
  };
  const setRaw = (key: LustreKey, cmd: FakeCommand): void => {
    removeKey(dir, key);
    writeRaw(dir, key, cmd);
  };

  if (lustre) setLustre(lustre);
  else if (spec.base === undefined) setLustre({ filesystems: [] });
  if (healthCheck !== undefined || spec.base === undefined) setHealthCheck(healthCheck ?? "healthy\n");
  for (const k of LUSTRE_KEYS) if (raw?.[k]) setRaw(k, raw[k]!);

  return {
    ...node,
    env: { ...node.env, PATH: `${bin}:${process.env.PATH ?? ""}` },
    bin,
    setLustre,
    unmountAll: () => setLustre({ filesystems: [] }),
    setHealthCheck,
    setRaw,
    hang: (key) => writeFileSync(join(dir, `${key}.delay_ms`), `${HANG_MS}\n`),
    unhang: (key) => rmSync(join(dir, `${key}.delay_ms`), { force: true }),
    missing: (tool) => rmSync(join(bin, tool), { force: true }),
    restore(tool) {
      rmSync(join(bin, tool), { force: true });
      symlinkSync(join(demoBinDir(), tool), join(bin, tool));
    },
  };
}
