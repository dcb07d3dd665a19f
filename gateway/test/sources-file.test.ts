// --sources FILE: loading, validation and error messages.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BUILTIN_SOURCE_NAMES, SourceCatalog, SourcesFileError } from "../src/engine/sources/index.js";

const silent = pino({ level: "silent" });
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "probegate-sources-file-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function load(yaml: string): Promise<SourceCatalog> {
  const file = join(dir, "sources.yaml");
  writeFileSync(file, yaml);
  return SourceCatalog.create({ procfs: dir, sysfs: dir, sourcesFile: file, logger: silent });
}

async function loadError(yaml: string): Promise<string> {
  const err = await load(yaml).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SourcesFileError);
  const message = (err as Error).message;
  expect(message).toContain(join(dir, "sources.yaml"));
  return message;
}

const VALID = `
# extra sources for this cluster
- name: lnetctl.peer_show
  argv: [lnetctl, peer, show]
  timeout: 3s
  ttl: 2s
- name: node-version
  argv:
    - ${process.execPath}
    - --version
  timeout: 1500ms
  ttl: 1m
  maxOutput: 64KiB
`;

describe("--sources file", () => {
  it("adds command sources after the built-ins", async () => {
    const catalog = await load(VALID);
    expect(catalog.names().slice(-2)).toEqual(["lnetctl.peer_show", "node-version"]);
    const described = catalog.describe().filter((d) => d.name === "lnetctl.peer_show" || d.name === "node-version");
    expect(described).toEqual([
      {
        name: "lnetctl.peer_show",
        kind: "command",
        argv: ["lnetctl", "peer", "show"],
        timeoutMs: 3000,
        ttlMs: 2000,
        params: [],
      },
      {
        name: "node-version",
        kind: "command",
        argv: [process.execPath, "--version"],
        timeoutMs: 1500,
        ttlMs: 60_000,
        params: [],
      },
    ]);
    const r = await catalog.read("node-version", {});
    expect(r).toMatchObject({ ok: true, exitCode: 0, stdout: `${process.version}\n` });
  });

  it("accepts an empty list", async () => {
    expect((await load("[]\n")).names()).toEqual([...BUILTIN_SOURCE_NAMES]);
  });

  it("names the file when it cannot be read", async () => {
    const missing = join(dir, "missing.yaml");
    await expect(
      SourceCatalog.create({ procfs: dir, sysfs: dir, sourcesFile: missing, logger: silent }),
    ).rejects.toThrow(`cannot read sources file ${missing}: ENOENT`);
  });

  it("reports YAML syntax errors with their line", async () => {
    const message = await loadError("- name: a\n  argv: [x\n  timeout: 3s\n");
    expect(message).toMatch(/sources\.yaml:\d+: YAML syntax: /);
  });

  it("requires a list", async () => {
    expect(await loadError("name: a\nargv: [x]\n")).toMatch(/sources\.yaml:1: expected a list of sources/);
    expect(await loadError("")).toContain("expected a list of sources");
  });

  it("points at the entry, line and field of a bad value", async () => {
    const message = await loadError(
      ["- name: ok-one", "  argv: [lnetctl, peer, show]", "  timeout: 3s", "  ttl: 2s", "- name: Bad Name", "  argv: [x]", "  timeout: 3s", "  ttl: 2s", ""].join(
        "\n",
      ),
    );
    expect(message).toContain(`sources.yaml:5: entry 1 ("Bad Name"): name: must match`);
    expect(message).not.toContain("entry 0");
  });

  it.each([
    ["shadowing a built-in", "- {name: lnetctl.ping, argv: [x], timeout: 1s, ttl: 1s}", /entry 0 \("lnetctl\.ping"\): name: shadows the built-in source lnetctl\.ping/],
    [
      "a duplicate name",
      "- {name: a, argv: [x], timeout: 1s, ttl: 1s}\n- {name: a, argv: [y], timeout: 1s, ttl: 1s}",
      /:2: entry 1 \("a"\): name: duplicates entry 0/,
    ],
    ["a relative program path", "- {name: a, argv: [./tool], timeout: 1s, ttl: 1s}", /entry 0 \("a"\): argv\.0: "\.\/tool" must be a bare command name/],
    ["a program path with a directory", "- {name: a, argv: [bin/tool], timeout: 1s, ttl: 1s}", /argv\.0: "bin\/tool" must be/],
    ["an option as program", "- {name: a, argv: [-x], timeout: 1s, ttl: 1s}", /argv\.0: "-x" must be/],
    ["an empty argv", "- {name: a, argv: [], timeout: 1s, ttl: 1s}", /argv: must name a program/],
    ["a non-string argument", "- {name: a, argv: [x, {y: 1}], timeout: 1s, ttl: 1s}", /argv\.1: /],
    ["a timeout without unit", "- {name: a, argv: [x], timeout: 3, ttl: 1s}", /timeout: needs a unit, e\.g\. "3s"/],
    ["a malformed timeout", "- {name: a, argv: [x], timeout: 3 sec, ttl: 1s}", /timeout: "3 sec" is not a duration/],
    ["a timeout out of range", "- {name: a, argv: [x], timeout: 10m, ttl: 1s}", /timeout: must be between 1 ms and 300000 ms/],
    ["a missing ttl", "- {name: a, argv: [x], timeout: 1s}", /entry 0 \("a"\): ttl: /],
    ["a misspelt key", "- {name: a, argv: [x], timout: 1s, ttl: 1s}", /unknown key\(s\) "timout"/],
    ["a bad maxOutput", "- {name: a, argv: [x], timeout: 1s, ttl: 1s, maxOutput: 1GB}", /maxOutput: "1GB" is not a size/],
    ["a huge maxOutput", "- {name: a, argv: [x], timeout: 1s, ttl: 1s, maxOutput: 1024MiB}", /maxOutput: must be between/],
    ["an entry that is not a map", "- lnetctl peer show", /entry 0: /],
    ["a missing timeout, saying what is required", "- {name: a, argv: [x], ttl: 1s}", /entry 0 \("a"\): timeout: required, a duration such as 5s/],
    ["a missing name, saying what is required", "- {argv: [x], timeout: 1s, ttl: 1s}", /entry 0: name: required, a source name such as lnet\.peer_show/],
    ["neither argv nor a file glob", "- {name: a, ttl: 1s}", /needs argv \(a command, .*\) or a read-only file source \(sysfs: GLOB or procfs: GLOB\)/],
    ["argv and a glob together", "- {name: a, argv: [x], sysfs: class/net/*/operstate, timeout: 1s, ttl: 1s}", /sysfs: takes one of argv, sysfs and procfs/],
    ["an absolute glob", "- {name: a, sysfs: /etc/*}", /sysfs: must be relative to the root/],
    ["a .. segment", "- {name: a, procfs: 1/../../etc/passwd}", /procfs: "\.\." segments are refused/],
    ["a ** glob", "- {name: a, sysfs: class/**/state}", /sysfs: \*\* is not supported/],
    ["a character class", "- name: a\n  sysfs: class/net/eth[01]/operstate", /only \* and \? are supported/],
    ["a timeout on a file source", "- {name: a, sysfs: class/net/*/operstate, timeout: 1s}", /timeout: only for argv sources/],
    ["maxFiles on a command", "- {name: a, argv: [x], timeout: 1s, ttl: 1s, maxFiles: 3}", /maxFiles: only for sysfs and procfs sources/],
  ])("refuses %s", async (_what, yaml, pattern) => {
    expect(await loadError(`${yaml}\n`)).toMatch(pattern);
  });

  it("adds read-only file sources by glob, relative to --path.sysfs / --path.procfs", async () => {
    const catalog = await load("- {name: ib.port_state, sysfs: class/infiniband/*/ports/*/state}\n- {name: p.status, procfs: 1/status, ttl: 5s, maxFiles: 1}\n");
    expect(catalog.describe().slice(-2)).toEqual([
      { name: "ib.port_state", kind: "file", path: join(dir, "class/infiniband/*/ports/*/state"), ttlMs: 1000, params: [] },
      { name: "p.status", kind: "file", path: join(dir, "1/status"), ttlMs: 5000, params: [] },
    ]);
  });

  it("reports every problem at once", async () => {
    const message = await loadError("- {name: A, argv: [x], timeout: 1s, ttl: 1s}\n- {name: b, argv: [], timeout: 1s, ttl: 1}\n");
    expect(message.split("\n").filter((l) => l.includes("entry"))).toHaveLength(3);
  });
});
