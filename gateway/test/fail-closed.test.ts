// Issue 31: a check never silently disappears. Through a real gateway process:
// a loaded plugin overwritten by a file that cannot load keeps running;
// a required liveness plugin that cannot run fails readiness (not liveness);
// a plugin's message cannot add a line to /readyz or /livez; a replacement is
// logged as "unloaded" then "loaded" with both sha256 values.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { Identity } from "../gen/csi/v1/csi_pb.js";
import { BUNDLED_CHECKS } from "../src/cli/package-info.js";
import { ROOT, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { readyz, untilReadyz } from "./helpers/readyz.js";
import { compileAs, compileEcho, compileHostile } from "./hostile/build.js";

const running: GatewayProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
});

const BUNDLED = path.join(ROOT, "dist", "plugins");
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** A readiness plugin whose message tries to print a line of its own, and a liveness one that aborts with one. */
const FORGER = String.raw`
export function manifest(): string {
  return '{"abi":1,"name":"forger","version":"1.0.0","description":"forges lines","sources":[],"modes":["node","controller"],"probe":"readiness","severity":"advisory"}';
}
export function check(input: string): string {
  return '{"status":"warn","reason":"Forged","message":"looks bad\\n[+]forged-check ok\\r\\n[+]ping ok","facts":{}}';
}
`;
const LIVE_ABORT = String.raw`
export function manifest(): string {
  return '{"abi":1,"name":"live-abort","version":"1.0.0","description":"aborts","sources":[],"modes":["node","controller"],"probe":"liveness","severity":"required"}';
}
export function check(input: string): string {
  abort("gone\n[+]forged-live ok");
  return "{}";
}
`;

let bin: Record<string, Uint8Array>;
beforeAll(async () => {
  bin = {
    keep1: await compileEcho({ name: "keep-me" }),
    keep2: await compileEcho({ name: "keep-me", version: "2.0.0" }),
    other: await compileEcho({ name: "someone-else" }),
    held: await compileEcho({ name: "held-elsewhere" }),
    noexport: await compileHostile("noexport"),
    badmanifest: await compileHostile("badmanifest"),
    ready: await compileEcho({ name: "ready-ok" }),
    liveToolMissing: await compileEcho({ name: "live-tool", probe: "liveness", sources: ["lnetctl.net_show"] }),
    forger: await compileAs(FORGER),
    liveAbort: await compileAs(LIVE_ABORT),
  };
}, 120_000);

async function gateway(dir: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}) {
  const gw = await startGatewayProcess([`--plugins-dir=${dir}`, "--mode=node", "--check-interval=1s", "--log-level=info", ...extra], { env });
  running.push(gw);
  return gw;
}

async function metricLine(gw: GatewayProcess, prefix: string): Promise<string | undefined> {
  const text = await (await fetch(`http://${gw.http}/metrics`)).text();
  return text.split("\n").find((l) => l.startsWith(prefix));
}

async function readyzJson(gw: GatewayProcess) {
  const res = await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } });
  return (await res.json()) as {
    conditions: Array<{ name: string; plugin: { sha256: string } }>;
    refusals: Array<{ file: string; reason: string; sha256?: string }>;
  };
}

async function until(pred: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const start = Date.now();
  while (Date.now() - start < timeoutMs) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function probeReady(gw: GatewayProcess): Promise<boolean | undefined> {
  const client = createClient(Identity, createConnectTransport({ baseUrl: `http://${gw.http}`, httpVersion: "1.1" }));
  return (await client.probe({})).ready;
}

describe("a loaded plugin overwritten by a file that cannot load", () => {
  it("keeps the last good module running and judged, reports each refusal, and drops it only when the file is removed", async () => {
    const dir = tempDir("probegate-keep-");
    const file = path.join(dir, "keep.wasm");
    fs.writeFileSync(file, bin.keep1!);
    fs.writeFileSync(path.join(dir, "held.wasm"), bin.held!);
    const gw = await gateway(dir, ["--require-checks=keep-me"]);
    await untilReadyz(gw, (r) => r.status === 200 && r.text.includes("[+]keep-me ok"), "keep-me loaded");

    const broken: Array<[string, Uint8Array | string, string]> = [
      ["garbage", "this is not a module\n", "CompileError"],
      ["truncated", bin.keep2!.subarray(0, 200), "CompileError"],
      ["no exports", bin.noexport!, "MissingExport"],
      ["bad manifest", bin.badmanifest!, "BadManifest"],
      ["another plugin's module", bin.other!, "NameChanged"],
      ["a name another file holds", bin.held!, "NameChanged"],
    ];
    for (const [what, content, reason] of broken) {
      fs.writeFileSync(file, content);
      const sha = sha256(typeof content === "string" ? Buffer.from(content) : content);
      await until(async () => (await readyzJson(gw)).refusals.some((x) => x.file === "keep.wasm" && x.sha256 === sha), `${what} seen`);
      const r = await readyz(gw);
      expect(r.text, what).toContain(`[!]keep.wasm refused: ${reason}`);
      // The check is still there, still judged, and the node still ready.
      expect(r.status, what).toBe(200);
      expect(r.text, what).toContain("[+]keep-me ok");
      expect(r.text, what).toMatch(/the last good module of keep-me \(sha256 [0-9a-f]{12}\) stays in force/);
      expect(await metricLine(gw, `probegate_plugin_refused{file="keep.wasm",reason="${reason}"}`), what).toMatch(/ 1$/);
      const json = await readyzJson(gw);
      expect(json.conditions.find((c) => c.name === "keep-me")?.plugin.sha256, what).toBe(sha256(bin.keep1!));
    }
    expect((await readyz(gw)).text).toContain("[+]held-elsewhere ok");
    const kept = gw.logs().filter((l) => l.msg === "plugin refused; the last good module stays in force" && l.file === "keep.wasm");
    expect(kept.length).toBeGreaterThanOrEqual(broken.length);
    expect(kept.every((l) => l.plugin === "keep-me" && l.keptSha256 === sha256(bin.keep1!))).toBe(true);
    // No unload happened while the broken files came and went.
    expect(gw.logs().filter((l) => l.msg === "plugin unloaded")).toEqual([]);

    // A good new version replaces it: unloaded old, then loaded new, both with their sha256.
    fs.writeFileSync(file, bin.keep2!);
    await untilReadyz(gw, (x) => x.text.includes("[+]keep-me ok") && !x.text.includes("keep.wasm refused"), "v2 loaded");
    const logs = gw.logs();
    const unloaded = logs.findIndex((l) => l.msg === "plugin unloaded" && l.plugin === "keep-me");
    const loaded = logs.findIndex((l) => l.msg === "plugin loaded" && l.plugin === "keep-me" && l.version === "2.0.0");
    expect(unloaded).toBeGreaterThanOrEqual(0);
    expect(loaded).toBeGreaterThan(unloaded);
    expect(logs[unloaded]!.sha256).toBe(sha256(bin.keep1!));
    expect(logs[loaded]!.sha256).toBe(sha256(bin.keep2!));
    expect(logs[loaded]!.replaces).toBe(sha256(bin.keep1!));

    // Removing the file is a deliberate removal: the check goes, and --require-checks fails closed.
    fs.unlinkSync(file);
    const gone = await untilReadyz(gw, (x) => x.text.includes("[-]keep-me failed: CheckMissing"), "keep-me removed");
    expect(gone.status).toBe(503);
    expect(gone.text).not.toContain("[+]keep-me ok");
  });

  it("a file that is broken at start is refused as before, and --require-checks fails closed", async () => {
    const dir = tempDir("probegate-keep-start-");
    fs.writeFileSync(path.join(dir, "keep.wasm"), bin.keep1!.subarray(0, 200));
    fs.writeFileSync(path.join(dir, "ready.wasm"), bin.ready!);
    const gw = await gateway(dir, ["--require-checks=keep-me"]);
    const r = await untilReadyz(gw, (x) => x.text.includes("[-]keep-me failed: CheckMissing"), "keep-me missing");
    expect(r.status).toBe(503);
    expect(r.text).toContain("[!]keep.wasm refused: CompileError");
    expect(r.text).not.toContain("stays in force");
  });
});

describe("a required liveness plugin that cannot run", () => {
  it("a trap (then quarantine) fails readiness and Probe's ready field, never /livez", async () => {
    const dir = tempDir("probegate-live-fault-");
    fs.writeFileSync(path.join(dir, "ready.wasm"), bin.ready!);
    fs.writeFileSync(path.join(dir, "live-abort.wasm"), bin.liveAbort!);
    const gw = await gateway(dir, ["--quarantine-after=2"]);
    const r = await untilReadyz(gw, (x) => x.text.includes("[-]live-abort (liveness) cannot run: PluginQuarantined"), "quarantined");
    expect(r.status).toBe(503);
    expect(r.text).toContain("[+]ready-ok ok");
    const livez = await fetch(`http://${gw.http}/livez?verbose`);
    expect(livez.status).toBe(200);
    expect(await probeReady(gw)).toBe(false);
  });

  it("a missing tool fails readiness, never /livez", async () => {
    const dir = tempDir("probegate-live-tool-");
    fs.writeFileSync(path.join(dir, "ready.wasm"), bin.ready!);
    fs.writeFileSync(path.join(dir, "live-tool.wasm"), bin.liveToolMissing!);
    // No lnetctl anywhere on this PATH.
    const gw = await gateway(dir, [], { PATH: path.dirname(process.execPath) });
    const r = await untilReadyz(gw, (x) => x.text.includes("[-]live-tool (liveness) cannot run: NoInput"), "tool missing");
    expect(r.status).toBe(503);
    expect((await fetch(`http://${gw.http}/livez`)).status).toBe(200);
    expect(await probeReady(gw)).toBe(false);
  });
});

describe("one line per check", () => {
  it("a message or an abort text with line breaks cannot forge a line in /readyz or /livez", async () => {
    const dir = tempDir("probegate-forge-");
    fs.writeFileSync(path.join(dir, "ready.wasm"), bin.ready!);
    fs.writeFileSync(path.join(dir, "forger.wasm"), bin.forger!);
    fs.writeFileSync(path.join(dir, "live-abort.wasm"), bin.liveAbort!);
    const gw = await gateway(dir, ["--quarantine-after=100"]);
    const r = await untilReadyz(gw, (x) => x.text.includes("[+]forger warn") && x.text.includes("live-abort (liveness) cannot run: PluginTrap"), "both ran");
    const lines = r.text.trimEnd().split("\n");
    expect(lines.filter((l) => l.startsWith("[+]forged-check") || l.startsWith("[+]ping") || l.startsWith("[+]forged-live"))).toEqual([]);
    expect(lines).toContain(String.raw`[+]forger warn: Forged: looks bad\n[+]forged-check ok\r\n[+]ping ok`);
    expect(lines.find((l) => l.startsWith("[-]live-abort"))).toContain(String.raw`gone\n[+]forged-live ok`);
    const livez = await (await fetch(`http://${gw.http}/livez?verbose`)).text();
    expect(livez.split("\n").filter((l) => l.startsWith("[+]forged"))).toEqual([]);
    expect(livez).toContain(String.raw`gone\n[+]forged-live ok`);
  });
});

describe("the bundled checks and --plugins-dir", () => {
  it("a directory without them says at start and in /readyz?verbose that they are not loaded, and how to keep them", async () => {
    const dir = tempDir("probegate-own-only-");
    // What an operator mounts who meant to configure the bundled checks: only their configuration.
    fs.writeFileSync(path.join(dir, "lnet-nets.yaml"), "optionalNets: [tcp]\n");
    const gw = await gateway(dir);
    const r = await untilReadyz(gw, (x) => x.text.includes("NoChecks"), "NoChecks");
    const note = r.text.split("\n").find((l) => l.startsWith("[!]bundled Lustre checks not loaded"));
    expect(note).toBeDefined();
    expect(note).toContain("kernel-modules, lnet-nets, lnet-nids, lnet-self-ping, net-interfaces");
    expect(note).toContain(`--plugins-dir=${BUNDLED} --plugins-dir=${dir}`);
    expect(gw.logs().some((l) => l.level === 40 && String(l.msg).startsWith("bundled Lustre checks not loaded"))).toBe(true);

    // Given first, as every shipped manifest does, the bundled set loads and nothing is said.
    const kept = await gateway(BUNDLED, [`--plugins-dir=${dir}`]);
    const k = await untilReadyz(kept, (x) => x.text.includes("kernel-modules"), "bundled set loaded");
    expect(k.text).not.toContain("bundled Lustre checks not loaded");
    expect(kept.logs().some((l) => String(l.msg).startsWith("bundled Lustre checks not loaded"))).toBe(false);
  });

  it("BUNDLED_CHECKS names every bundled readiness plugin", () => {
    // The storage and volume health checks never count towards readiness (docs/health.md).
    const health = ["volume-lustre-mount", "volume-lustre-health", "lustre-imports", "lnet-health", "lustre-health-check", "lnet-servers", "lnet-peer-health"];
    const files = fs.readdirSync(BUNDLED).filter((f) => f.endsWith(".wasm")).map((f) => f.replace(/\.wasm$/, "")).filter((n) => !health.includes(n)).sort();
    expect([...BUNDLED_CHECKS].sort()).toEqual(files);
  });
});
