// Which Lustre servers this node's mounted file systems depend on, by NID:
// - the MGS of each Lustre mount, from its source in the mount table
//   (`NID[,NID…][:NID[,NID…]…]:/fsname[/subdir]`: `,` separates the NIDs of
//   one MGS node, `:` the failover nodes; mount.lustre(8));
// - the MDS and OSS nodes, from each MDC/OSC import (`lctl get_param
//   {osc,mdc}.*.import`): its `failover_nids:` (the node and its failover
//   partners; 2.16+ quote each NID) and `current_connection:` (tried first).
// A server is a set of NIDs any one of which answering is enough (a failover
// pair is one server), keyed by that set: thousands of OSTs share far fewer
// servers, and it is servers that get pinged, not targets. Nothing here runs
// anything; what cannot be read as NIDs is said (`unparsed`), never dropped
// silently and never taken for a reachable server.

import { isValidNid } from "./validate.js";
import { parseMountTable, unescapeMountField } from "./mount-table.js";

export type ServerRole = "mgs" | "mds" | "oss";

export interface LustreServer {
  fs: string;
  role: ServerRole;
  /** In the order to try: the import's current connection first. */
  nids: string[];
  /** MGS, MDT0000, OST0003 …: what this server serves to this file system. */
  targets: string[];
}

export interface ServerList {
  servers: LustreServer[];
  /** What could not be read as NIDs: `fs`, and why (quoted input clipped). */
  unparsed: Array<{ fs: string; why: string }>;
}

/** A NID as it may be printed: 2.16+ quote them in YAML; a stray CR or blank is not part of it. */
function cleanNid(raw: string): string {
  let s = raw.trim();
  if (s.length >= 2 && ((s.startsWith('"') && s.endsWith('"')) || (s.startsWith("'") && s.endsWith("'")))) s = s.slice(1, -1).trim();
  return s;
}

function clip(s: string): string {
  return JSON.stringify(s.length > 120 ? `${s.slice(0, 119)}…` : s);
}

/**
 * The MGS NIDs of one mount source, grouped by failover node, or why not.
 * A failover separator is a `:` right after a NID's `@net` (an IPv6 address
 * holds `:` too, but never right after `@net`).
 */
export function parseMountSource(source: string): { fs: string; nodes: string[][] } | { fs: string; why: string } {
  const at = source.lastIndexOf(":/");
  if (at <= 0) return { fs: "", why: `mount source ${clip(source)} has no ":/fsname"` };
  const fs = source.slice(at + 2).split("/")[0] ?? "";
  if (!/^[A-Za-z0-9_-]{1,8}$/.test(fs)) return { fs, why: `mount source ${clip(source)}: file system name ${clip(fs)} is not a Lustre fsname` };
  const nodes: string[][] = [];
  for (const node of source.slice(0, at).split(/(?<=@[a-z][a-z0-9]*):/)) {
    const nids = node.split(",").map(cleanNid);
    const bad = nids.find((n) => !isValidNid(n));
    if (bad !== undefined) return { fs, why: `mount source ${clip(source)}: ${clip(bad)} is not a NID` };
    nodes.push(nids);
  }
  return { fs, nodes };
}

/** `lustrefs-OST0003-osc-ffff8f0a3b5c9000` → fs `lustrefs`, target `OST0003`, or null. */
function deviceTarget(device: string): { fs: string; target: string; role: ServerRole } | null {
  const m = /^(.+)-((?:MDT|OST)[0-9a-fA-F]{4,8})-(?:mdc|osc)-[0-9a-fA-F]+$/.exec(device);
  if (!m) return null;
  return { fs: m[1]!, target: m[2]!, role: m[2]!.startsWith("MDT") ? "mds" : "oss" };
}

interface ImportNids {
  device: string;
  failover: string[];
  current: string;
}

/**
 * The `name:`, `failover_nids:` and `current_connection:` of each MDC/OSC
 * import block (every version 2.12–2.17 prints them; values on the key's own
 * line). MGC blocks are left out: the MGS comes from the mount sources.
 */
export function parseImportNids(text: string): ImportNids[] {
  const out: ImportNids[] = [];
  let cur: ImportNids | null = null;
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const header = /^(osc|mdc|mgc)\.(.+)\.import=/.exec(line);
    if (header) {
      cur = header[1] === "mgc" ? null : { device: header[2]!, failover: [], current: "" };
      if (cur) out.push(cur);
      continue;
    }
    if (!cur) continue;
    const t = line.trim();
    if (t.startsWith("failover_nids:")) {
      const list = /\[(.*)\]/.exec(t);
      cur.failover = list ? list[1]!.split(",").map(cleanNid).filter((n) => n.length > 0) : [];
    } else if (t.startsWith("current_connection:")) {
      const v = cleanNid(t.slice("current_connection:".length));
      cur.current = v === "<none>" ? "" : v;
    }
  }
  return out;
}

/**
 * The servers of every Lustre mount in `mounts` (a /proc/PID/mounts text) and
 * every import in `imports` (the `lctl.imports` listing; "" when there is
 * none to read), one entry per (file system, role, NID set).
 */
export function lustreServers(mounts: string, imports: string): ServerList {
  const servers = new Map<string, LustreServer>();
  const unparsed: ServerList["unparsed"] = [];
  const add = (fs: string, role: ServerRole, nids: string[], target: string) => {
    const key = `${fs}\0${role}\0${[...nids].sort().join(",")}`;
    let s = servers.get(key);
    if (!s) servers.set(key, (s = { fs, role, nids: [...nids], targets: [] }));
    if (!s.targets.includes(target)) s.targets.push(target);
  };
  const seenSources = new Set<string>();
  for (const m of parseMountTable(mounts)) {
    if (m.fsType !== "lustre") continue;
    const source = unescapeMountField(m.device);
    if (seenSources.has(source)) continue;
    seenSources.add(source);
    const p = parseMountSource(source);
    if ("why" in p) {
      unparsed.push({ fs: p.fs, why: p.why });
      continue;
    }
    // One MGS, however many failover nodes: any node answering is enough.
    add(p.fs, "mgs", p.nodes.flat(), "MGS");
  }
  for (const imp of parseImportNids(imports)) {
    const d = deviceTarget(imp.device);
    if (!d) continue;
    const nids = [...new Set([imp.current, ...imp.failover].filter((n) => n.length > 0))];
    const bad = nids.find((n) => !isValidNid(n));
    if (bad !== undefined || nids.length === 0) {
      unparsed.push({ fs: d.fs, why: `${d.target}: ${bad === undefined ? "no NID in its import" : `${clip(bad)} is not a NID`}` });
      continue;
    }
    add(d.fs, d.role, nids, d.target);
  }
  return { servers: [...servers.values()], unparsed };
}
