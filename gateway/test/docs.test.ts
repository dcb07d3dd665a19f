// docs/flags.md is the flag specs' own page (generated; stale fails here), the
// README links it, the README's commands exist and work (the quick start's
// `npx buf curl` lines run against a real gateway, the demo node, on its socket
// and its port), and --help lists every flag.
import fs from "node:fs";
import path from "node:path";
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { FLAGS, flagsMarkdown } from "../src/cli/flags.js";
import { ROOT, runProbegate, startGatewayProcess } from "./helpers/gateway-process.js";

const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");

describe("docs/flags.md", () => {
  const page = fs.readFileSync(path.join(ROOT, "docs", "flags.md"), "utf8");

  it("is what the flag specs generate (run `npm run docs:flags` after changing a flag), and the README's Flags section links it", () => {
    expect(page).toBe(flagsMarkdown());
    expect(readme).toContain("](docs/flags.md)");
  });

  it("lists every flag, and only those, in the specs' order", () => {
    const documented = [...page.matchAll(/^\| `--([a-z.-]+)/gm)].map((m) => m[1]);
    expect(documented).toEqual(FLAGS.map((f) => f.name));
  });
});

describe("README", () => {
  it("names the test command .ci/run runs, and the two-step quick start", () => {
    const ci = fs.readFileSync(path.join(ROOT, ".ci/run"), "utf8");
    expect(ci).toMatch(/^npm test( \|\| status=\$\?)?$/m);
    expect(readme).toContain("npm ci && npm start");
    expect(readme).toMatch(/^npm test\b/m);
  });

  it("--help mentions every flag", async () => {
    const help = (await runProbegate(["--help"])).stdout;
    for (const f of FLAGS) expect(help).toContain(`--${f.name}`);
  });

  it("links only to files that exist", () => {
    for (const m of readme.matchAll(/\]\(([^)#]+)\)/g)) {
      if (/^https?:/.test(m[1])) continue;
      expect(fs.existsSync(path.join(ROOT, m[1])), m[1]).toBe(true);
    }
  });
});

/** Splits a one-line command as sh would for the quick start's simple forms: words and '...' strings. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

describe("README quick start: npx buf curl", () => {
  const start = readme.indexOf("## Quick start");
  const quickStart = readme.slice(start, readme.indexOf("\n## ", start + 1));
  const lines = quickStart.split("\n").filter((l) => l.startsWith("npx buf curl "));

  it("runs against the demo node's socket and port as written (with the test's socket and port)", async () => {
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.some((l) => l.includes("--unix-socket /tmp/csi.sock"))).toBe(true);
    const gw = await startGatewayProcess(["--demo=healthy"]);
    try {
      // The quick start shows a ready node: wait for the first evaluation round.
      for (let i = 0; i < 100; i++) {
        const r = await fetch(`http://${gw.http}/readyz`).catch(() => null);
        if (r?.status === 200) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      const buf = path.join(ROOT, "node_modules/.bin/buf");
      const answers = lines.map((line) => {
        const args = words(line.replaceAll("/tmp/csi.sock", gw.socket).replaceAll("127.0.0.1:29763", gw.http)).slice(2);
        const r = spawnSync(buf, args, { encoding: "utf8", timeout: 60_000 });
        expect(r.status, `${line}\n${r.stderr}`).toBe(0);
        return { line, out: r.stdout };
      });
      for (const { line, out } of answers) {
        if (line.endsWith("/csi.v1.Identity/Probe")) expect(JSON.parse(out), line).toEqual({ ready: true });
        else if (line.endsWith("/grpc.health.v1.Health/Check")) expect(JSON.parse(out), line).toEqual({ status: "SERVING" });
        else if (line.includes("--list-methods")) expect(out.split("\n"), line).toEqual(expect.arrayContaining(["csi.v1.Identity/Probe", "grpc.health.v1.Health/Check"]));
        else throw new Error(`no expectation for: ${line}`);
      }
    } finally {
      await gw.stop();
    }
  });
});

describe("docs/health.md: its npx buf curl lines", () => {
  const page = fs.readFileSync(path.join(ROOT, "docs", "health.md"), "utf8");
  const lines = page.split("\n").filter((l) => l.startsWith("npx buf curl "));

  it("answer from the demo node's socket as the page says, in Connect, gRPC and gRPC-Web alike", async () => {
    expect(lines.map((l) => l.slice(l.lastIndexOf("/") + 1))).toEqual(["NodeGetStorageHealth", "NodeGetVolumeHealth"]);
    const gw = await startGatewayProcess(["--demo=healthy"]);
    try {
      const buf = path.join(ROOT, "node_modules/.bin/buf");
      const run = (args: string[]) => spawnSync(buf, args, { encoding: "utf8", timeout: 60_000 });
      const asWritten = (line: string) => run(words(line.replaceAll("/tmp/csi.sock", gw.socket)).slice(2));
      // Storage: healthy once the first round has run.
      let storage = asWritten(lines[0]!);
      for (let i = 0; i < 50 && storage.stdout.trim() !== "{}"; i++) {
        await new Promise((res) => setTimeout(res, 200));
        storage = asWritten(lines[0]!);
      }
      expect(storage.status, storage.stderr).toBe(0);
      expect(JSON.parse(storage.stdout)).toEqual({});
      // Volume: first answer without entries, then the evaluation's (the path is not mounted on the demo node).
      const first = asWritten(lines[1]!);
      expect(first.status, first.stderr).toBe(0);
      expect(JSON.parse(first.stdout).volumeHealth.volumeId).toBe("vol-1");
      let statuses: Array<{ status: string; reason: string }> | undefined;
      for (let i = 0; i < 100 && !statuses; i++) {
        const r = asWritten(lines[1]!);
        expect(r.status, r.stderr).toBe(0);
        statuses = JSON.parse(r.stdout).volumeHealth.healthStatuses;
        if (!statuses) await new Promise((res) => setTimeout(res, 200));
      }
      expect(statuses).toEqual([expect.objectContaining({ status: "INACCESSIBLE", reason: "NotMounted" })]);
      // The same calls over gRPC and gRPC-Web (the page's lines use Connect, buf curl's default): the same answers.
      for (const protocol of ["--protocol grpc --http2-prior-knowledge ", "--protocol grpcweb "]) {
        for (const [i, line] of lines.entries()) {
          const other = run(words(line.replaceAll("/tmp/csi.sock", gw.socket).replace("npx buf curl ", `npx buf curl ${protocol}`)).slice(2));
          expect(other.status, other.stderr).toBe(0);
          expect(JSON.parse(other.stdout), `${protocol}${i}`).toEqual(JSON.parse(asWritten(line).stdout));
        }
      }
    } finally {
      await gw.stop();
    }
  });
});
