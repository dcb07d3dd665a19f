// A throw-away fake Lustre node for tests: a scenario directory driving the
// fake `lnetctl`/`lctl` in gateway/demo/bin, plus procfs/sysfs trees.
//
//   const node = fakeLnet({ base: "healthy", ping: { delayMs: 60_000 } });
//   const catalog = await SourceCatalog.create({
//     procfs: node.procfs, sysfs: node.sysfs, env: node.env, logger });
//   ...
//   expect(node.calls("ping")).toHaveLength(1);
//   node.cleanup();
//
// To start a gateway process on it: env = node.env, --path.procfs=node.procfs,
// --path.sysfs=node.sysfs (and --path.modules=node.modules,
// --path.modprobe=node.modprobe for checks configured with lnetConfiguredAt:
// mount). File formats: gateway/demo/README.md.

import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { demoBinDir, demoScenarioDir } from "../../src/engine/sources/demo.js";

export interface FakeCommand {
  /** stdout; omit to make the tool answer "LNet not configured" (exit 1). */
  out?: string | Buffer;
  err?: string | Buffer;
  exit?: number;
  /** Sleep before answering; a huge value makes the tool hang. */
  delayMs?: number;
  /** ping only: any other NID argument fails like an unreachable peer. */
  expectNid?: string;
}

export interface FakeLnetSpec {
  /** Start from a copy of gateway/demo/scenarios/<base> ("healthy", "ni-down", "lnet-down"). */
  base?: string;
  netShow?: FakeCommand;
  listNids?: FakeCommand;
  ping?: FakeCommand;
  /** Content of <procfs>/modules. */
  modules?: string;
  /** IFACE → content of <sysfs>/class/net/IFACE/operstate ("up\n" etc.). */
  operstate?: Record<string, string>;
  /** Content of <procfs>/sys/kernel/osrelease (the running kernel). */
  osrelease?: string;
  /** RELEASE → content of <modules>/RELEASE/modules.dep; null removes that release's tree. */
  modulesDep?: Record<string, string | null>;
  /** FILE → content of <modprobe>/FILE; null removes it. */
  modprobe?: Record<string, string | null>;
}

export interface FakeLnet {
  /** The scenario directory (PROBEGATE_FAKE_LNET). */
  dir: string;
  /** process.env with demo/bin first in PATH and PROBEGATE_FAKE_LNET=dir. */
  env: NodeJS.ProcessEnv;
  procfs: string;
  sysfs: string;
  /** The fake --path.modules and --path.modprobe trees. */
  modules: string;
  modprobe: string;
  /** Lines of calls.log (`<key> <tool> <args…>`), optionally only those for one key. */
  calls(key?: "net_show" | "list_nids" | "ping" | string): string[];
  /** Change outputs in place, e.g. to take an NI down mid-test. */
  update(spec: Omit<FakeLnetSpec, "base">): void;
  /** Remove a command's files (it then answers "not configured"). */
  clear(key: "net_show" | "list_nids" | "ping"): void;
  cleanup(): void;
}

const KEYS = { netShow: "net_show", listNids: "list_nids", ping: "ping" } as const;
const SUFFIXES = ["out", "err", "exit", "delay_ms", "expect_nid"] as const;

function writeCommand(dir: string, key: string, cmd: FakeCommand): void {
  if (cmd.out !== undefined) writeFileSync(join(dir, `${key}.out`), cmd.out);
  if (cmd.err !== undefined) writeFileSync(join(dir, `${key}.err`), cmd.err);
  if (cmd.exit !== undefined) writeFileSync(join(dir, `${key}.exit`), `${cmd.exit}\n`);
  if (cmd.delayMs !== undefined) writeFileSync(join(dir, `${key}.delay_ms`), `${cmd.delayMs}\n`);
  if (cmd.expectNid !== undefined) writeFileSync(join(dir, `${key}.expect_nid`), `${cmd.expectNid}\n`);
}

function apply(dir: string, sysfs: string, procfs: string, spec: Omit<FakeLnetSpec, "base">): void {
  if (spec.osrelease !== undefined) {
    mkdirSync(join(procfs, "sys", "kernel"), { recursive: true });
    writeFileSync(join(procfs, "sys", "kernel", "osrelease"), spec.osrelease);
  }
  for (const [release, dep] of Object.entries(spec.modulesDep ?? {})) {
    const tree = join(dir, "lib", "modules", release);
    if (dep === null) rmSync(tree, { recursive: true, force: true });
    else {
      mkdirSync(tree, { recursive: true });
      writeFileSync(join(tree, "modules.dep"), dep);
    }
  }
  for (const [file, text] of Object.entries(spec.modprobe ?? {})) {
    const path = join(dir, "etc", "modprobe.d", file);
    if (text === null) rmSync(path, { force: true });
    else writeFileSync(path, text);
  }
  for (const [field, key] of Object.entries(KEYS) as Array<[keyof typeof KEYS, string]>) {
    const cmd = spec[field];
    if (cmd) writeCommand(dir, key, cmd);
  }
  // One node, one LNet state: a new `net show` is what `net show -v 3` prints too (from net_show's
  // files), as on a real node, where the gateway serves the plain form from the verbose run.
  if (spec.netShow) for (const s of SUFFIXES) rmSync(join(dir, `net_show_health.${s}`), { force: true });
  if (spec.modules !== undefined) writeFileSync(join(procfs, "modules"), spec.modules);
  for (const [iface, state] of Object.entries(spec.operstate ?? {})) {
    mkdirSync(join(sysfs, "class", "net", iface), { recursive: true });
    writeFileSync(join(sysfs, "class", "net", iface, "operstate"), state);
  }
}

/** `net show` with one tcp NI per interface, in order, so lnet-nets reports them as lnet.interfaces. */
export function netShowOver(ifaces: readonly string[]): string {
  const nis = ifaces.map((i, k) => `        - nid: 10.0.${k >> 8}.${(k & 255) + 1}@tcp\n          status: up\n          interfaces:\n              0: ${i}\n`).join("");
  return `net:\n    - net type: lo\n      local NI(s):\n        - nid: 0@lo\n          status: up\n    - net type: tcp\n      local NI(s):\n${nis}`;
}

export function fakeLnet(spec: FakeLnetSpec = {}): FakeLnet {
  const dir = mkdtempSync(join(tmpdir(), "probegate-fake-lnet-"));
  if (spec.base !== undefined) {
    cpSync(demoScenarioDir(spec.base), dir, { recursive: true });
    // The demo node may have been run in place; its call history is not ours.
    rmSync(join(dir, "calls.log"), { force: true });
  }
  const procfs = join(dir, "proc");
  const sysfs = join(dir, "sys");
  mkdirSync(procfs, { recursive: true });
  mkdirSync(join(sysfs, "class", "net"), { recursive: true });
  mkdirSync(join(dir, "lib", "modules"), { recursive: true });
  mkdirSync(join(dir, "etc", "modprobe.d"), { recursive: true });
  apply(dir, sysfs, procfs, spec);

  return {
    dir,
    env: { ...process.env, PATH: `${demoBinDir()}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: dir },
    procfs,
    sysfs,
    modules: join(dir, "lib", "modules"),
    modprobe: join(dir, "etc", "modprobe.d"),
    calls(key?: string) {
      let text = "";
      try {
        text = readFileSync(join(dir, "calls.log"), "utf8");
      } catch {
        return [];
      }
      const lines = text.split("\n").filter((l) => l.length > 0);
      return key === undefined ? lines : lines.filter((l) => l.split(" ", 1)[0] === key);
    },
    update: (next) => apply(dir, sysfs, procfs, next),
    clear(key) {
      // `net show` gone is every form of it gone (see apply).
      for (const k of key === "net_show" ? [key, "net_show_health"] : [key]) for (const suffix of SUFFIXES) rmSync(join(dir, `${k}.${suffix}`), { force: true });
    },
    // A fake lnetctl the stopped gateway started may still be appending to
    // calls.log (Node 24's rmSync then throws ENOTEMPTY): retry, and never fail
    // a test over a temp directory left behind.
    cleanup: () => {
      try {
        rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
      } catch {
        /* left in the temp dir */
      }
    },
  };
}
