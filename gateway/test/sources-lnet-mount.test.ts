// The sources behind lnetConfiguredAt: mount (#23), read from fake trees
// through the real catalog: kernel.release, kernel.modules_dep,
// modprobe.lnet_options and mount_lustre.version. Bad or missing input is a
// failed read with a clear error, never a throw.
import fs from "node:fs";
import path from "node:path";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { SourceCatalog } from "../src/engine/sources/index.js";
import { MODPROBE_FILE_CAP } from "../src/engine/sources/modprobe-options.js";
import { RACY_MS } from "../src/support/file-identity.js";
import { fakeLnet, type FakeLnet, type FakeLnetSpec } from "./helpers/fake-lnet.js";
import { ROOT, tempDir } from "./helpers/gateway-process.js";

const silent = pino({ level: "silent" });
const nodes: FakeLnet[] = [];
afterEach(() => {
  for (const n of nodes.splice(0)) n.cleanup();
});

function node(spec: FakeLnetSpec): FakeLnet {
  const n = fakeLnet(spec);
  nodes.push(n);
  return n;
}

function catalogFor(n: FakeLnet, env: NodeJS.ProcessEnv = n.env): Promise<SourceCatalog> {
  // fileTtlMs 1: every read below sees the tree as it is now.
  return SourceCatalog.create({ procfs: n.procfs, sysfs: n.sysfs, modules: n.modules, modprobe: n.modprobe, env, logger: silent, defaults: { fileTtlMs: 1 } });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const R = "5.14.0-427.el9.x86_64";

describe("kernel.release and kernel.modules_dep", () => {
  it("lists the module names of the running kernel's modules.dep, compressed or not, `-` read as `_`", async () => {
    const n = node({
      osrelease: `${R}\n`,
      modulesDep: {
        [R]: [
          "kernel/fs/ext4/ext4.ko.xz: kernel/fs/jbd2/jbd2.ko.xz",
          "extra/lustre/net/lnet.ko:",
          "extra/lustre/fs/lustre.ko.gz: extra/lustre/net/lnet.ko",
          "extra/lustre/net/ko2iblnd.ko.zst:",
          "kernel/drivers/hid/hid-generic.ko:",
          "",
          "not a module line",
          "extra/lustre/net/lnet.ko:",
        ].join("\n"),
        "6.1.0-other": "kernel/fs/other/other.ko:\n",
      },
    });
    const catalog = await catalogFor(n);
    expect((await catalog.read("kernel.release", {})).stdout).toBe(`${R}\n`);
    const r = await catalog.read("kernel.modules_dep", {});
    expect(r).toMatchObject({ ok: true, error: null, truncated: false });
    expect(r.stdout).toBe("ext4\nlnet\nlustre\nko2iblnd\nhid_generic\n");
  });

  it("sees a reinstall (the file changed) and a reboot into another kernel", async () => {
    const n = node({ osrelease: `${R}\n`, modulesDep: { [R]: "kernel/fs/ext4/ext4.ko:\n" } });
    const catalog = await catalogFor(n);
    expect((await catalog.read("kernel.modules_dep", {})).stdout).toBe("ext4\n");
    await sleep(20);
    n.update({ modulesDep: { [R]: "kernel/fs/ext4/ext4.ko:\nupdates/dkms/lustre.ko:\n" } });
    await sleep(5);
    expect((await catalog.read("kernel.modules_dep", {})).stdout).toBe("ext4\nlustre\n");
    n.update({ osrelease: "6.8.0-1\n" });
    await sleep(5);
    const r = await catalog.read("kernel.modules_dep", {});
    expect(r.ok).toBe(false);
    expect(r.error).toBe(`ENOENT: ${n.modules}/6.8.0-1/modules.dep does not exist (no modules installed for kernel 6.8.0-1)`);
  });

  it("fails clearly on a missing or hostile osrelease and on an oversized modules.dep", async () => {
    const n = node({});
    const catalog = await catalogFor(n);
    const missing = await catalog.read("kernel.modules_dep", {});
    expect(missing).toMatchObject({ ok: false, stdout: "" });
    expect(missing.error).toBe(`ENOENT: ${n.procfs}/sys/kernel/osrelease does not exist`);
    expect((await catalog.read("kernel.release", {})).error).toBe(`ENOENT: ${n.procfs}/sys/kernel/osrelease does not exist`);

    // A release that would walk out of the modules tree never becomes a path.
    for (const bad of ["../../etc\n", "..\n", "a/b\n", "\n"]) {
      n.update({ osrelease: bad });
      await sleep(5);
      const r = await catalog.read("kernel.modules_dep", {});
      expect(r.ok, bad).toBe(false);
      expect(r.error).toMatch(/^EINVAL: .*osrelease holds no kernel release: /);
    }

    n.update({ osrelease: `${R}\n` });
    fs.mkdirSync(path.join(n.modules, R), { recursive: true });
    // A modules.dep over the cap is refused, not read to the end.
    fs.writeFileSync(path.join(n.modules, R, "modules.dep"), Buffer.alloc(16 * 1024 * 1024 + 10, "a"));
    await sleep(5);
    const big = await catalog.read("kernel.modules_dep", {});
    expect(big).toMatchObject({ ok: false });
    expect(big.error).toMatch(/^EFBIG: .*modules\.dep exceeded 16777216 bytes$/);
  });
});

describe("modprobe.lnet_options", () => {
  it("picks the `options lnet` directives out of *.conf in name order, continuation lines joined", async () => {
    const n = node({
      modprobe: {
        "zz-site.conf": "options lnet lnet_peer_discovery_disabled=1\n",
        "lustre.conf": [
          "# LNet on the data NIC",
          "options lnet networks=\"tcp0(eth1)\" \\",
          "    config_on_load=0",
          "options ksocklnd sock_timeout=100",
          "options  lnet_selftest foo=1",
          "install lnet /bin/true",
          "",
        ].join("\n"),
        "README": "options lnet networks=tcp0(eth9)\n",
        "lnet.conf.bak": "options lnet networks=tcp0(eth8)\n",
      },
    });
    fs.symlinkSync(path.join(n.modprobe, "nowhere"), path.join(n.modprobe, "dangling.conf"));
    const catalog = await catalogFor(n);
    const r = await catalog.read("modprobe.lnet_options", {});
    expect(r).toMatchObject({ ok: true, error: null });
    expect(r.stdout).toBe('lustre.conf: networks="tcp0(eth1)" config_on_load=0\nzz-site.conf: lnet_peer_discovery_disabled=1\n');
  });

  it("an empty directory is no options; a missing or unreadable one, or a huge file, fails the read", async () => {
    const n = node({});
    const catalog = await catalogFor(n);
    expect(await catalog.read("modprobe.lnet_options", {})).toMatchObject({ ok: true, stdout: "" });

    n.update({ modprobe: { "big.conf": "#".repeat(MODPROBE_FILE_CAP + 1) } });
    await sleep(5);
    const big = await catalog.read("modprobe.lnet_options", {});
    expect(big.ok).toBe(false);
    expect(big.error).toBe(`EFBIG: ${n.modprobe}/big.conf exceeded ${MODPROBE_FILE_CAP} bytes`);

    fs.rmSync(n.modprobe, { recursive: true });
    await sleep(5);
    expect((await catalog.read("modprobe.lnet_options", {})).error).toBe(`ENOENT: ${n.modprobe} does not exist`);
  });

  it("keeps what it read of each file only while a stat says it is that file: an edit of the same size, a replacement, a removal and a growth past the cap are all seen", async () => {
    const n = node({ modprobe: { "lustre.conf": "options lnet networks=tcp0\n", "site.conf": "options lnet a=1\n" } });
    const catalog = await catalogFor(n);
    const read = async () => {
      await sleep(5);
      return (await catalog.read("modprobe.lnet_options", {})).stdout;
    };
    // Old enough to be remembered (a file changed within RACY_MS is read every time).
    await sleep(RACY_MS + 100);
    expect(await read()).toBe("lustre.conf: networks=tcp0\nsite.conf: a=1\n");
    // In place, the same length: only the file's change times say it changed.
    fs.writeFileSync(path.join(n.modprobe, "lustre.conf"), "options lnet networks=tcp1\n");
    expect(await read()).toBe("lustre.conf: networks=tcp1\nsite.conf: a=1\n");
    // Replaced by rename, as editors and configuration management write.
    fs.writeFileSync(path.join(n.modprobe, ".tmp"), "options lnet b=2\n");
    fs.renameSync(path.join(n.modprobe, ".tmp"), path.join(n.modprobe, "site.conf"));
    expect(await read()).toBe("lustre.conf: networks=tcp1\nsite.conf: b=2\n");
    fs.rmSync(path.join(n.modprobe, "lustre.conf"));
    expect(await read()).toBe("site.conf: b=2\n");
    // Back under the old name: read again, not taken from before.
    fs.writeFileSync(path.join(n.modprobe, "lustre.conf"), "options lnet networks=o2ib0\n");
    expect(await read()).toBe("lustre.conf: networks=o2ib0\nsite.conf: b=2\n");
    // Grown past the cap: the read fails (fail closed), whatever was read before.
    fs.writeFileSync(path.join(n.modprobe, "site.conf"), `options lnet b=2\n${"#".repeat(MODPROBE_FILE_CAP)}`);
    await sleep(5);
    expect((await catalog.read("modprobe.lnet_options", {})).error).toBe(`EFBIG: ${n.modprobe}/site.conf exceeded ${MODPROBE_FILE_CAP} bytes`);
  });
});

describe("modprobe.lnet_options and the running lnet module (issue 31)", () => {
  it("adds the loaded module's networks=/ip2nets= as a last line, unset ones empty; none when neither is set", async () => {
    const n = node({ modprobe: { "lustre.conf": "options lnet networks=tcp\n" } });
    const params = path.join(n.sysfs, "module", "lnet", "parameters");
    const catalog = await catalogFor(n);
    // Not loaded: no parameters directory, modprobe.d alone.
    expect((await catalog.read("modprobe.lnet_options", {})).stdout).toBe("lustre.conf: networks=tcp\n");

    fs.mkdirSync(params, { recursive: true });
    fs.writeFileSync(path.join(params, "networks"), "(null)\n");
    fs.writeFileSync(path.join(params, "ip2nets"), "(null)\n");
    await sleep(5);
    expect((await catalog.read("modprobe.lnet_options", {})).stdout).toBe("lustre.conf: networks=tcp\n");

    fs.writeFileSync(path.join(params, "ip2nets"), "tcp(eth0) 10.0.*.*\no2ib(ib0) 192.168.*.*\n");
    await sleep(5);
    expect((await catalog.read("modprobe.lnet_options", {})).stdout).toBe(
      `lustre.conf: networks=tcp\n${params}: networks="" ip2nets="tcp(eth0) 10.0.*.*;o2ib(ib0) 192.168.*.*"\n`,
    );

    // A node image without modprobe.d: the module's parameters alone.
    fs.rmSync(n.modprobe, { recursive: true });
    fs.writeFileSync(path.join(params, "networks"), "tcp(eth1)\n");
    fs.writeFileSync(path.join(params, "ip2nets"), "(null)\n");
    await sleep(5);
    expect(await catalog.read("modprobe.lnet_options", {})).toMatchObject({ ok: true, stdout: `${params}: networks="tcp(eth1)" ip2nets=""\n` });
  });
});

describe("output over the cap", () => {
  it("is cut at a character boundary, within the cap, never into U+FFFD", async () => {
    // 40 bytes of options text per line, with two-byte characters right where a 64-byte cap falls.
    const n = node({ modprobe: { "lustre.conf": `options lnet networks="tcp0(eth0)" x=${"é".repeat(20)}\n` } });
    const catalog = await SourceCatalog.create({
      procfs: n.procfs, sysfs: n.sysfs, modules: n.modules, modprobe: n.modprobe, env: n.env, logger: silent,
      defaults: { fileTtlMs: 1, maxOutputBytes: 64 },
    });
    const r = await catalog.read("modprobe.lnet_options", {});
    expect(r).toMatchObject({ ok: false, truncated: true });
    expect(r.error).toMatch(/^EFBIG: options lnet in .* exceeded 64 bytes$/);
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(64);
    expect(r.stdout).not.toContain("\uFFFD");
    expect(r.stdout.startsWith('lustre.conf: networks="tcp0(eth0)" x=é')).toBe(true);
  });
});

describe("mount_lustre.version", () => {
  it("runs mount.lustre -V through PATH; a missing one is ENOENT, as for lnetctl", async () => {
    const n = node({ base: "lnet-down" });
    const present = await (await catalogFor(n)).read("mount_lustre.version", {});
    expect(present).toMatchObject({ ok: true, exitCode: 0 });
    expect(present.stdout).toMatch(/^mount\.lustre /);

    const bin = tempDir();
    try {
      fs.symlinkSync(path.join(ROOT, "gateway", "demo", "bin", "lctl"), path.join(bin, "lctl"));
      const absent = await (await catalogFor(n, { ...n.env, PATH: bin })).read("mount_lustre.version", {});
      expect(absent).toMatchObject({ ok: false, exitCode: null, error: "ENOENT: mount.lustre not found on PATH" });
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });
});
