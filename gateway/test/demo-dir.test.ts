// --demo copies its scenario into the temp dir: removed when the gateway
// exits, and leftovers of demo gateways that are gone are removed at start.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startGatewayProcess, tempDir } from "./helpers/gateway-process.js";

const tmp = tempDir("probegate-demo-tmp-");
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const demoDirs = () => fs.readdirSync(tmp).filter((n) => n.startsWith("probegate-demo-")).sort();

function fakeDemoDir(name: string, owner: object | null, ageMs: number): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(path.join(dir, "proc"), { recursive: true });
  fs.mkdirSync(path.join(dir, "sys"), { recursive: true });
  if (owner) fs.writeFileSync(path.join(dir, ".probegate-demo-owner"), JSON.stringify(owner));
  const t = new Date(Date.now() - ageMs);
  fs.utimesSync(dir, t, t);
  return dir;
}

describe("--demo temp directories", () => {
  it("removes stale ones it owns at start and its own on exit", async () => {
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    fakeDemoDir("probegate-demo-healthy-dead", { pid: dead, host: os.hostname() }, 0);
    fakeDemoDir("probegate-demo-healthy-live", { pid: process.pid, host: os.hostname() }, 0);
    fakeDemoDir("probegate-demo-healthy-other-host", { pid: dead, host: `not-${os.hostname()}` }, 0);
    fakeDemoDir("probegate-demo-healthy-legacy-idle", null, 3_600_000);
    fakeDemoDir("probegate-demo-healthy-legacy-busy", null, 0);
    fs.mkdirSync(path.join(tmp, "probegate-demo-not-a-demo"));
    const gw = await startGatewayProcess(["--demo=healthy"], { env: { TMPDIR: tmp } });
    const mine = demoDirs().filter((n) => /^probegate-demo-healthy-[A-Za-z0-9]{6}$/.test(n));
    expect(mine).toHaveLength(1);
    expect(fs.existsSync(path.join(tmp, mine[0]!, "proc", "modules"))).toBe(true);
    expect(demoDirs()).toEqual(
      [
        mine[0]!,
        "probegate-demo-healthy-legacy-busy",
        "probegate-demo-healthy-live",
        "probegate-demo-healthy-other-host",
        "probegate-demo-not-a-demo",
      ].sort(),
    );
    expect(gw.logs().find((l) => l.msg === "removed demo directories left by gateways that are gone")?.dirs).toEqual(
      expect.arrayContaining([path.join(tmp, "probegate-demo-healthy-dead"), path.join(tmp, "probegate-demo-healthy-legacy-idle")]),
    );
    expect(await gw.stop("SIGTERM")).toBe(0);
    expect(fs.existsSync(path.join(tmp, mine[0]!))).toBe(false);
  }, 60_000);
});
