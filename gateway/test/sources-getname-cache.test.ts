// lfs.getname is kept while the Lustre mounts are unchanged (issue #30, round
// cost): the real catalog over a fake Lustre client (the demo's fake `lfs`,
// which logs every run to calls.log) and a fake procfs tree with a mountinfo.
// The catalog's clock is driven by hand, so TTLs and the max age pass without
// sleeping. Then the same through a real gateway process: a volume mounted
// after start is judged against its own mount.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { NodeGetVolumeHealthRequestSchema, NodeGetVolumeHealthResponseSchema } from "../gen/csi/v1/csi_pb.js";
import { KEEP_MAX_AGE_MS, lustreMountinfoLines } from "../src/engine/sources/keep-while.js";
import { SourceCatalog, type SourceCatalogOptions } from "../src/engine/sources/index.js";
import { eventually } from "./gateway-mode-harness.js";
import { rawCall, unixClient } from "./helpers/fake-csi-driver.js";
import { fakeLustre, type FakeFilesystem, type FakeLustre, type FakeLustreState } from "./helpers/fake-lustre.js";
import { ROOT, startGatewayProcess, type GatewayProcess } from "./helpers/gateway-process.js";

const silent = pino({ level: "silent" });
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const A: FakeFilesystem = { name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: "/mnt/a", mdts: 1, osts: 2 };
const B: FakeFilesystem = { name: "lustrefs", instance: "ffff8f0a3b5ca800", mountpoint: "/mnt/b x", mdts: 1, osts: 2 };
const lustre = (...filesystems: FakeFilesystem[]): FakeLustreState => ({ version: "2.15", mgsNid: "10.0.0.2@tcp", since: 1764000000, filesystems });

// A mountinfo as the kernel prints it: ID, parent, dev, root, mount point
// (escaped like mounts), options, optional fields, `-`, type, source, super options.
const SYSTEM = "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n" + "23 22 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n";
const esc = (p: string) => p.replace(/ /g, "\\040");
const lustreLine = (id: number, f: FakeFilesystem, dev = `0:${id + 30}`) =>
  `${id} 22 ${dev} / ${esc(f.mountpoint)} rw,relatime shared:${id + 100} - lustre 10.0.0.2@tcp:/${f.name} rw,flock,lazystatfs\n`;

interface Node {
  n: FakeLustre;
  catalog: SourceCatalog;
  /** The catalog's clock, in ms. */
  clock: { t: number };
  runs(): number;
  read(): ReturnType<SourceCatalog["read"]>;
  /** Past the command TTL (2 s) and the key's file TTL (1 s). */
  later(ms?: number): void;
  mountinfo(text: string, pid?: number): void;
}

async function node(state: FakeLustreState, mountinfo: string | null, extra: Partial<SourceCatalogOptions> = {}): Promise<Node> {
  const n = fakeLustre({ lustre: state });
  cleanups.push(() => n.cleanup());
  const clock = { t: 1_000_000 };
  const catalog = await SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, env: n.env, logger: silent, now: () => clock.t, ...extra });
  cleanups.push(() => catalog.stop());
  const write = (text: string, pid = 1) => {
    mkdirSync(join(n.procfs, String(pid)), { recursive: true });
    writeFileSync(join(n.procfs, String(pid), "mountinfo"), text);
  };
  if (mountinfo !== null) write(mountinfo);
  return {
    n,
    catalog,
    clock,
    runs: () => n.calls("getname").length,
    read: () => catalog.read("lfs.getname", {}),
    later: (ms = 2_500) => void (clock.t += ms),
    mountinfo: write,
  };
}

describe("lfs.getname is kept while the Lustre mounts are unchanged", () => {
  it("is not re-run across reads past its TTL while the mountinfo's lustre lines read the same; readers at once share one run", async () => {
    const s = await node(lustre(A), SYSTEM + lustreLine(40, A));
    const first = await Promise.all(Array.from({ length: 20 }, () => s.read()));
    expect(first[0]).toMatchObject({ ok: true, stdout: "lustrefs-ffff8f0a3b5c9000 /mnt/a\n" });
    expect(new Set(first).size).toBe(1);
    expect(s.runs()).toBe(1);
    for (let i = 0; i < 5; i++) {
      s.later();
      const again = await Promise.all([s.read(), s.read(), s.read()]);
      expect(again.every((r) => r === first[0])).toBe(true); // the same frozen result, its age honest
    }
    expect(s.runs()).toBe(1);
    // Without the key the same reads run it every TTL (lctl.imports, say, has no rule).
    expect(s.catalog.describe().find((d) => d.name === "lfs.getname")).toMatchObject({
      keptWhile: `lustre lines of ${join(s.n.procfs, "1", "mountinfo")} and ${join(s.n.sysfs, "fs", "lustre", "llite")}`,
      keepMaxAgeMs: KEEP_MAX_AGE_MS,
      ttlMs: 2000,
    });
    expect(s.catalog.describe().find((d) => d.name === "lctl.imports")).not.toHaveProperty("keptWhile");
  });

  it("re-runs on a new Lustre mount and on an unmount, and answers what lfs now prints", async () => {
    const s = await node(lustre(A), SYSTEM + lustreLine(40, A));
    await s.read();
    s.n.setLustre(lustre(A, B));
    s.mountinfo(SYSTEM + lustreLine(40, A) + lustreLine(41, B));
    s.later();
    expect((await s.read()).stdout).toBe("lustrefs-ffff8f0a3b5c9000 /mnt/a\nlustrefs-ffff8f0a3b5ca800 /mnt/b x\n");
    expect(s.runs()).toBe(2);
    s.later();
    await s.read();
    expect(s.runs()).toBe(2);

    s.n.setLustre(lustre(B));
    s.mountinfo(SYSTEM + lustreLine(41, B));
    s.later();
    expect((await s.read()).stdout).toBe("lustrefs-ffff8f0a3b5ca800 /mnt/b x\n");
    expect(s.runs()).toBe(3);
  });

  it("re-runs on a remount of the same path with the same options: a new mount ID, or the same ID with a new instance in sysfs", async () => {
    const s = await node(lustre(A), SYSTEM + lustreLine(40, A));
    await s.read();
    // umount + mount: the line reads the same but for the mount ID.
    const A2 = { ...A, instance: "ffff8f0a3b5d1000" };
    s.n.setLustre(lustre(A2));
    s.mountinfo(SYSTEM + lustreLine(44, A2, "0:70"));
    s.later();
    expect((await s.read()).stdout).toBe("lustrefs-ffff8f0a3b5d1000 /mnt/a\n");
    expect(s.runs()).toBe(2);

    // The kernel hands a freed mount ID to the next mount: the line can read
    // exactly the same. The llite directory (the instance) still tells.
    const llite = join(s.n.sysfs, "fs", "lustre", "llite");
    mkdirSync(join(llite, `lustrefs-${A2.instance}`), { recursive: true });
    s.later();
    await s.read();
    expect(s.runs()).toBe(3); // the llite directory appeared: the key changed
    s.later();
    await s.read();
    expect(s.runs()).toBe(3);
    const A3 = { ...A, instance: "ffff8f0a3b5d2000" };
    s.n.setLustre(lustre(A3));
    rmSync(join(llite, `lustrefs-${A2.instance}`), { recursive: true });
    mkdirSync(join(llite, `lustrefs-${A3.instance}`));
    s.later();
    expect((await s.read()).stdout).toBe("lustrefs-ffff8f0a3b5d2000 /mnt/a\n");
    expect(s.runs()).toBe(4);
  });

  it("changes to other mounts do not re-run it", async () => {
    const s = await node(lustre(A), SYSTEM + lustreLine(40, A));
    await s.read();
    s.mountinfo(SYSTEM + lustreLine(40, A) + "50 22 0:60 / /mnt/nfs rw,relatime shared:200 - nfs4 server:/export rw,vers=4.2\n");
    s.later();
    await s.read();
    s.mountinfo("22 1 259:1 / / ro,relatime shared:1 - ext4 /dev/nvme0n1p1 ro\n" + lustreLine(40, A) + "51 22 0:61 /lustre-ish /mnt/not\\040lustre rw - tmpfs lustre rw\n");
    s.later();
    await s.read();
    expect(s.runs()).toBe(1);
  });

  it("is re-run after the max age whatever the key says", async () => {
    const s = await node(lustre(A), SYSTEM + lustreLine(40, A));
    await s.read();
    for (let t = 0; t + 2_500 < KEEP_MAX_AGE_MS; t += 2_500) {
      s.later();
      await s.read();
    }
    expect(s.runs()).toBe(1);
    s.later();
    await s.read();
    expect(s.runs()).toBe(2);
    s.later();
    await s.read();
    expect(s.runs()).toBe(2); // kept again, its age counted from the new run
  });

  it("never keeps a failure: a failed run is re-run at its TTL with the key unchanged", async () => {
    const s = await node(lustre(A), SYSTEM + lustreLine(40, A));
    s.n.setRaw("getname", { err: "lfs getname: cannot get name for '/mnt/a': Input/output error\n", exit: 5 });
    expect(await s.read()).toMatchObject({ ok: false, exitCode: 5 });
    s.later();
    expect(await s.read()).toMatchObject({ ok: false, exitCode: 5 });
    expect(s.runs()).toBe(2);
    s.n.setLustre(lustre(A));
    s.later();
    expect(await s.read()).toMatchObject({ ok: true, stdout: "lustrefs-ffff8f0a3b5c9000 /mnt/a\n" });
    s.later();
    await s.read();
    expect(s.runs()).toBe(3);
  });

  it("within its TTL it is shared as before, and a missing tool is not kept", async () => {
    const s = await node(lustre(A), SYSTEM + lustreLine(40, A));
    s.n.missing("lfs");
    expect(await s.read()).toMatchObject({ ok: false, error: "ENOENT: lfs not found on PATH" });
    s.n.restore("lfs");
    s.later(1_000);
    expect((await s.read()).ok).toBe(false); // still within the TTL
    s.later(1_500);
    expect((await s.read()).ok).toBe(true);
  });

  it.each([
    ["no mountinfo (a fake procfs tree without one)", null],
    ["no Lustre line in it", SYSTEM],
    ["a mountinfo cut by the size cap", SYSTEM + lustreLine(40, A) + "#".repeat(5000) + "\n"],
  ])("%s: runs every TTL exactly as without the rule", async (_what, text) => {
    const s = await node(lustre(A), text, { defaults: { maxOutputBytes: 4096 } });
    await Promise.all([s.read(), s.read()]);
    expect(s.runs()).toBe(1);
    s.later(1_000);
    await s.read();
    expect(s.runs()).toBe(1);
    for (let i = 0; i < 3; i++) {
      s.later();
      await s.read();
    }
    expect(s.runs()).toBe(4);
  });

  it("--exec-in-process: the key is the target process's mountinfo, not PID 1's", async () => {
    const s = await node(lustre(A), SYSTEM, { execInProcess: "azurelustreplugin" });
    // The driver's process under the fake procfs, and an nsenter that runs what follows `--`.
    const pid = join(s.n.procfs, "300");
    mkdirSync(pid);
    writeFileSync(join(pid, "comm"), "azurelustreplug\n");
    writeFileSync(join(pid, "stat"), `300 (azurelustreplug) S ${Array.from({ length: 18 }, (_, i) => i + 1).join(" ")} 5000 0 0\n`);
    writeFileSync(join(pid, "cmdline"), "/app/azurelustreplugin\0");
    writeFileSync(
      join(s.n.bin, "nsenter"),
      `#!${process.execPath}\nconst a = process.argv.slice(2); const r = require("node:child_process").spawnSync(a[a.indexOf("--") + 1], a.slice(a.indexOf("--") + 2), { stdio: "inherit" }); process.exit(r.status ?? 1);\n`,
    );
    chmodSync(join(s.n.bin, "nsenter"), 0o755);
    s.mountinfo(SYSTEM + lustreLine(40, A), 300);
    expect(await s.read()).toMatchObject({ ok: true, stdout: "lustrefs-ffff8f0a3b5c9000 /mnt/a\n" });
    expect(s.catalog.describe().find((d) => d.name === "lfs.getname")?.keptWhile).toContain(join(s.n.procfs, "{pid of azurelustreplugin}", "mountinfo"));
    s.later();
    // PID 1's table (the pause container's, say) changes: not the one that counts.
    s.mountinfo(SYSTEM + lustreLine(60, B));
    await s.read();
    expect(s.runs()).toBe(1);
    s.mountinfo(SYSTEM + lustreLine(40, A) + lustreLine(41, B), 300);
    s.n.setLustre(lustre(A, B));
    s.later();
    expect((await s.read()).stdout).toContain("/mnt/b x\n");
    expect(s.runs()).toBe(2);
  });

  it("reads the lustre lines of a mountinfo as printed, escapes and all", () => {
    const text = SYSTEM + lustreLine(40, B) + "61 22 0:62 / /mnt/x rw - nfs4 h:/x rw\n" + "62 22 0:63 / /mnt/y rw master:3 - lustre 10.0.0.2@tcp:/fs2 rw\n" + "63 22 0:64 / /mnt/cut rw - lustre 10.0.0.2@tcp:/fs3 rw";
    expect(lustreMountinfoLines(text)).toEqual([lustreLine(40, B).trimEnd(), "62 22 0:63 / /mnt/y rw master:3 - lustre 10.0.0.2@tcp:/fs2 rw"]);
    expect(lustreMountinfoLines("")).toEqual([]);
  });
});

describe("a running gateway on a fake Lustre client", () => {
  const KUBELET = "/var/lib/kubelet";
  const T1 = `${KUBELET}/pods/p1/volumes/kubernetes.io~csi/pv1/mount`;
  const T2 = `${KUBELET}/pods/p2/volumes/kubernetes.io~csi/pv2/mount`;
  const since = Math.floor(Date.now() / 1000) - 3600;
  const fs1: FakeFilesystem = { name: "lustrefs", instance: "ffff8f0a3b5c9000", mountpoint: T1, mdts: 1, osts: 8, states: { MDT0000: "DISCONN" }, history: { MDT0000: [[since, "DISCONN"]] } };
  const fs2: FakeFilesystem = { name: "lustrefs", instance: "ffff8f0a3b5ca800", mountpoint: T2, mdts: 1, osts: 8, states: { OST0005: "DISCONN" }, history: { OST0005: [[since, "DISCONN"]] } };

  it("judges a volume mounted after start against its own mount (getname is run again), and does not re-run it while nothing changes", async () => {
    const n = fakeLustre({ base: "healthy", lustre: { ...lustre(fs1), since } });
    cleanups.push(() => n.cleanup());
    const table = (fss: FakeFilesystem[]) => {
      writeFileSync(join(n.procfs, "1", "mounts"), `/dev/sda1 / ext4 rw 0 0\n${fss.map((f) => `10.0.0.2@tcp:/lustrefs ${f.mountpoint} lustre rw,flock,lazystatfs 0 0\n`).join("")}`);
      writeFileSync(join(n.procfs, "1", "mountinfo"), SYSTEM + fss.map((f, i) => lustreLine(40 + i, f)).join(""));
    };
    table([fs1]);
    writeFileSync(join(n.bin, "stat"), "#!/bin/sh\necho bd00bd0\n");
    chmodSync(join(n.bin, "stat"), 0o755);
    const plugins = join(n.dir, "health-plugins");
    mkdirSync(plugins);
    for (const p of ["lustre-imports", "volume-lustre-health"]) copyFileSync(join(ROOT, "dist/plugins", `${p}.wasm`), join(plugins, `${p}.wasm`));
    const gp: GatewayProcess = await startGatewayProcess(
      [`--plugins-dir=${plugins}`, `--path.procfs=${n.procfs}`, `--path.sysfs=${n.sysfs}`, "--check-interval=1s", "--health-interval=1s"],
      { env: n.env },
    );
    cleanups.push(() => gp.stop());
    const client: grpc.Client = unixClient(gp.socket);
    cleanups.push(() => client.close());
    const ask = async (volumeId: string, path: string) =>
      fromBinary(
        NodeGetVolumeHealthResponseSchema,
        (await rawCall(client, "/csi.v1.Node/NodeGetVolumeHealth", toBinary(NodeGetVolumeHealthRequestSchema, create(NodeGetVolumeHealthRequestSchema, { volumeId, volumePublishPath: path })))).response!,
      ).volumeHealth!.healthStatuses.map((e) => ({ status: e.status as number, reason: e.reason, message: e.message }));

    await ask("pv1", T1);
    const pv1 = await eventually(() => ask("pv1", T1), (e) => e.length > 0, "pv1 evaluated");
    expect(pv1).toMatchObject([{ reason: "MdtUnreachable" }]);
    const runs = n.calls("getname").length;
    expect(runs).toBeGreaterThan(0);
    // Several rounds (1 s apart) past getname's 2 s TTL: the mounts are unchanged, so is lfs getname's answer.
    await new Promise((r) => setTimeout(r, 4500));
    expect(n.calls("getname").length).toBe(runs);

    // pv2 is mounted: its own OST0005 is down; pv1's MDT is not its MDT.
    // Judged against a getname from before its mount (no line for T2) it is
    // matched to every mount of lustrefs and gets pv1's MDT too; it may be at
    // first (the sources live a TTL), it must not stay so.
    n.setLustre({ ...lustre(fs1, fs2), since });
    table([fs1, fs2]);
    await ask("pv2", T2);
    const pv2 = await eventually(
      () => ask("pv2", T2),
      (e) => e.length === 1 && e[0]!.reason === "OstUnreachable",
      "pv2 judged against its own mount",
    );
    expect(pv2[0]!.message).toContain("OST0005");
    expect(n.calls("getname").length).toBeGreaterThan(runs);
    expect(await ask("pv1", T1)).toMatchObject([{ reason: "MdtUnreachable" }]);
  }, 120_000);
});
