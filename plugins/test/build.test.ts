import { beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { ensureBuilt, loadPlugin, wasmPath } from "./harness";
// @ts-expect-error plain JS module without types
import { abiProblems, discoverPlugins } from "../build.mjs";

const OURS = ["kernel-modules", "lnet-nets", "lnet-nids", "lnet-self-ping", "net-interfaces"];
/** Health checks (CSI v1.13): probe kind and the sources each reads. */
const HEALTH: Record<string, { probe: string; sources: string[] }> = {
  "lustre-imports": { probe: "storage", sources: ["lctl.import_states", "lfs.getname"] },
  "lnet-health": { probe: "storage", sources: ["lnetctl.net_show_health", "proc.modules", "lnetctl.net_show"] },
  "lustre-health-check": { probe: "storage", sources: ["lustre.health_check"] },
  "lnet-servers": { probe: "storage", sources: ["lnet.server_pings"] },
  "lnet-peer-health": { probe: "storage", sources: ["lnetctl.peer_show_health"] },
  "volume-lustre-health": { probe: "volume", sources: ["proc.mounts", "lctl.import_states", "lfs.getname", "volume.statfs"] },
};
const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const SOURCE_CATALOG = ["lnetctl.net_show", "lctl.list_nids", "lnetctl.ping", "proc.modules", "sys.net.operstate", "kernel.release", "kernel.modules_dep", "modprobe.lnet_options", "mount_lustre.version", "lnet.peer_pings"];

beforeAll(() => ensureBuilt());

describe("plugin build", () => {
  it("discovers every plugin directory and skips sdk/test/fixtures", () => {
    const found: string[] = discoverPlugins();
    for (const name of [...OURS, ...Object.keys(HEALTH)]) expect(found).toContain(name);
    for (const name of ["sdk", "test", "fixtures"]) expect(found).not.toContain(name);
  });

  it.each([...OURS, ...Object.keys(HEALTH)])("%s imports only env.abort/trace/seed and exports the ABI", (name) => {
    const bytes = readFileSync(wasmPath(name));
    expect(abiProblems(bytes)).toEqual([]);
    const imports = WebAssembly.Module.imports(new WebAssembly.Module(bytes));
    for (const imp of imports) expect(["env.abort", "env.trace", "env.seed"]).toContain(`${imp.module}.${imp.name}`);
  });

  it("abiProblems refuses a module with a WASI import", () => {
    const wasm = moduleImporting("wasi_snapshot_preview1", "fd_write");
    const problems: string[] = abiProblems(wasm);
    expect(problems.join(" ")).toContain("forbidden import wasi_snapshot_preview1.fd_write");
    expect(problems.join(" ")).toContain("missing export check");
  });

  const PHASED_SOURCES: Record<string, number> = { "kernel-modules": 5, "lnet-nets": 4, "lnet-nids": 4, "lnet-self-ping": 4 };
  it.each(OURS)("%s has a valid ABI v1 manifest", (name) => {
    const m = loadPlugin(name).manifest();
    expect(m).toMatchObject({ abi: 1, name, modes: ["node"], probe: "readiness", severity: "required" });
    expect(m.name).toMatch(NAME_RE);
    expect(m.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(m.description.length).toBeGreaterThan(10);
    // One source the check is about; the phased LNet checks (lnetConfiguredAt) add the phase's and the first mount's.
    expect(m.sources.length).toBe(PHASED_SOURCES[name] ?? 1);
    for (const s of m.sources) expect(SOURCE_CATALOG).toContain(s);
  });
});

describe("bundled health checks", () => {
  it.each(Object.entries(HEALTH))("%s: manifest with its probe kind and sources", (name, want) => {
    const m = loadPlugin(name).manifest();
    expect(m).toMatchObject({ abi: 1, name, modes: ["node"], probe: want.probe, severity: "required" });
    expect(m.sources).toEqual(want.sources);
  });
});

/** A minimal module importing one `(func)` — enough to exercise the import gate. */
function moduleImporting(mod: string, name: string): Uint8Array {
  const enc = (t: string) => [t.length, ...Buffer.from(t, "latin1")];
  const importEntry = [...enc(mod), ...enc(name), 0x00, 0x00]; // func, type 0
  const importSection = [1, ...importEntry];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0,
    1, 4, 1, 0x60, 0, 0, // type section: one () -> ()
    2, importSection.length, ...importSection,
  ]);
}
