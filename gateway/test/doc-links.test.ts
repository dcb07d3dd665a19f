// Every relative link in every tracked Markdown file resolves: the file or
// directory exists and, for a link into a Markdown page, the #anchor is one of
// its headings. The docs are spread over README.md, docs/ and the READMEs the
// tree keeps beside what they describe, so a moved section must take its links along.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/gateway-process.js";
import { brokenLinks, slug } from "./helpers/md-links.js";

const tracked = execFileSync("git", ["ls-files", "-z", "--", "*.md"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter(Boolean);

describe("Markdown links", () => {
  it("every relative link and #anchor in every tracked .md resolves", () => {
    expect(tracked).toContain("README.md");
    expect(tracked.length).toBeGreaterThan(20);
    const broken = brokenLinks(ROOT, tracked).map((b) => `${b.file}:${b.line}: ${b.target} (${b.why})`);
    expect(broken).toEqual([]);
  });

  it("anchors are GitHub's: lower case, code marks and punctuation dropped, spaces to hyphens", () => {
    expect(slug("Running the host's `lnetctl` / `lctl`: nsenter")).toBe("running-the-hosts-lnetctl--lctl-nsenter");
    expect(slug("ABI v1 in one page")).toBe("abi-v1-in-one-page");
    expect(slug("When LNet is configured (`lnetConfiguredAt`)")).toBe("when-lnet-is-configured-lnetconfiguredat");
  });

  it("reports a missing file, a missing heading, a link to a moved section and a link rewritten inside code, and ignores links inside code", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "probegate-links-"));
    try {
      mkdirSync(path.join(dir, "docs"));
      writeFileSync(path.join(dir, "docs/page.md"), "# Page\n\n## Present section\n\ntext\n");
      writeFileSync(
        path.join(dir, "README.md"),
        [
          "# Top",
          "[ok](docs/page.md#present-section) [ok too](#top) [dir](docs/) [web](https://example.com/x.md)",
          "[gone](docs/missing.md)",
          "[moved](docs/page.md#old-section)",
          "`[in code](nowhere.md)`",
          "`^[a-z](../docs/[a-z]{0,3})?$` rewritten",
          "```",
          "[in a fence](nowhere.md)",
          "```",
        ].join("\n"),
      );
      const broken = brokenLinks(dir, ["README.md", "docs/page.md"]);
      expect(broken).toEqual([
        { file: "README.md", line: 3, target: "docs/missing.md", why: "no such file" },
        { file: "README.md", line: 4, target: "docs/page.md#old-section", why: "no heading #old-section in docs/page.md" },
        { file: "README.md", line: 6, target: "^[a-z](../docs/[a-z]{0,3})?$", why: "relative link syntax inside a code span (a link rewrite that did not skip code?)" },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the plugin-name rule the docs state", () => {
  it("is the regular expression the manifest schema enforces, in every page that states it", async () => {
    const { PLUGIN_NAME_RE } = await import("../src/runtime/schema.js");
    for (const page of ["docs/plugins.md", "plugins/ABI.md"]) {
      const text = readFileSync(path.join(ROOT, page), "utf8");
      // The rule stands after the manifest key it governs: "`name` matches `…`", "`name`: `…`".
      const stated = [...text.matchAll(/`name`[^`\n]{0,12}`(\^[^`]*\$)`/g)].map((m) => m[1]);
      expect(stated.length, page).toBeGreaterThan(0);
      for (const rule of stated) expect(rule, page).toBe(PLUGIN_NAME_RE.source);
    }
  });
});
