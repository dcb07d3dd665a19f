// The lnet.server_pings source: LNet-level pings (`lnetctl ping`) of the
// servers this node's Lustre file systems use (server-nids.ts), answered from
// memory. The cost is bounded whatever the node looks like:
// - a NID is pinged at most once per interval, less a tenth of it up to 2 s
//   so that reads at the same cadence do not skip every other one (its last
//   answer, good or bad, is what every read until then reports);
// - at most one ping per NID is ever outstanding (exec/one-per-key.ts): a
//   ping still running past its bound is reported `hung` and kept, never
//   started again beside itself, and a cap on all outstanding pings (hung
//   ones included) refuses new ones (EAGAIN) past it;
// - at most `maxPerRead` pings start per read (ping servers, not targets;
//   the rest wait for a later read and say `pending`);
// - a read waits at most `waitMs` for the pings it started: a ping not yet
//   answered says `pending` (a round is never held for LNet's timeout).
// A server whose first NID answered is not pinged on its other NIDs (either
// NID of a failover pair answering is enough).
//
// One line per server (plugins/ABI.md, "lnet.server_pings"):
//   server FS ROLE TARGET[,TARGET…] NID=RESULT[ NID=RESULT…]
//   unparsed FS "WHY"
// RESULT: ok/MS | timeout | fail/ERRNO | hung/MS | error/CODE | pending | skipped

import { performance } from "node:perf_hooks";
import { OnePerKey, type KeyedRun } from "../../exec/one-per-key.js";
import type { ProcessRoom } from "../../exec/room.js";
import type { CommandResult } from "../../exec/run-command.js";
import type { Produced, SourceDef } from "./definitions.js";
import { lustreServers, type LustreServer, type ServerList } from "./server-nids.js";

export type PingResult =
  | { kind: "ok"; ms: number }
  | { kind: "timeout" }
  | { kind: "fail"; errno: number }
  | { kind: "hung"; ms: number }
  | { kind: "error"; code: string }
  | { kind: "pending" }
  | { kind: "skipped" };

/** The bounds of the pings (defaults: SERVER_PING_DEFAULTS in catalog.ts). */
export interface ServerPingSettings {
  /** A NID is pinged again only this long after its last ping started. */
  intervalMs: number;
  /**
   * `lnetctl ping --timeout=S`: whole seconds (jt_ping: `1000 * atol(optarg)`
   * ms). 2 to 179 only: the kernel takes 0 (and anything from 180 s) as its
   * 180 s DEFAULT_PEER_TIMEOUT, and from 2.16 the netlink path does not even
   * send 1 s, lnetctl's own default (yaml_lnet_ping: `timeout != 1000`), so
   * the kernel waits 180 s then too.
   */
  timeoutSeconds: number;
  /** Past this a ping still running is reported hung (and kept). */
  boundMs: number;
  /** A read waits this long at most for the pings it started. */
  waitMs: number;
  /** Pings started per read. */
  maxPerRead: number;
  /** Pings outstanding at once, hung ones included. */
  maxOutstanding: number;
}

export interface ServerPingerOptions extends ServerPingSettings {
  room: Pick<ProcessRoom, "start" | "env">;
  /** Monotonic ms (tests drive it). */
  now?: () => number;
  /** Told of each ping that ends: its NID's result and latency (metrics). */
  onPing?: (result: PingResult["kind"], seconds: number) => void;
  onChange?: (outstanding: number) => void;
}

/**
 * errnos of a ping the peer did not answer (the path or the peer is down), as
 * opposed to LNet itself failing here (100 ENETDOWN: LNet not up on this node).
 * lnet_ping() (lnet/lnet/api-ni.c) turns a ping with no reply into -EIO in
 * 2.12–2.15 whatever the cause; 2.16+ keep the send's status when there is one
 * (-ETIMEDOUT for an MD unlinked at the ping's timeout, lib-msg.c
 * lnet_msg_detach_md; the error a failed send ended with) and say -EIO
 * otherwise.
 */
const PEER_DOWN_ERRNOS = new Set([5, 101, 103, 104, 111, 112, 113]);
const ETIMEDOUT = 110;
/**
 * strerror() texts lnetctl puts in `descr` ("failed to ping NID: TEXT"). Up to
 * 2.15 (and 2.16+ without the netlink family) the `errno:` line is lnetctl's
 * own LUSTRE_CFG_RC_BAD_PARAM, -1, for every failed ping
 * (liblnetconfig.c infra_ping_nid), so the cause is only in this text.
 */
const ERRNO_TEXTS: ReadonlyArray<[string, number]> = [
  ["Input/output error", 5],
  ["No such device", 19],
  ["Network is down", 100],
  ["Network is unreachable", 101],
  ["Software caused connection abort", 103],
  ["Connection reset by peer", 104],
  ["Connection timed out", ETIMEDOUT],
  ["Connection refused", 111],
  ["Host is down", 112],
  ["No route to host", 113],
];
const OUTPUT_CAP = 64 * 1024;
/** A NID's next ping is due this much before its interval is over (at most a tenth of it). */
const DUE_EARLY_MAX_MS = 2_000;
/** NIDs whose last answer is remembered; past it the oldest go (a node has far fewer servers). */
const MAX_REMEMBERED = 4096;

interface Answer {
  result: PingResult;
  startedAt: number;
}

export class ServerPinger {
  private readonly pings: OnePerKey<PingResult>;
  private readonly answers = new Map<string, Answer>();
  /** When each outstanding ping started (performance-clock ms of `now`). */
  private readonly started = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly opts: ServerPingerOptions) {
    if (!Number.isInteger(opts.timeoutSeconds) || opts.timeoutSeconds < 2 || opts.timeoutSeconds > 179) {
      throw new RangeError(`lnetctl ping --timeout must be whole seconds from 2 to 179 (0, 1 and 180+ mean 180 s to LNet), not ${opts.timeoutSeconds}`);
    }
    this.now = opts.now ?? (() => performance.now());
    this.pings = new OnePerKey<PingResult>({ maxOutstanding: opts.maxOutstanding, ...(opts.onChange ? { onChange: opts.onChange } : {}) });
  }

  count(): number {
    return this.pings.count();
  }

  stop(graceMs = 1000): Promise<void> {
    return this.pings.stop(graceMs);
  }

  /** Each server's NIDs with their results, pinging what is due (within the per-read cap). Never rejects. */
  async servers(list: readonly LustreServer[]): Promise<PingResult[][]> {
    const budget = { left: this.opts.maxPerRead };
    return Promise.all(list.map((s) => this.server(s, budget)));
  }

  private async server(s: LustreServer, budget: { left: number }): Promise<PingResult[]> {
    const out: PingResult[] = [];
    for (const nid of s.nids) {
      if (out.some((r) => r.kind === "ok")) {
        out.push({ kind: "skipped" });
        continue;
      }
      out.push(await this.nid(nid, budget));
    }
    return out;
  }

  private async nid(nid: string, budget: { left: number }): Promise<PingResult> {
    const last = this.answers.get(nid);
    const now = this.now();
    const running = this.pings.has(nid);
    // Due a little early: at the defaults the storage round comes every 30 s
    // too, and a round starting a few ms sooner after the last ping than that
    // one did after its own round would otherwise wait for the next round
    // (measured: 17 of 20 pings a minute, bench/server-ping-cost.ts).
    const early = Math.min(DUE_EARLY_MAX_MS, this.opts.intervalMs / 10);
    if (!running && last && now - last.startedAt < this.opts.intervalMs - early) return last.result;
    if (!running) {
      if (budget.left <= 0) return last?.result ?? { kind: "pending" };
      budget.left--;
    }
    const a = await this.pings.run(nid, this.opts.waitMs, () => this.start(nid));
    if (a.kind === "refused") return { kind: "error", code: a.code };
    if (a.kind === "done") return a.value;
    const since = this.started.get(nid);
    const ms = since === undefined ? a.ms : this.now() - since;
    if (ms >= this.opts.boundMs) return { kind: "hung", ms };
    // Still within LNet's own timeout: the last answer stands until this one comes.
    return last?.result ?? { kind: "pending" };
  }

  private remember(nid: string, result: PingResult, startedAt: number): void {
    if (!this.answers.has(nid) && this.answers.size >= MAX_REMEMBERED) this.answers.delete(this.answers.keys().next().value!);
    this.answers.delete(nid);
    this.answers.set(nid, { result, startedAt });
  }

  private start(nid: string): KeyedRun<PingResult> {
    const startedAt = this.now();
    this.started.set(nid, startedAt);
    const run: KeyedRun<PingResult> = { kill: undefined, done: Promise.resolve<PingResult>({ kind: "error", code: "EIO" }) };
    const t0 = performance.now();
    run.done = this.run(nid, run).then((r) => {
      this.started.delete(nid);
      this.remember(nid, r, startedAt);
      this.opts.onPing?.(r.kind, (performance.now() - t0) / 1000);
      return r;
    });
    return run;
  }

  private async run(nid: string, run: KeyedRun<PingResult>): Promise<PingResult> {
    const t0 = performance.now();
    const child = await this.opts.room.start({
      argv: ["lnetctl", "ping", `--timeout=${this.opts.timeoutSeconds}`, nid],
      label: "lnetctl ping",
      maxOutputBytes: OUTPUT_CAP,
    });
    if (!child.ok) {
      if (child.stage === "program") return { kind: "error", code: "ENOENT" };
      if (child.stage === "stopped") return { kind: "error", code: "ECANCELED" };
      return { kind: "error", code: /^(E[A-Z]+):/.exec(child.error)?.[1] ?? "EIO" };
    }
    if (this.pings.isStopped) {
      child.kill();
      return { kind: "error", code: "ECANCELED" };
    }
    run.kill = child.kill;
    return interpretPing(nid, await child.result, performance.now() - t0);
  }
}

/**
 * A NID as lnetctl prints it back (libcfs_nid2str): lower case, and a net
 * numbered 0 without its number (`10.1.0.4@tcp0` is printed `10.1.0.4@tcp`,
 * `@o2ib0` `@o2ib`), so that a mount source's spelling still matches the reply.
 */
export function canonicalNid(nid: string): string {
  const s = nid.toLowerCase();
  const at = s.lastIndexOf("@");
  if (at < 0) return s;
  const net = s.slice(at + 1);
  return /[a-z]0$/.test(net) ? `${s.slice(0, at + 1)}${net.slice(0, -1)}` : s;
}

/**
 * A finished `lnetctl ping --timeout=S NID` (lnetctl.c jt_ping, 2.12–2.17):
 * - an answer: exit 0 and a `ping:` list whose item names the peer's `primary
 *   nid` and its NIs (`peer ni:` up to 2.15, `peer_ni:` from the 2.16 netlink
 *   path) — ok when one of them is the NID pinged (canonicalNid);
 * - no answer: exit 255 (jt_ping returns -1) and an error document `manage:`
 *   → `- ping:` → `errno:`/`descr:`, on stderr up to 2.15 (errno -1, the
 *   cause in descr's strerror text) and on stdout from 2.16 (the kernel's
 *   errno); read on either stream;
 * - anything else is a garbled answer (EBADMSG), never ok — an lnetctl that
 *   does not know `--timeout` returns 0 having printed nothing (jt_ping's
 *   getopt default case).
 */
export function interpretPing(nid: string, r: CommandResult, ms: number): PingResult {
  const text = `${r.stdout}\n${r.stderr}`;
  const errno = /^\s*errno:\s*(-?[0-9]+)\s*$/m.exec(text);
  if (errno) {
    const code = Math.abs(Number(errno[1]));
    const cause = ERRNO_TEXTS.find(([t]) => text.includes(t))?.[1];
    // errno -1 is lnetctl's own code, not an errno: the cause is descr's text.
    const n = code === 1 && cause !== undefined ? cause : code;
    if (n === ETIMEDOUT) return { kind: "timeout" };
    if (PEER_DOWN_ERRNOS.has(n)) return { kind: "fail", errno: n };
    return { kind: "error", code: `errno${n}` };
  }
  const notRun = r.error === null ? null : /^(E[A-Z0-9]+): cannot run /.exec(r.error);
  if (r.exitCode === null && notRun) return { kind: "error", code: notRun[1]! };
  if (r.exitCode === 0 && !r.truncated && /^\s*ping:\s*$/m.test(r.stdout)) {
    const want = canonicalNid(nid);
    const named = [...r.stdout.matchAll(/^\s*-?\s*(?:primary nid|nid):\s*"?([^"\s]+)"?\s*$/gm)].map((m) => canonicalNid(m[1]!));
    if (named.includes(want)) return { kind: "ok", ms };
  }
  return { kind: "error", code: "EBADMSG" };
}

export function formatPing(r: PingResult): string {
  switch (r.kind) {
    case "ok":
    case "hung":
      return `${r.kind}/${Math.round(r.ms)}`;
    case "fail":
      return `fail/${r.errno}`;
    case "error":
      return `error/${r.code}`;
    default:
      return r.kind;
  }
}

type Read = (name: "proc.mounts" | "lctl.imports") => Promise<Pick<Produced, "ok" | "truncated" | "stdout" | "error">>;

/** The source: reads the mount table and the imports through the catalog (cached, shared), pings, prints. */
export function serverPingsSource(name: string, pinger: ServerPinger, read: Read, ttlMs: number, maxOutputBytes: number): SourceDef {
  // The listing of a 64-OST mount is parsed again only when it or the mount
  // table changed: parsing it was the largest item of a storage round's CPU
  // profile (docs/performance.md), and it changes far less often than it is read.
  let last: { mounts: string; imports: string; list: ServerList } | undefined;
  const servers = (mounts: string, imports: string): ServerList => {
    if (last?.mounts !== mounts || last.imports !== imports) last = { mounts, imports, list: lustreServers(mounts, imports) };
    return last.list;
  };
  return {
    name,
    kind: "file",
    ttlMs,
    params: [],
    path: "lnetctl ping of the servers named by proc.mounts and lctl.imports",
    replay: { kind: "generated", maxOutputBytes },
    prepare: () => ({
      key: "",
      run: async (): Promise<Produced> => {
        const mounts = await read("proc.mounts");
        if (!mounts.ok || mounts.truncated) {
          // Which servers matter cannot be told: said as a failure, never as "none".
          return { ok: false, exitCode: null, stdout: "", stderr: "", error: `EIO: the mount table could not be read: ${mounts.error ?? "truncated"}`, truncated: false, outcome: "error" };
        }
        // No Lustre mount: the imports listing is not run at all (lustre-gate.ts).
        const imports = await read("lctl.imports");
        const list = servers(mounts.stdout, imports.ok ? imports.stdout : "");
        const results = await pinger.servers(list.servers);
        let text = "";
        list.servers.forEach((s, i) => {
          const r = results[i]!;
          text += `server ${s.fs} ${s.role} ${s.targets.join(",")} ${s.nids.map((n, k) => `${n}=${formatPing(r[k]!)}`).join(" ")}\n`;
        });
        for (const u of list.unparsed) text += `unparsed ${u.fs || "-"} ${JSON.stringify(u.why)}\n`;
        if (!imports.ok && !/^not run:/.test(imports.error ?? "")) text += `unparsed - ${JSON.stringify(`the imports could not be read (${imports.error ?? "failed"}): MDS/OSS servers unknown`)}\n`;
        if (imports.ok && imports.truncated) text += `unparsed - ${JSON.stringify("the imports listing was cut at its cap: servers of the imports past it are not pinged")}\n`;
        const truncated = text.length > maxOutputBytes;
        return { ok: true, exitCode: null, stdout: truncated ? text.slice(0, text.lastIndexOf("\n", maxOutputBytes) + 1) : text, stderr: "", error: null, truncated, outcome: "ok" };
      },
    }),
  };
}

/** Peers named per read at most (a StorageClass carries an MGS pair; a few file systems' MGSes at most). */
const MAX_PEERS = 16;

/**
 * The lnet.peer_pings source: the NIDs of fact `config.peers` (the reading
 * plugin's `peers:`, checks/config-facts.ts), pinged by the same pinger as
 * the servers (same interval per NID, one outstanding per NID), one line each:
 *   peer NID=RESULT
 */
export function peerPingsSource(name: string, pinger: ServerPinger, ttlMs: number, maxOutputBytes: number, valid: (nid: string) => boolean): SourceDef {
  const FACT = "config.peers";
  return {
    name,
    kind: "file",
    ttlMs,
    params: [FACT],
    path: `lnetctl ping of each NID in {${FACT}}`,
    replay: { kind: "generated", maxOutputBytes },
    prepare(facts) {
      const v = Object.hasOwn(facts, FACT) ? facts[FACT] : undefined;
      if (typeof v !== "string" || v === "") return { error: `fact ${FACT} is not available` };
      const nids = [...new Set(v.split(",").map((s) => s.trim()))];
      if (nids.length > MAX_PEERS) return { error: `fact ${FACT} names ${nids.length} NIDs (at most ${MAX_PEERS})` };
      const bad = nids.find((n) => !valid(n));
      if (bad !== undefined) return { error: `fact ${FACT} is not a list of valid NIDs: ${JSON.stringify(bad.slice(0, 80))}` };
      return {
        key: nids.join(","),
        run: async (): Promise<Produced> => {
          // Each peer on its own: require any|all is the plugin's to judge.
          const results = await pinger.servers(nids.map((nid) => ({ fs: "-", role: "mgs", nids: [nid], targets: [] })));
          const text = nids.map((nid, i) => `peer ${nid}=${formatPing(results[i]![0]!)}\n`).join("");
          return { ok: true, exitCode: null, stdout: text, stderr: "", error: null, truncated: false, outcome: "ok" };
        },
      };
    },
  };
}
