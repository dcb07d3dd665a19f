// The fake Lustre client (gateway/demo's lctl/lfs, rendered by
// gateway/demo/lib/fake-lustre.js) under the soak's node, cycling
//   healthy → ost-down → healthy → server-lost → healthy → mdt-evicted → recovered → mount-hung → healthy → …
// "recovered" is FULL again with EVICTED in the state history (the eviction
// the storage check must count even though it is over). "mount-hung" makes
// the host's statfs prober block on the first volume's mount point (a fake
// `stat` that waits while a flag file exists, as a process blocked in a
// Lustre call does until the call returns). "server-lost" is the OSS silent at
// the LNet level (the fake `lnetctl ping` of its NID times out, ping_nids.json)
// while every import still reads FULL (#42). The mount table lists the file
// system and two published volumes.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Rng } from "./rng.js";

export type LustreState = "healthy" | "ost-down" | "mdt-evicted" | "recovered" | "mount-hung" | "server-lost";
/** The faults in turn; each is followed by healthy, except mdt-evicted by recovered (then healthy). */
const ORDER: readonly LustreState[] = ["ost-down", "server-lost", "mdt-evicted", "mount-hung"];
/** The soak file system's servers: the MGS/MDS of the fake's default, and one OSS of its own. */
const MGS_NID = "10.0.0.2@tcp";
const OSS_NID = "10.0.0.7@tcp";

interface Renderer {
  renderImports(d: object): string;
  renderStates(d: object): string;
  renderGetname(d: object): string;
}

/** What `stat -f -c %t -- PATH` prints for a Lustre mount, blocking while the hang flag exists for a hung path. */
const FAKE_STAT = (flag: string) => `#!/bin/sh
for p; do :; done
case "$p" in
  *hangs*) while [ -e "${flag}" ]; do sleep 0.2; done ;;
esac
echo bd00bd0
`;

export class LustreFaults {
  state: LustreState = "healthy";
  since = Date.now();
  readonly injected: Record<string, number> = {};
  readonly volumes: Array<{ id: string; target: string; hangs: boolean }>;
  private next = 0;
  private readonly hangFlag: string;
  private readonly mountpoint: string;

  private constructor(
    private readonly scenarioDir: string,
    procfs: string,
    binDir: string,
    workDir: string,
    private readonly r: Renderer,
    private readonly rng: Rng,
  ) {
    this.hangFlag = path.join(workDir, "statfs-hang");
    this.mountpoint = path.join(workDir, "mnt", "lustrefs");
    fs.mkdirSync(this.mountpoint, { recursive: true });
    const kubelet = path.join(workDir, "kubelet");
    this.volumes = ["vol-hangs", "vol-steady"].map((id, i) => {
      const target = path.join(kubelet, "pods", `5011a000-0000-4000-8000-00000000000${i}`, "volumes", "kubernetes.io~csi", `pv-soak-${id}`, "mount");
      fs.mkdirSync(target, { recursive: true });
      return { id: `lustrefs/${id}`, target, hangs: id.includes("hangs") };
    });
    const mounts = [
      "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0",
      `10.0.0.2@tcp:/lustrefs ${this.mountpoint} lustre rw,flock,lazystatfs 0 0`,
      ...this.volumes.map((v) => `10.0.0.2@tcp:/lustrefs ${v.target} lustre rw,flock,lazystatfs 0 0`),
    ];
    fs.mkdirSync(path.join(procfs, "1"), { recursive: true });
    fs.writeFileSync(path.join(procfs, "1", "mounts"), mounts.join("\n") + "\n");
    const stat = path.join(binDir, "stat");
    fs.writeFileSync(stat, FAKE_STAT(this.hangFlag));
    fs.chmodSync(stat, 0o755);
    this.write();
  }

  /** undefined when this tree has no fake Lustre client (gateway/demo/lib/fake-lustre.js). */
  static async create(root: string, scenarioDir: string, procfs: string, binDir: string, workDir: string, rng: Rng): Promise<LustreFaults | undefined> {
    const file = path.join(root, "gateway/demo/lib/fake-lustre.js");
    const lfs = path.join(root, "gateway/demo/bin/lfs");
    if (!fs.existsSync(file) || !fs.existsSync(lfs)) return undefined;
    fs.rmSync(path.join(binDir, "lfs"), { force: true });
    fs.symlinkSync(lfs, path.join(binDir, "lfs"));
    const r = (await import(pathToFileURL(file).href)) as Renderer;
    return new LustreFaults(scenarioDir, procfs, binDir, workDir, r, rng);
  }

  step(): LustreState {
    const s: LustreState = this.state === "mdt-evicted" ? "recovered" : this.state !== "healthy" ? "healthy" : ORDER[this.next++ % ORDER.length]!;
    this.state = s;
    this.since = Date.now();
    if (s !== "healthy") this.injected[s] = (this.injected[s] ?? 0) + 1;
    this.write();
    return s;
  }

  private write(): void {
    const now = Math.floor(Date.now() / 1000);
    const base = now - 3600;
    const oss = Object.fromEntries(["OST0000", "OST0001", "OST0002", "OST0003"].map((t) => [t, [OSS_NID]]));
    const fsDesc: Record<string, unknown> = { name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: this.mountpoint, mdts: 1, osts: 4, servers: oss };
    if (this.state === "ost-down") {
      fsDesc.states = { OST0002: "DISCONN" };
      fsDesc.history = { OST0002: [[base, "CONNECTING"], [base, "FULL"], [now, "DISCONN"]] };
    } else if (this.state === "mdt-evicted") {
      fsDesc.states = { MDT0000: "EVICTED" };
      fsDesc.history = { MDT0000: [[base, "CONNECTING"], [base, "FULL"], [now - 2, "DISCONN"], [now - 1, "CONNECTING"], [now, "EVICTED"]] };
    } else if (this.state === "recovered") {
      fsDesc.history = { MDT0000: [[base, "FULL"], [now - 3, "DISCONN"], [now - 2, "EVICTED"], [now - 1, "RECOVER"], [now, "FULL"]] };
    }
    const desc = { version: this.rng.pick(["2.12", "2.15", "2.15.7", "2.16", "2.17"]), filesystems: [fsDesc] };
    fs.writeFileSync(path.join(this.scenarioDir, "imports.out"), this.r.renderImports(desc));
    fs.writeFileSync(path.join(this.scenarioDir, "import_states.out"), this.r.renderStates(desc));
    fs.writeFileSync(path.join(this.scenarioDir, "getname.out"), this.r.renderGetname(desc));
    fs.writeFileSync(path.join(this.scenarioDir, "health_check.out"), "healthy\n");
    fs.writeFileSync(path.join(this.scenarioDir, "ping_nids.json"), JSON.stringify({ [MGS_NID]: "ok", [OSS_NID]: this.state === "server-lost" ? "timeout" : "ok" }));
    if (this.state === "mount-hung") fs.writeFileSync(this.hangFlag, "");
    else fs.rmSync(this.hangFlag, { force: true });
  }

  /** Lets a blocked statfs return (at the end of the run). */
  release(): void {
    fs.rmSync(this.hangFlag, { force: true });
  }
}
