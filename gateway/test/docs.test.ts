// docs/flags.md is the flag specs' own page (generated; stale fails here), the
// README's commands exist, and --help lists every flag.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { FLAGS, flagsMarkdown } from "../src/cli/flags.js";
import { ROOT, runProbegate } from "./helpers/gateway-process.js";

const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");

describe("docs/flags.md", () => {
  const page = fs.readFileSync(path.join(ROOT, "docs", "flags.md"), "utf8");

  it("is what the flag specs generate (run `npm run docs:flags` after changing a flag)", () => {
    expect(page).toBe(flagsMarkdown());
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
