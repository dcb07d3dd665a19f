// Synthetic LNet command outputs with N network interfaces (NIs), in the shapes
// lnetctl/lctl print (REFERENCE §4), and the plugin ABI input built from them.
// "N NIs" = N non-loopback NIs (plus the always-present 0@lo), spread over nets
// of at most 16 NIs each (tcp, tcp1, ..., then o2ib, o2ib1, ...). For the
// Lustre sources, N is the number of OSTs of one mounted file system (2.15
// format, rendered by the demo node's fake lctl; three OSTs down).

import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { demoRootDir } from "../../gateway/src/engine/sources/demo.js";
import type * as FakeLustre from "../../gateway/demo/lib/fake-lustre.js";

// Loaded from the demo directory at run time: bench runs from dist/, the renderer is plain JS beside the fake tools.
const lustre = (await import(pathToFileURL(join(demoRootDir(), "lib", "fake-lustre.js")).href)) as typeof FakeLustre;
const LUSTRE_MOUNT = "/mnt/lustre";
const lustreDesc = (osts: number) => ({
  version: "2.15",
  mgsNid: "10.0.0.2@tcp",
  since: 1764000000,
  filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: LUSTRE_MOUNT, mdts: 1, osts: Math.max(1, osts), states: { OST0001: "DISCONN", OST0003: "DISCONN", OST0005: "CONNECTING" } }],
});

export function nid(i: number): string {
  const net = netName(Math.floor(i / 16));
  // Host part 1..254 so every address is a valid, non-network, non-broadcast IPv4.
  const host = (i % 254) + 1;
  const block = Math.floor(i / 254);
  return `10.${(block >> 8) & 255}.${block & 255}.${host}@${net}`;
}

function netName(k: number): string {
  if (k < 32) return k === 0 ? "tcp" : `tcp${k}`;
  const j = k - 32;
  return j === 0 ? "o2ib" : `o2ib${j}`;
}

export const iface = (i: number) => `eth${i}`;

export function netShow(n: number): string {
  const out: string[] = ["net:", "    - net type: lo", "      local NI(s):", "        - nid: 0@lo", "          status: up"];
  for (let i = 0; i < n; i++) {
    if (i % 16 === 0) out.push(`    - net type: ${netName(i / 16)}`, "      local NI(s):");
    out.push(`        - nid: ${nid(i)}`, "          status: up", "          interfaces:", `              0: ${iface(i)}`);
  }
  return out.join("\n") + "\n";
}

export function listNids(n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += nid(i) + "\n";
  return s;
}

export function ping(n: number): string {
  const out = ["ping:", `    - primary nid: ${nid(0)}`, "      Multi-Rail: True", "      peer ni:"];
  for (let i = 0; i < n; i++) out.push(`        - nid: ${nid(i)}`);
  return out.join("\n") + "\n";
}

export function procModules(): string {
  const mods = [
    "lustre 1196032 0 - Live 0xffffffffc0d2b000 (OE)",
    "lmv 208896 1 lustre, Live 0xffffffffc0cf7000 (OE)",
    "mdc 282624 1 lustre, Live 0xffffffffc0cb1000 (OE)",
    "lov 352256 2 lustre,mdc, Live 0xffffffffc0c5a000 (OE)",
    "osc 450560 1 mdc, Live 0xffffffffc0bec000 (OE)",
    "ptlrpc 2658304 7 fld,lmv,mdc,lov,osc,lustre, Live 0xffffffffc0961000 (OE)",
    "obdclass 3457024 8 fld,lmv,mdc,lov,osc,lustre,ptlrpc, Live 0xffffffffc05fc000 (OE)",
    "lnet 745472 6 lustre,ptlrpc,obdclass,ksocklnd, Live 0xffffffffc0545000 (OE)",
    "ksocklnd 192512 1 - Live 0xffffffffc0511000 (OE)",
    "libcfs 491520 11 fld,lmv,mdc,lov,osc,lustre,ptlrpc,obdclass,ksocklnd,lnet, Live 0xffffffffc0496000 (OE)",
    "lnet_selftest 290816 0 - Live 0xffffffffc0440000 (OE)",
  ];
  for (let i = 0; i < 40; i++) mods.push(`mod${i} 16384 0 - Live 0xffffffffc0${(100000 + i).toString(16)} `);
  return mods.join("\n") + "\n";
}

export function operstate(n: number): string {
  let s = "";
  for (let i = 0; i < Math.max(1, n); i++) s += `${iface(i)} up\n`;
  return s;
}

const src = (stdout: string) => ({ ok: true, exitCode: 0, stdout, stderr: "", error: null, truncated: false, ageMs: 0 });

/** Every catalog source for N NIs; a plugin gets only the ones its manifest lists. */
export function allSources(n: number): Record<string, ReturnType<typeof src>> {
  return {
    "lnetctl.net_show": src(netShow(n)),
    "lctl.list_nids": src(listNids(n)),
    "lnetctl.ping": src(ping(n)),
    "proc.modules": { ...src(procModules()), exitCode: null as unknown as number },
    "sys.net.operstate": { ...src(operstate(n)), exitCode: null as unknown as number },
    "lctl.imports": src(lustre.renderImports(lustreDesc(n))),
    "lctl.import_states": src(lustre.renderStates(lustreDesc(n))),
    "lfs.getname": src(lustre.renderGetname(lustreDesc(n))),
    "lustre.health_check": src("healthy\n"),
    "lnetctl.net_show_health": src(netShow(n)),
    "proc.mounts": { ...src(`10.0.0.2@tcp:/lustrefs ${LUSTRE_MOUNT} lustre rw,flock,lazystatfs 0 0\n`), exitCode: null as unknown as number },
    "volume.statfs": { ...src(`${LUSTRE_MOUNT} ok bd00bd0 rw\n`), exitCode: null as unknown as number },
  };
}

const VOLUME_FACTS = { "volume.id": "pv1", "volume.path": LUSTRE_MOUNT, "volume.readOnly": "false" };
const ROUND = { epoch: 1764000700, previousEpoch: 1764000670 };

export function pluginInput(n: number, sources: string[], mode = "node"): string {
  const all = allSources(n);
  const picked: Record<string, unknown> = {};
  for (const s of sources) if (all[s]) picked[s] = all[s];
  const ifaces: string[] = [];
  for (let i = 0; i < Math.max(1, n); i++) ifaces.push(iface(i));
  const facts: Record<string, string> = { "lnet.selfNid": nid(0), "lnet.interfaces": ifaces.join(",") };
  // Only the health checks read these; other plugins' inputs stay as they were.
  if (sources.includes("proc.mounts") || sources.includes("volume.statfs")) Object.assign(facts, VOLUME_FACTS);
  const health = sources.some((s) => s.startsWith("lctl.") && s !== "lctl.list_nids") || sources.includes("lnetctl.net_show_health");
  return JSON.stringify({ mode, sources: picked, facts, ...(health ? { round: ROUND } : {}) });
}
