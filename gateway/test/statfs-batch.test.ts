// The statfs prober's batches against stat outputs it must not trust: a
// batch whose output cannot be matched to its paths tells nothing, and each
// path is then probed on its own; a path with a newline never joins one.

import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { StatfsProber } from "../src/engine/sources/statfs.js";
import { ProcessRoom } from "../src/exec/room.js";
import { tempDir } from "./helpers/gateway-process.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * A prober over a fake stat: `body` is shell run after the arguments up to
 * `--` are shifted off (the paths are "$@"); every call logs `PID COUNT` (its
 * number of paths) first.
 */
function prober(body: string) {
  const dir = tempDir("probegate-statfs-batch-");
  dirs.push(dir);
  const bin = join(dir, "bin");
  mkdirSync(bin);
  const log = join(dir, "calls.log");
  writeFileSync(join(bin, "stat"), `#!/bin/sh\nshift 4\necho "$$ $#" >> '${log}'\n${body}\n`);
  chmodSync(join(bin, "stat"), 0o755);
  const p = new StatfsProber({
    boundMs: 2000,
    intervalMs: 0,
    maxOutstanding: 8,
    room: new ProcessRoom({ procfs: "/proc", env: { PATH: `${bin}:${process.env.PATH}` } }),
    mountTable: async () => undefined,
  });
  const calls = () => readFileSync(log, "utf8").trim().split("\n").map((l) => Number(l.split(" ")[1]));
  return { p, calls };
}

const OK = { kind: "ok", fsType: "bd00bd0", access: "rw" };

describe("statfs batches", () => {
  it.each([
    ["a line too many", `for p; do echo "bd00bd0 $p"; done; echo "bd00bd0 /mnt/extra"`],
    ["a line too few, exit 0", `echo "bd00bd0 $1"`],
    ["another path's name", `for p; do echo "bd00bd0 /mnt/other"; done`],
    ["a failure with no error line", `echo "bd00bd0 $1"; exit 1`],
    ["not a type", `for p; do echo "xyz $p"; done`],
  ])("trusts no batch with %s: each path is probed on its own, and answered by it", async (_what, batchBody) => {
    const { p, calls } = prober(`if [ $# -gt 1 ]; then ${batchBody}; exit $?; fi\necho bd00bd0`);
    const paths = ["/mnt/a", "/mnt/b", "/mnt/c"];
    expect(await Promise.all(paths.map((x) => p.probe(x)))).toEqual([OK, OK, OK]);
    expect(calls()).toEqual([3, 1, 1, 1]);
    await p.stop();
  });

  it("matches a batch's answers and errors to their paths, each failed path by its own stderr line", async () => {
    const { p, calls } = prober(`rc=0
for p; do
  case "$p" in
    *gone*) echo "stat: cannot read file system information for '$p': No such file or directory" >&2; rc=1 ;;
    *down*) echo "stat: cannot read file system information for '$p': Cannot send after transport endpoint shutdown" >&2; rc=1 ;;
    *) echo "b00b $p" ;;
  esac
done
exit $rc`);
    const paths = ["/mnt/gone", "/mnt/a", "/mnt/down", "/mnt/b c"];
    expect(await Promise.all(paths.map((x) => p.probe(x)))).toEqual([
      { kind: "error", code: "ENOENT" },
      { ...OK, fsType: "b00b" },
      { kind: "error", code: "ESHUTDOWN" },
      { ...OK, fsType: "b00b" },
    ]);
    expect(calls()).toEqual([4]);
    // The failed ones are probed on their own from now on; the others together.
    await Promise.all(paths.map((x) => p.probe(x)));
    expect(calls().slice(1).sort()).toEqual([1, 1, 2]);
    await p.stop();
  });

  it("never puts a path holding a newline in a batch", async () => {
    const { p, calls } = prober(`if [ $# -gt 1 ]; then for p; do echo "bd00bd0 $p"; done; else echo bd00bd0; fi`);
    expect(await Promise.all(["/mnt/a\nbd00bd0 /mnt/b", "/mnt/b", "/mnt/c"].map((x) => p.probe(x)))).toEqual([OK, OK, OK]);
    expect(calls().sort()).toEqual([1, 2]);
    await p.stop();
  });
});
