// A fake node for stuck-unmount tests: a mount table (<dir>/proc/1/mounts, where the catalog's proc.mounts reads it; paths
// escaped as the kernel escapes them: a space is \040), and an `umount` on PATH
// that behaves like the real one on a hung Lustre client. A hung mount has a
// marker file: a plain `umount PATH` blocks while it is there; `umount -f`
// releases it (the client's RPCs aborted) unless the hang is "lazy-only", when
// -f fails busy; `umount -l` always detaches. Every call is logged to <dir>/calls.
// A blocked plain umount shows under the fake procfs (<dir>/proc/<pid>/cmdline
// and stat, state D) until it returns, as the stuck report looks for it.

import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const UMOUNT = `#!/usr/bin/env node
const fs = require("node:fs");
const path = require("node:path");
const dir = process.env.FAKE_NODE_DIR;
const args = process.argv.slice(2);
fs.appendFileSync(path.join(dir, "calls"), JSON.stringify(args) + "\\n");
const target = args.filter((a) => !a.startsWith("-")).pop();
const esc = (p) => p.replace(/ /g, "\\\\040");
const hang = path.join(dir, "hang", encodeURIComponent(target));
const table = path.join(dir, "proc", "1", "mounts");
const detach = () => {
  const lines = fs.readFileSync(table, "utf8").split("\\n").filter((l) => l && l.split(" ")[1] !== esc(target));
  fs.writeFileSync(table, lines.map((l) => l + "\\n").join(""));
};
const mounted = () => fs.readFileSync(table, "utf8").split("\\n").some((l) => l.split(" ")[1] === esc(target));
const hung = () => fs.existsSync(hang);
if (args.includes("-l")) {
  fs.rmSync(hang, { force: true });
  detach();
  process.exit(0);
}
if (args.includes("-f")) {
  // The forced unmount itself blocks (a client that does not abort): only its deadline ends it.
  if (hung() && fs.readFileSync(hang, "utf8") === "force-hangs") setInterval(() => {}, 1000);
  else if (hung() && fs.readFileSync(hang, "utf8") === "lazy-only") {
    process.stderr.write("umount: " + target + ": target is busy.\\n");
    process.exit(32);
  } else {
  fs.rmSync(hang, { force: true });
  if (!mounted()) { process.stderr.write("umount: " + target + ": not mounted.\\n"); process.exit(32); }
  detach();
  process.exit(0);
  }
} else {
// While blocked it shows in the fake procfs as a hung umount does in the real one: its argv, and D state.
const me = path.join(dir, "proc", String(process.pid));
const uptime = Number.parseFloat(fs.readFileSync(path.join(dir, "proc", "uptime"), "utf8"));
fs.mkdirSync(me, { recursive: true });
fs.writeFileSync(path.join(me, "cmdline"), ["umount", ...args].join("\\0") + "\\0");
fs.writeFileSync(path.join(me, "stat"), process.pid + " (umount) D 1 1 1 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 " + Math.round(uptime * 100) + " 9000000 200 18446744073709551615\\n");
const wait = () => {
  if (hung()) return setTimeout(wait, 20);
  // Released: the kernel finished (or someone else did) the unmount.
  fs.rmSync(me, { recursive: true, force: true });
  detach();
  process.exit(0);
};
wait();
}
`;

export class FakeNode {
  readonly bin: string;
  readonly procfs: string;
  constructor(readonly dir: string) {
    this.bin = join(dir, "bin");
    this.procfs = join(dir, "proc");
    for (const d of [this.bin, join(this.procfs, "1"), join(dir, "hang")]) mkdirSync(d, { recursive: true });
    writeFileSync(join(this.bin, "umount"), UMOUNT);
    chmodSync(join(this.bin, "umount"), 0o755);
    // A node whose mount table is already there (the soak's) keeps it.
    if (!existsSync(join(this.procfs, "1", "mounts"))) writeFileSync(join(this.procfs, "1", "mounts"), "overlay / overlay rw 0 0\n");
    if (!existsSync(join(this.procfs, "uptime"))) writeFileSync(join(this.procfs, "uptime"), "1000.00 1900.00\n");
    writeFileSync(join(dir, "calls"), "");
  }

  /** The node's clock moves on: processes started earlier are this much older (<procfs>/uptime). */
  advance(seconds: number): void {
    const up = Number.parseFloat(readFileSync(join(this.procfs, "uptime"), "utf8")) + seconds;
    writeFileSync(join(this.procfs, "uptime"), `${up.toFixed(2)} ${(up * 1.9).toFixed(2)}\n`);
  }

  get env(): NodeJS.ProcessEnv {
    return { ...process.env, PATH: `${this.bin}:${process.env.PATH ?? ""}`, FAKE_NODE_DIR: this.dir };
  }

  mount(path: string, fsType = "lustre", device = "10.0.0.4@tcp:/lustrefs"): void {
    appendFileSync(join(this.procfs, "1", "mounts"), `${device} ${path.replace(/ /g, "\\040")} ${fsType} rw,flock 0 0\n`);
  }

  /** The mount's client hangs: a plain umount blocks; "force" is released by -f, "lazy-only" only by -l (-f fails busy), "force-hangs" only by -l (-f blocks too). */
  hang(path: string, kind: "force" | "lazy-only" | "force-hangs" = "force"): void {
    writeFileSync(join(this.dir, "hang", encodeURIComponent(path)), kind);
  }

  /** The servers came back: the hang ends by itself. */
  recover(path: string): void {
    rmSync(join(this.dir, "hang", encodeURIComponent(path)), { force: true });
  }

  /** Takes a path out of the mount table, as a finished unmount does (a fault's cleanup). */
  unmount(path: string): void {
    const esc = path.replace(/ /g, "\\040");
    const kept = this.mounts().split("\n").filter((l) => l && l.split(" ")[1] !== esc);
    writeFileSync(join(this.procfs, "1", "mounts"), kept.map((l) => l + "\n").join(""));
  }

  mounts(): string {
    return readFileSync(join(this.procfs, "1", "mounts"), "utf8");
  }

  /** Every umount argv run so far (by the driver and by probegate). */
  calls(): string[][] {
    return readFileSync(join(this.dir, "calls"), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string[]);
  }
}
