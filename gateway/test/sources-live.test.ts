// Issue 17, item 5: the --sources file is watched and applied live, and
// read-only file sources by glob, through a real gateway process.
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { fakeLnet, type FakeLnet } from "./helpers/fake-lnet.js";
import { runProbegate, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { compileHostile } from "./hostile/build.js";

const running: GatewayProcess[] = [];
const nodes: FakeLnet[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
  for (const n of nodes.splice(0)) n.cleanup();
});

let show: Uint8Array;
beforeAll(async () => {
  show = await compileHostile("showsource");
}, 120_000);

const COMMAND = `- name: node.version\n  argv: [${JSON.stringify(process.execPath)}, --version]\n  timeout: 5s\n  ttl: 2s\n`;
const IB = "- name: ib.port_state\n  sysfs: class/infiniband/*/ports/*/state\n  ttl: 1s\n";

function ibTree(sysfs: string) {
  for (const [dev, port, state] of [
    ["mlx5_0", "1", "4: ACTIVE\n"],
    ["mlx5_1", "1", "1: DOWN\n"],
  ] as const) {
    const d = path.join(sysfs, "class/infiniband", dev, "ports", port);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, "state"), state);
  }
}

async function start(sourcesYaml: string) {
  const node = fakeLnet({ base: "healthy" });
  nodes.push(node);
  ibTree(node.sysfs);
  const plugins = tempDir("probegate-src-plugins-");
  fs.writeFileSync(path.join(plugins, "show-source.wasm"), show);
  const file = path.join(tempDir("probegate-src-"), "sources.yaml");
  fs.writeFileSync(file, sourcesYaml);
  const gw = await startGatewayProcess(
    [`--path.procfs=${node.procfs}`, `--path.sysfs=${node.sysfs}`, `--plugins-dir=${plugins}`, `--sources=${file}`, "--check-interval=1s", "--log-level=info"],
    { env: node.env },
  );
  running.push(gw);
  return { gw, file, node };
}

async function until(gw: GatewayProcess, pred: (text: string) => boolean, what: string, timeoutMs = 30_000) {
  const start = Date.now();
  let last = "";
  while (Date.now() - start < timeoutMs) {
    last = await (await fetch(`http://${gw.http}/readyz?verbose`)).text();
    if (pred(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}; last /readyz?verbose:\n${last}`);
}

/** show-source's message: the check input it was given (JSON, escaped once more). */
async function showMessage(gw: GatewayProcess): Promise<string> {
  const json = await (await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } })).json();
  return json.conditions.find((c: { name: string }) => c.name === "show-source")?.message ?? "";
}

describe("--sources, live", () => {
  it("a valid edit applies within seconds (a plugin refused for its unknown source loads), and glob file sources give PATH CONTENT lines", async () => {
    const { gw, file } = await start(COMMAND);
    await until(gw, (t) => t.includes("show-source.wasm refused: UnknownSource: unknown source ib.port_state"), "refused at first");
    fs.writeFileSync(file, COMMAND + IB);
    const t = await until(gw, (x) => x.includes("[+]show-source ok"), "the edit applied");
    expect(t).not.toContain("UnknownSource");
    expect(await showMessage(gw)).toContain("class/infiniband/mlx5_0/ports/1/state 4: ACTIVE\\nclass/infiniband/mlx5_1/ports/1/state 1: DOWN\\n");
    expect(gw.stderr()).toContain('"msg":"sources file applied"');
  });

  it("a bad edit keeps the last good set and says which file, line and key, and what is required", async () => {
    const { gw, file } = await start(COMMAND + IB);
    await until(gw, (t) => t.includes("[+]show-source ok"), "running");
    fs.writeFileSync(file, `${COMMAND}${IB}- name: lnet.peer_show\n  argv: [lnetctl, peer, show]\n  ttl: 2s\n`);
    const t = await until(gw, (x) => x.includes("SourcesInvalid"), "the edit refused");
    expect(t).toContain(`[!]${file} refused: SourcesInvalid: invalid sources file ${file}: ${file}:8: entry 2 ("lnet.peer_show"): timeout: required, a duration such as 5s; the last good set of sources stays in use`);
    // The last good set keeps working.
    await new Promise((r) => setTimeout(r, 1000));
    await until(gw, (x) => x.includes("[+]show-source ok"), "still ok");
    expect(await showMessage(gw)).toContain("mlx5_0/ports/1/state 4: ACTIVE");

    fs.writeFileSync(file, COMMAND + IB);
    await until(gw, (x) => !x.includes("SourcesInvalid"), "the problem clears once the file is fixed");
  });

  it("a missing key of a file source and a misspelt one are named", async () => {
    const { gw, file } = await start(COMMAND);
    await until(gw, (t) => t.includes("UnknownSource"), "running");
    fs.writeFileSync(file, `${COMMAND}- name: ib.port_state\n  sysf: class/infiniband/*/ports/*/state\n`);
    const t = await until(gw, (x) => x.includes("SourcesInvalid"), "refused");
    expect(t).toContain(`${file}:5: entry 1 ("ib.port_state"): unknown key(s) "sysf"`);
    expect(t).toContain("needs argv (a command, e.g. argv: [lnetctl, peer, show]) or a read-only file source (sysfs: GLOB or procfs: GLOB)");
  });
});

describe("file sources stay inside their root", () => {
  it("a .. segment and a symlink out of the tree are refused (live: the last good set stays; at start: exit 2)", async () => {
    const { gw, file, node } = await start(COMMAND + IB);
    await until(gw, (t) => t.includes("[+]show-source ok"), "running");
    fs.writeFileSync(file, `${COMMAND}- name: ib.port_state\n  sysfs: class/../../etc/*\n`);
    let t = await until(gw, (x) => x.includes("SourcesInvalid"), "dot-dot refused");
    expect(t).toContain(`sysfs: ".." segments are refused: a file source stays inside its root`);

    // A planted link: a port "state" that points at a file outside sysfs.
    const outside = path.join(tempDir("probegate-outside-"), "secret");
    fs.writeFileSync(outside, "not for plugins\n");
    const evil = path.join(node.sysfs, "class/infiniband/evil0/ports/1");
    fs.mkdirSync(evil, { recursive: true });
    fs.symlinkSync(outside, path.join(evil, "state"));
    fs.writeFileSync(file, COMMAND + IB.replace("ttl: 1s", "ttl: 2s"));
    t = await until(gw, (x) => x.includes("resolves to"), "escape refused");
    expect(t).toContain(`class/infiniband/evil0/ports/1/state resolves to ${fs.realpathSync(outside)}, outside ${node.sysfs}; refused`);
    // The last good set still runs, and its reads refuse the planted link too: the secret never reaches the plugin.
    const t0 = Date.now();
    let message = "";
    while (Date.now() - t0 < 30_000 && !message.includes("EXDEV")) {
      const json = await (await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } })).json();
      message = json.conditions.find((c: { name: string }) => c.name === "show-source")?.message ?? "";
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(message).toContain("EXDEV: class/infiniband/evil0/ports/1/state resolves to");
    expect(message).not.toContain("not for plugins");

    // At start the same file is a usage error.
    const r = await runProbegate([`--path.sysfs=${node.sysfs}`, `--path.procfs=${node.procfs}`, `--sources=${file}`, "--http-endpoint=off", `--csi-endpoint=unix://${tempDir()}/x.sock`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("resolves to");
  });
});
