// Every flag the manifests and the image pass to probegate is one the real CLI
// accepts: checked against `probegate --help` (built by `npm run build`), and
// by handing the CLI the exact argument list (with kubelet's $(VAR) expansion)
// followed by --help, which it parses and validates before printing help.
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BUILT, DEPLOY, NOT_BUILT_MESSAGE, REPO } from "./lib/paths.js";
import { render } from "./lib/render.js";
import { containersOf, expand, flagsOf, isProbegate, pods } from "./lib/workloads.js";

const BIN = path.join(REPO, "bin/probegate.js");

function helpFlags(): Set<string> {
  const text = execFileSync(process.execPath, [BIN, "--help"], { encoding: "utf8", timeout: 30_000 });
  return new Set([...text.matchAll(/^ {2}--([a-z][a-z0-9.-]*)/gm)].map((m) => m[1]!));
}

/** The probegate argument lists the manifests and the Dockerfile use. */
function argLists(): { where: string; args: string[] }[] {
  const out: { where: string; args: string[] }[] = [];
  for (const target of ["base", "overlays/example"]) {
    for (const p of pods(render(target).docs)) {
      for (const c of containersOf(p.spec).filter(isProbegate)) {
        out.push({ where: `${target} ${p.owner.kind}/${c.name}`, args: (c.args as string[]).map((a) => expand(a, c)) });
      }
    }
  }
  const dockerfile = readFileSync(path.join(DEPLOY, "Dockerfile"), "utf8");
  const cmd = /^CMD (\[.*\])$/m.exec(dockerfile);
  if (cmd) out.push({ where: "Dockerfile CMD", args: JSON.parse(cmd[1]!) });
  return out;
}

describe.skipIf(!BUILT)("probegate flags in deploy/", () => {
  let accepted: Set<string>;
  let lists: { where: string; args: string[] }[];
  beforeAll(() => {
    accepted = helpFlags();
    lists = argLists();
  });

  it("--help lists the flags this deployment relies on", () => {
    for (const f of ["mode", "csi-endpoint", "http-endpoint", "driver-name", "plugins-dir", "path.procfs", "path.sysfs", "command-prefix"]) {
      expect(accepted.has(f), f).toBe(true);
    }
  });

  it("every flag in every probegate container's args is in --help", () => {
    expect(lists.length).toBe(5);
    for (const { where, args } of lists) {
      for (const a of args) expect(a.startsWith("--"), `${where}: ${a} (use --name=value)`).toBe(true);
      for (const name of flagsOf(args).keys()) expect(accepted.has(name), `${where}: --${name}`).toBe(true);
    }
  });

  it("the CLI parses every argument list as given (values included)", () => {
    for (const { where, args } of lists) {
      const r = spawnSync(process.execPath, [BIN, ...args, "--help"], { encoding: "utf8", timeout: 30_000 });
      expect(r.stderr, where).toBe("");
      expect(r.status, `${where}: ${r.stderr}`).toBe(0);
    }
  });

  it("rejects what it does not know (so the checks above mean something)", () => {
    const r = spawnSync(process.execPath, [BIN, "--no-such-flag=1", "--help"], { encoding: "utf8", timeout: 30_000 });
    expect(r.status).not.toBe(0);
  });
});

describe.skipIf(BUILT)("probegate flags in deploy/ (not built)", () => {
  it("is skipped until `npm run build`", () => console.warn(NOT_BUILT_MESSAGE));
});
