// Renders the Lustre client state a node shows to `lctl get_param` and
// `lfs getname`, in the byte formats of each Lustre version
// (../../../../shared/LUSTRE-CLIENT-HEALTH.md §1, §2, §4, §7), from a small
// description. Plain JS, Node built-ins only: the fake tools' scenarios, the
// test helper (gateway/test/helpers/fake-lustre.ts) and the plugin fixture
// generator (plugins/fixtures/lustre/generate.mjs) all render through here, so
// every consumer sees the same bytes.
//
// A description:
//   { version: "2.12" | "2.15" | "2.15.7" | "2.16" | "2.17" | "master",
//     mgsNid: "10.0.0.2@tcp",            // the MGC is MGC<mgsNid>, shared by all mounts
//     mgcState: "FULL",
//     filesystems: [{ name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: "/mnt/lustre",
//                     mdts: 1, osts: 2,
//                     states: { "MDT0000": "FULL", "OST0001": "DISCONN" },     // default FULL
//                     history: { "OST0001": [[1764100000, "DISCONN"], …] },  // default CONNECTING, FULL at `since`
//                     servers: { "OST0001": ["10.0.0.5@tcp", "10.0.0.6@tcp"] } }] } // default [mgsNid]
//   `since` (epoch seconds, default 1764000000) stamps the default histories.
//   `historyLength` (default 2): entries in a default history. Beyond the 2
//   of a first connect, the import went idle and reconnected (IDLE,
//   CONNECTING, FULL …) before `since`, so 16 renders the full ring of
//   IMP_STATE_HIST_LEN entries a long-mounted client shows (bench sizes).
//   A non-FULL state adds its entry at `since + 600`, as before.
//   `mgcHistory`: the MGC's entries (default as for a target, from `mgcState`).

const VERSIONS = new Set(["2.12", "2.15", "2.15.7", "2.16", "2.17", "master"]);

/** Targets of one file system: MDT0000…, OST0000… (4 hex digits, as Lustre prints them). */
export function targetNames(fs) {
  const hex = (i) => i.toString(16).toUpperCase().padStart(4, "0");
  const out = [];
  for (let i = 0; i < (fs.mdts ?? 1); i++) out.push(`MDT${hex(i)}`);
  for (let i = 0; i < (fs.osts ?? 1); i++) out.push(`OST${hex(i)}`);
  return out;
}

function deviceName(fs, target) {
  const kind = target.startsWith("MDT") ? "mdc" : "osc";
  return { kind, obd: `${fs.name}-${target}-${kind}-${fs.instance}` };
}

function nid(v, n) {
  return v === "2.16" || v === "2.17" || v === "master" ? `"${n}"` : n;
}

function usecUnit(v) {
  return v === "2.12" || v === "2.15" ? "usec" : "usecs";
}

function importFlags(v, flags) {
  if (v !== "master") return `[ ${flags.join(", ")} ]`;
  return `[ ${flags.map((f) => `IMPF_${f.toUpperCase()}`).join(", ")} ]`;
}

/** One `import:` block, exactly as lprocfs_import_seq_show prints it for that version. */
export function importBlock(v, { obd, target, state, server, failover, mgc = false, extra = [] }) {
  if (!VERSIONS.has(v)) throw new Error(`unknown Lustre version ${v}`);
  const up = state === "FULL" || state === "IDLE";
  const lines = [
    "import:",
    `    name: ${obd}`,
    `    target: ${target}`,
    `    state: ${state}`,
    "    connect_flags: [ write_grant, server_lock, version, request_portal, adaptive_timeouts, lru_resize, fid_is_enabled, version_recovery, full20, layout_lock, 64bithash, jobstats, lvb_type, bulk_mbits ]",
    "    connect_data:",
    "       flags: 0x20405af0e3440478",
    "       instance: 3",
    `       target_version: ${v === "master" ? "2.17.50" : v.length === 4 ? `${v}.0` : v}.0`,
  ];
  if (!mgc) lines.push("       max_brw_size: 4194304", "       ibits_known: 0x7f");
  lines.push(`    import_flags: ${importFlags(v, up ? ["replayable", "pingable", "connect_tried"] : ["invalid", "replayable", "pingable", "connect_tried"])}`);
  lines.push("    connection:", `       failover_nids: [ ${(failover ?? [server]).map((n) => nid(v, n)).join(", ")} ]`);
  if (v === "2.16") lines.push("       nids_stats:", `          ${nid(v, server)}: { connects: 1, replied: ${up ? 1 : 0}, uptodate: ${up}, sec_ago: 42 }`);
  if (v === "2.17" || v === "master") {
    lines.push("       nids_stats:", `          ${nid(v, server)}: { connects: 1, replied: ${up ? 1 : 0}, uptodate: ${up ? "uptodate" : "unreachable"}, sec_ago: 42 }`);
  }
  lines.push(
    `       current_connection: ${up ? nid(v, server) : "<none>"}`,
    "       connection_attempts: 1",
    "       generation: 1",
    "       in-progress_invalidations: 0",
    `       idle: ${up ? 3 : 140} sec`,
  );
  lines.push(...extra);
  if (!mgc) {
    lines.push(
      "    rpcs:",
      "       inflight: 0",
      "       unregistering: 0",
      "       timeouts: 0",
      `       avg_waittime: 612 ${usecUnit(v)}`,
      "    service_estimates:",
      "       services: 1 sec",
      "       network: 1 sec",
      "    transactions:",
      "       last_replay: 0",
      "       peer_committed: 0",
      "       last_checked: 0",
      "    write_data_averages:",
      "       bytes_per_rpc: 1048576",
      `       ${usecUnit(v)}_per_rpc: 1900`,
      "       MB_per_sec: 551.88",
    );
  }
  return lines.join("\n") + "\n";
}

/** `lctl get_param` without -n: `name=value`, or `name=` and the value on the next lines (all import/state values are multi-line). */
export function param(name, value) {
  return `${name}=\n${value}`;
}

function stateOf(fs, target) {
  return fs.states?.[target] ?? "FULL";
}

/** The last `length` entries of a connect at `since - 3600` followed by idle/reconnect cycles, ending FULL at `since`. */
function connectedHistory(since, length) {
  if (length <= 2) return [[since, "CONNECTING"], [since, "FULL"]];
  const out = [];
  // Walk back from FULL at `since`: FULL ← CONNECTING ← IDLE ← CONNECTING (idle disconnect) ← FULL …
  const cycle = ["FULL", "CONNECTING", "IDLE", "CONNECTING"];
  let t = since;
  for (let i = 0; out.length < length; i++) {
    out.push([t, cycle[i % 4]]);
    if (i % 4 === 1) t -= 20; // idle_timeout seconds idle before the reconnect
    else if (i % 4 === 3) t -= 40; // in use before going idle
  }
  return out.reverse();
}

function defaultHistory(state, since, length) {
  const h = connectedHistory(since, state === "FULL" ? length : length - 1);
  return state === "FULL" ? h : [...h, [since + 600, state]];
}

function historyOf(fs, target, since, length) {
  return fs.history?.[target] ?? defaultHistory(stateOf(fs, target), since, length);
}

function stateBlock(state, hist) {
  return [`current_state: ${state}`, "state_history:", ...hist.slice(-16).map(([ts, s]) => ` - [ ${ts}, ${s} ]`)].join("\n") + "\n";
}

/** `lctl get_param osc.*.import mdc.*.import mgc.*.import`: osc first, then mdc, then mgc, as the command line orders them. */
export function renderImports(desc) {
  const v = desc.version ?? "2.15";
  const server = desc.mgsNid ?? "10.0.0.2@tcp";
  const osc = [];
  const mdc = [];
  for (const fs of desc.filesystems ?? []) {
    for (const t of targetNames(fs)) {
      const { kind, obd } = deviceName(fs, t);
      // fs.servers: target → its server's NIDs (current connection first, then its failover partners).
      const nids = fs.servers?.[t] ?? [server];
      const text = param(`${kind}.${obd}.import`, importBlock(v, { obd, target: `${fs.name}-${t}_UUID`, state: stateOf(fs, t), server: nids[0], failover: nids }));
      (kind === "osc" ? osc : mdc).push(text);
    }
  }
  const mgc = (desc.filesystems ?? []).length > 0 ? [param(`mgc.MGC${server}.import`, importBlock(v, { obd: `MGC${server}`, target: "MGS", state: desc.mgcState ?? "FULL", server, mgc: true }))] : [];
  return [...osc, ...mdc, ...mgc].join("");
}

/** `lctl get_param osc.*.state mdc.*.state mgc.*.state`: osc, mdc, then the MGC (one per MGS, shared by its mounts). */
export function renderStates(desc) {
  const since = desc.since ?? 1764000000;
  const length = desc.historyLength ?? 2;
  const osc = [];
  const mdc = [];
  for (const fs of desc.filesystems ?? []) {
    for (const t of targetNames(fs)) {
      const { kind, obd } = deviceName(fs, t);
      (kind === "osc" ? osc : mdc).push(param(`${kind}.${obd}.state`, stateBlock(stateOf(fs, t), historyOf(fs, t, since, length))));
    }
  }
  const server = desc.mgsNid ?? "10.0.0.2@tcp";
  const mgcState = desc.mgcState ?? "FULL";
  const mgc = (desc.filesystems ?? []).length > 0 ? [param(`mgc.MGC${server}.state`, stateBlock(mgcState, desc.mgcHistory ?? defaultHistory(mgcState, since, length)))] : [];
  return [...osc, ...mdc, ...mgc].join("");
}

/** `lfs getname`: `<fsname>-<instance> <mountpoint>` per mount. */
export function renderGetname(desc) {
  return (desc.filesystems ?? []).map((fs) => `${fs.name}-${fs.instance} ${fs.mountpoint}\n`).join("");
}

/** What lctl prints on stderr when a parameter matches nothing (no Lustre mounted, module not loaded). */
export function noSuchParam(pattern) {
  return `error: get_param: param_path '${pattern.replaceAll(".", "/")}': No such file or directory\n`;
}
