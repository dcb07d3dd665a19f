// Issue 44: `probegate plugin pack` writes a reproducible OCI image layout
// archive whose one layer is a plugin directory. Through the real CLI; the
// archive read back by a strict reader (helpers/oci-archive.ts) and by
// Debian's skopeo; the unpacked layer served by a real gateway, as an image
// volume would mount it.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { writeTar } from "../src/support/tar.js";
import { ROOT, runProbegate, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { UnsafeArchive, readOciArchive, readTar } from "./helpers/oci-archive.js";
import { untilReadyz } from "./helpers/readyz.js";

const running: GatewayProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
});

const SKOPEO = spawnSync("skopeo", ["--version"], { encoding: "utf8" }).status === 0;
const SKOPEO_MISSING =
  "skipped: skopeo is not installed. It comes with Debian's `skopeo` package " +
  "(`apt-get install skopeo`; .ci/run installs it); reading the pack with the ecosystem's own tool needs it";
if (!SKOPEO) console.warn(SKOPEO_MISSING);

const BUNDLED = path.join(ROOT, "dist", "plugins");
const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");
const MODULES = ["kernel-modules.wasm", "net-interfaces.wasm"];
const CONFIG = "net-interfaces.yaml";
const CONFIG_TEXT = "# every key at its default\n";

/** A plugin directory: two bundled modules, a configuration file and their lock. */
async function pluginDir(): Promise<string> {
  const dir = tempDir("probegate-pack-src-");
  for (const m of MODULES) fs.copyFileSync(path.join(BUNDLED, m), path.join(dir, m));
  fs.writeFileSync(path.join(dir, CONFIG), CONFIG_TEXT);
  fs.writeFileSync(path.join(dir, "README.txt"), "not a plugin file: not packed\n");
  const r = await runProbegate(["plugin", "lock", dir]);
  expect(r.code, r.stderr).toBe(0);
  return dir;
}

async function pack(dir: string, out: string, ...extra: string[]): Promise<string> {
  const r = await runProbegate(["plugin", "pack", dir, "--output", out, ...extra]);
  expect(r.code, r.stderr).toBe(0);
  const digest = /^digest (sha256:[0-9a-f]{64})$/m.exec(r.stdout)?.[1];
  expect(digest, r.stdout).toBeDefined();
  return digest!;
}

describe("plugin pack", () => {
  it("gives the same digest and bytes for the same files, whatever their times, owners, modes or directory", async () => {
    const a = await pluginDir();
    const out = tempDir("probegate-pack-out-");
    const d1 = await pack(a, path.join(out, "1.tar"));
    // The same files elsewhere, later, with other modes and times.
    const b = tempDir("probegate-pack-src2-");
    for (const f of fs.readdirSync(a)) fs.copyFileSync(path.join(a, f), path.join(b, f));
    for (const f of fs.readdirSync(b)) {
      fs.chmodSync(path.join(b, f), 0o600);
      fs.utimesSync(path.join(b, f), new Date("2031-01-02T03:04:05Z"), new Date("2031-01-02T03:04:05Z"));
    }
    const d2 = await pack(b, path.join(out, "2.tar"));
    expect(d2).toBe(d1);
    expect(sha256(fs.readFileSync(path.join(out, "2.tar")))).toBe(sha256(fs.readFileSync(path.join(out, "1.tar"))));
    expect(await pack(a, path.join(out, "3.tar"), "--compression=deflate")).toBe(await pack(b, path.join(out, "4.tar"), "--compression=deflate"));
    // Another file's bytes give another digest.
    fs.writeFileSync(path.join(b, CONFIG), "# changed\n");
    expect(await pack(b, path.join(out, "5.tar"))).not.toBe(d1);
  });

  for (const deflate of [false, true]) {
    it(`lays the directory out at the layer's root, with annotations saying what it holds${deflate ? " (--compression=deflate)" : ""}`, async () => {
      const dir = await pluginDir();
      const file = path.join(tempDir("probegate-pack-out-"), "p.tar");
      const digest = await pack(dir, file, ...(deflate ? ["--compression=deflate"] : []));
      const img = readOciArchive(fs.readFileSync(file));
      expect(img.indexDigest).toBe(digest);
      expect(img.manifests.map((m) => [m.architecture, m.config.architecture, m.config.os])).toEqual([
        ["amd64", "amd64", "linux"],
        ["arm64", "arm64", "linux"],
      ]);
      // One layer, shared; files at its root, fixed owners, times and modes, by name.
      expect(new Set(img.manifests.map((m) => m.manifest.layers[0]!.digest)).size).toBe(1);
      expect(img.manifests[0]!.manifest.layers[0]!.mediaType).toBe("application/vnd.oci.image.layer.v1.tar+gzip");
      expect(img.files.map((f) => f.name)).toEqual([...MODULES, CONFIG, "plugins.lock"].sort());
      for (const f of img.files) {
        expect([f.type, f.mode, f.uid, f.gid, f.mtime, f.uname, f.gname], f.name).toEqual(["file", 0o644, 0, 0, 0, "", ""]);
        expect(sha256(f.bytes), f.name).toBe(sha256(fs.readFileSync(path.join(dir, f.name))));
      }
      const a = img.manifests[0]!.manifest.annotations;
      expect(a["io.probegate.plugins"]).toMatch(/^kernel-modules@[\d.]+,net-interfaces@[\d.]+$/);
      expect(a["io.probegate.plugins.abis"]).toBe("1");
      expect(a["io.probegate.plugins.sources"]).toContain("sys.net.operstate");
      expect(a["io.probegate.plugins.lock"]).toBe(`sha256:${sha256(fs.readFileSync(path.join(dir, "plugins.lock")))}`);
      const detail = JSON.parse(a["io.probegate.plugins.detail"]!) as Array<{ file: string; sha256: string }>;
      expect(detail.map((d) => [d.file, d.sha256])).toEqual(MODULES.map((m) => [m, sha256(fs.readFileSync(path.join(dir, m)))]));
      expect(img.manifests[0]!.config.config.Labels).toEqual(a);
      expect(img.index.annotations).toEqual(a);
    });
  }

  it("the unpacked layer is a plugin directory a gateway serves under its own lock", async () => {
    const dir = await pluginDir();
    const file = path.join(tempDir("probegate-pack-out-"), "p.tar");
    await pack(dir, file);
    const mount = tempDir("probegate-pack-mount-");
    for (const f of readOciArchive(fs.readFileSync(file)).files) fs.writeFileSync(path.join(mount, f.name), f.bytes);
    const gw = await startGatewayProcess([`--plugins-dir=${mount}`, `--plugins-lock=${path.join(mount, "plugins.lock")}`, "--mode=node", "--check-interval=1s"]);
    running.push(gw);
    const r = await untilReadyz(gw, (x) => /\[.\]net-interfaces/.test(x.text) && /\[.\]kernel-modules/.test(x.text), "both plugins loaded");
    expect(r.text).not.toContain("refused");
  });

  it("refuses a link out of the directory and a module the gateway would refuse; writes nothing", async () => {
    const dir = await pluginDir();
    const outside = tempDir("probegate-pack-outside-");
    fs.writeFileSync(path.join(outside, "x.wasm"), fs.readFileSync(path.join(BUNDLED, "lnet-nets.wasm")));
    fs.symlinkSync(path.join(outside, "x.wasm"), path.join(dir, "x.wasm"));
    const out = path.join(tempDir("probegate-pack-out-"), "p.tar");
    let r = await runProbegate(["plugin", "pack", dir, "--output", out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`x.wasm is a link to ${fs.realpathSync(path.join(outside, "x.wasm"))}, outside`);
    fs.unlinkSync(path.join(dir, "x.wasm"));
    fs.writeFileSync(path.join(dir, "bad.wasm"), "not a module");
    r = await runProbegate(["plugin", "pack", dir, "--output", out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("bad.wasm: CompileError");
    r = await runProbegate(["plugin", "lock", dir]);
    expect(r.code).toBe(1);
    expect(fs.existsSync(out)).toBe(false);
    // A link inside the directory (a ConfigMap's x.wasm -> ..data/x.wasm) is packed as the file it names.
    fs.unlinkSync(path.join(dir, "bad.wasm"));
    fs.mkdirSync(path.join(dir, "..data"));
    fs.copyFileSync(path.join(BUNDLED, "lnet-nets.wasm"), path.join(dir, "..data", "lnet-nets.wasm"));
    fs.symlinkSync("..data/lnet-nets.wasm", path.join(dir, "lnet-nets.wasm"));
    await pack(dir, out);
    const files = readOciArchive(fs.readFileSync(out)).files;
    expect(files.find((f) => f.name === "lnet-nets.wasm")?.type).toBe("file");
    expect(files.some((f) => f.name.includes("..data"))).toBe(false);
  });

  it("the test reader refuses hostile archives: a path out of the root, an absolute path, symbolic and hard links", () => {
    const work = tempDir("probegate-pack-hostile-");
    const inner = path.join(work, "in");
    fs.mkdirSync(inner);
    fs.writeFileSync(path.join(work, "secret"), "x");
    fs.symlinkSync("/etc/passwd", path.join(inner, "link.wasm"));
    fs.writeFileSync(path.join(inner, "a.wasm"), "a");
    fs.linkSync(path.join(inner, "a.wasm"), path.join(inner, "hard.wasm"));
    const gnuTar = (...args: string[]) => execFileSync("tar", args, { cwd: inner });
    const cases: Array<[string, Buffer, RegExp]> = [
      ["traversal", gnuTar("-cPf", "-", "../secret"), /leaves the archive's root/],
      ["absolute", gnuTar("-cPf", "-", path.join(work, "secret")), /leaves the archive's root/],
      ["symlink", gnuTar("-cf", "-", "link.wasm"), /symbolic link to \/etc\/passwd/],
      ["hard link", gnuTar("-cf", "-", "a.wasm", "hard.wasm"), /hard link to a.wasm/],
    ];
    for (const [what, archive, msg] of cases) expect(() => readTar(archive), what).toThrow(msg);
    expect(() => readTar(gnuTar("-cf", "-", "link.wasm"))).toThrow(UnsafeArchive);
    // Our own writer cannot be made to write one.
    for (const name of ["../x.wasm", "/x.wasm", "a/../../x"]) expect(() => writeTar([{ name, bytes: new Uint8Array(1) }]), name).toThrow(/unsafe entry name/);
    // And what it writes GNU tar reads as written.
    const ours = writeTar([{ name: "a.wasm", bytes: Buffer.from("hello") }]);
    fs.writeFileSync(path.join(work, "ours.tar"), ours);
    expect(execFileSync("tar", ["-tvf", "ours.tar"], { cwd: work, encoding: "utf8" })).toMatch(/^-rw-r--r-- 0\/0 +5 1970-01-01 00:00 a\.wasm$/m);
  });
});

describe.skipIf(!SKOPEO)("plugin pack under skopeo", () => {
  it("skopeo inspect reads the archive and reports the digest pack printed; skopeo copy --all keeps it", async () => {
    const dir = await pluginDir();
    const file = path.join(tempDir("probegate-pack-out-"), "p.tar");
    const digest = await pack(dir, file);
    const skopeo = (...args: string[]) => execFileSync("skopeo", ["--insecure-policy", ...args], { encoding: "utf8" });
    const info = JSON.parse(skopeo("inspect", `oci-archive:${file}`)) as { Digest: string; Labels: Record<string, string>; Os: string; Layers: string[] };
    expect(info.Digest).toBe(digest);
    expect(info.Os).toBe("linux");
    expect(info.Labels["io.probegate.plugins"]).toMatch(/kernel-modules@/);
    expect(info.Layers).toHaveLength(1);
    const raw = JSON.parse(skopeo("inspect", "--raw", `oci-archive:${file}`)) as { mediaType: string; manifests: unknown[] };
    expect(raw.mediaType).toBe("application/vnd.oci.image.index.v1+json");
    expect(raw.manifests).toHaveLength(2);
    // As a push does (skopeo re-writes what it copies, and compresses an uncompressed
    // layer): every manifest copied, the digest unchanged, so the pin printed is the pushed one.
    for (const extra of [[], ["--compression=deflate"]]) {
      const d = await pack(dir, file, ...extra);
      const copy = tempDir("probegate-pack-copy-");
      skopeo("copy", "--all", "--quiet", `oci-archive:${file}`, `oci:${copy}:plugins`);
      const index = JSON.parse(fs.readFileSync(path.join(copy, "index.json"), "utf8")) as { manifests: Array<{ digest: string }> };
      expect(index.manifests.map((m) => m.digest), extra.join(" ")).toEqual([d]);
    }
  });
});
