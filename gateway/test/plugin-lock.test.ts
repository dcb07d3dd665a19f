// Issue 44: a lock of module digests, and its signature. The format and the
// signature check through their functions (keys and signatures made by
// openssl, as an operator would); the rest through a running gateway:
// /readyz?verbose, its JSON, /metrics and Probe.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { Identity } from "../gen/csi/v1/csi_pb.js";
import { LOCK_MAX_BYTES, LockKeyError, formatLock, lockPublicKey, parseLock, verifyLockSignature, type PluginLock } from "../src/runtime/plugin-lock.js";
import { runProbegate, startGatewayProcess, tempDir, type GatewayProcess } from "./helpers/gateway-process.js";
import { readyz, untilReadyz } from "./helpers/readyz.js";
import { compileEcho } from "./hostile/build.js";

const running: GatewayProcess[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((g) => g.stop()));
});

const sha256 = (b: Uint8Array | string) => createHash("sha256").update(b).digest("hex");
const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "pipe", "pipe"] });

/** A key pair made by openssl: `type` is what `openssl genpkey` takes. */
function keyPair(dir: string, name: string, genArgs: string[]): { priv: string; pub: string } {
  const priv = path.join(dir, `${name}.pem`);
  const pub = path.join(dir, `${name}.pub`);
  openssl("genpkey", ...genArgs, "-out", priv);
  openssl("pkey", "-in", priv, "-pubout", "-out", pub);
  return { priv, pub };
}
const P256 = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"];
const ED25519 = ["-algorithm", "ed25519"];

/** The detached signature openssl makes of FILE: DER for P-256 (dgst -sha256 -sign), raw for Ed25519 (pkeyutl -rawin). */
function opensslSign(priv: string, file: string, ed25519: boolean): Buffer {
  return ed25519 ? openssl("pkeyutl", "-sign", "-inkey", priv, "-rawin", "-in", file) : openssl("dgst", "-sha256", "-sign", priv, file);
}

const lockOf = (modules: Array<[string, string, Uint8Array]>, configs: Array<[string, string]> = []): PluginLock => ({
  lockVersion: 1,
  modules: modules.map(([file, plugin, bytes]) => ({ file, plugin, abi: 1, sha256: sha256(bytes) })),
  configs: configs.map(([file, text]) => ({ file, sha256: sha256(text) })),
});

describe("the lock's format", () => {
  const good = { lockVersion: 1, modules: [{ file: "a.wasm", plugin: "a", abi: 1, sha256: "a".repeat(64) }], configs: [] };
  const parse = (v: unknown) => parseLock(Buffer.from(typeof v === "string" ? v : JSON.stringify(v)));

  it("accepts what formatLock writes and refuses bad locks with a reason", () => {
    expect(parse(formatLock(good as PluginLock))).toMatchObject({ ok: true });
    const bad: Array<[string, unknown, RegExp]> = [
      ["not JSON", "{lockVersion", /not JSON/],
      ["a file twice", { ...good, modules: [good.modules[0], { ...good.modules[0], sha256: "b".repeat(64) }] }, /a\.wasm is listed twice/],
      ["a module and a config of one name", { ...good, configs: [{ file: "a.wasm", sha256: "c".repeat(64) }] }, /configs\.0\.file/],
      ["an unknown ABI", { ...good, modules: [{ ...good.modules[0], abi: 3 }] }, /modules\.0\.abi: unknown ABI/],
      ["a path", { ...good, modules: [{ ...good.modules[0], file: "../etc/a.wasm" }] }, /must be a file name/],
      ["a hidden name", { ...good, modules: [{ ...good.modules[0], file: "..data.wasm" }] }, /must be a .wasm file name/],
      ["a short digest", { ...good, modules: [{ ...good.modules[0], sha256: "abc" }] }, /64 lowercase hex/],
      ["another version", { ...good, lockVersion: 2 }, /lockVersion/],
      ["an unknown key", { ...good, trustEverything: true }, /trustEverything|unrecognized/i],
      ["invalid UTF-8", Buffer.from([0x7b, 0xff, 0x7d]).toString("latin1"), /not JSON/],
    ];
    for (const [what, v, msg] of bad) {
      const r = what === "invalid UTF-8" ? parseLock(Buffer.from([0x7b, 0xff, 0x7d])) : parse(v);
      expect(r.ok, what).toBe(false);
      if (!r.ok) expect(r.message, what).toMatch(msg);
    }
    const huge = parseLock(new Uint8Array(LOCK_MAX_BYTES + 1));
    expect(huge).toEqual({ ok: false, message: `the lock is ${LOCK_MAX_BYTES + 1} bytes; the cap is ${LOCK_MAX_BYTES} bytes` });
  });
});

describe("lock signatures made by openssl", () => {
  const dir = tempDir("probegate-lock-keys-");
  const lockFile = path.join(dir, "plugins.lock");
  fs.writeFileSync(lockFile, formatLock(lockOf([["a.wasm", "a", Buffer.from("module")]])));
  const lock = fs.readFileSync(lockFile);

  for (const [kind, gen, ed] of [["ECDSA P-256", P256, false], ["Ed25519", ED25519, true]] as const) {
    it(`${kind}: DER and base64 signatures verify; a tampered lock, another key's signature and a wrong length do not`, () => {
      const k = keyPair(dir, kind.replace(/\W/g, ""), [...gen]);
      const other = keyPair(dir, `${kind.replace(/\W/g, "")}-other`, [...gen]);
      const pub = lockPublicKey(fs.readFileSync(k.pub));
      expect(pub.type).toBe(ed ? "ed25519" : "ecdsa-p256");
      const der = opensslSign(k.priv, lockFile, ed);
      expect(verifyLockSignature(lock, der, pub)).toEqual({ ok: true });
      expect(verifyLockSignature(lock, Buffer.from(der.toString("base64")), pub)).toEqual({ ok: true });
      expect(verifyLockSignature(lock, Buffer.from(`${der.toString("base64")}\n`), pub)).toEqual({ ok: true });
      const tampered = Buffer.from(lock.toString().replace('"a"', '"b"'));
      expect(verifyLockSignature(tampered, der, pub)).toMatchObject({ ok: false, message: expect.stringMatching(/does not verify/) });
      expect(verifyLockSignature(lock, opensslSign(other.priv, lockFile, ed), pub)).toMatchObject({ ok: false, message: expect.stringMatching(/does not verify/) });
      const short = verifyLockSignature(lock, der.subarray(0, 7), pub);
      expect(short).toMatchObject({ ok: false, message: ed ? /the signature is 7 bytes; an Ed25519 signature is 64/ : /7 bytes and not an ASN.1 DER ECDSA signature/ });
      expect(verifyLockSignature(lock, Buffer.concat([der, Buffer.alloc(100)]), pub)).toMatchObject({ ok: false });
      expect(verifyLockSignature(lock, Buffer.alloc(0), pub)).toMatchObject({ ok: false });
    });
  }

  it("keys of another kind are refused by name", () => {
    const rsa = keyPair(dir, "rsa", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]);
    const p384 = keyPair(dir, "p384", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]);
    expect(() => lockPublicKey(fs.readFileSync(rsa.pub))).toThrow(new LockKeyError("the public key is a rsa key; an ECDSA P-256 or Ed25519 key is needed"));
    expect(() => lockPublicKey(fs.readFileSync(p384.pub))).toThrow(/EC secp384r1 key; an ECDSA P-256 or Ed25519 key is needed/);
    expect(() => lockPublicKey("not a key")).toThrow(/not a PEM public key/);
  });
});

let bin: Record<string, Uint8Array>;
beforeAll(async () => {
  bin = {
    a1: await compileEcho({ name: "lock-a" }),
    a2: await compileEcho({ name: "lock-a", version: "2.0.0" }),
    b: await compileEcho({ name: "lock-b" }),
    evil: await compileEcho({ name: "lock-a", version: "6.6.6" }),
  };
}, 180_000);

async function gateway(dir: string, extra: string[]) {
  const gw = await startGatewayProcess([`--plugins-dir=${dir}`, "--mode=node", "--check-interval=1s", "--log-level=info", ...extra]);
  running.push(gw);
  return gw;
}

async function loaded(gw: GatewayProcess): Promise<Map<string, string>> {
  const res = await fetch(`http://${gw.http}/readyz`, { headers: { accept: "application/json" } });
  const j = (await res.json()) as { conditions: Array<{ name: string; plugin?: { sha256: string } }> };
  return new Map(j.conditions.filter((c) => c.plugin).map((c) => [c.name, c.plugin!.sha256]));
}

async function probeReady(gw: GatewayProcess): Promise<boolean> {
  const client = createClient(Identity, createConnectTransport({ baseUrl: `http://${gw.http}`, httpVersion: "1.1" }));
  return (await client.probe({})).ready === true;
}

async function metric(gw: GatewayProcess, prefix: string): Promise<string | undefined> {
  const text = await (await fetch(`http://${gw.http}/metrics`)).text();
  return text.split("\n").find((l) => l.startsWith(prefix));
}

describe("a gateway with --plugins-lock", () => {
  it("refuses an unlisted or altered module, keeps the last good one, follows a changed lock, and fails closed on a broken one", async () => {
    const dir = tempDir("probegate-lock-");
    const lock = path.join(dir, "plugins.lock");
    fs.writeFileSync(path.join(dir, "a.wasm"), bin.a1!);
    const locked = await runProbegate(["plugin", "lock", dir]);
    expect(locked.code, locked.stderr).toBe(0);
    expect(locked.stdout).toContain(`locked a.wasm lock-a abi 1 sha256 ${sha256(bin.a1!)}`);
    const gw = await gateway(dir, [`--plugins-lock=${lock}`, "--require-checks=lock-a"]);
    await untilReadyz(gw, (r) => r.status === 200 && r.text.includes("[+]lock-a ok"), "lock-a loaded");

    // Not listed: refused before it is compiled; its check never appears.
    fs.writeFileSync(path.join(dir, "b.wasm"), bin.b!);
    let r = await untilReadyz(gw, (x) => x.text.includes("[!]b.wasm refused: NotInLock"), "b refused");
    expect(r.text).toContain(`b.wasm (sha256 ${sha256(bin.b!).slice(0, 12)}) is not listed in the plugins lock`);
    // No check line of its own (the temp directory's random name may contain "lock-b" too).
    expect(r.text).not.toMatch(/^\[[+-]\]lock-b\b/m);
    expect(await metric(gw, 'probegate_plugin_refused{file="b.wasm",reason="NotInLock"}')).toMatch(/ 1$/);
    expect(await metric(gw, 'probegate_plugin_refusals_total{reason="NotInLock"}')).toMatch(/ [1-9]\d*$/);

    // Listed with other bytes: refused, and the last good module stays in force.
    fs.writeFileSync(path.join(dir, "a.wasm"), bin.a2!);
    r = await untilReadyz(gw, (x) => x.text.includes("[!]a.wasm refused: DigestMismatch"), "a altered");
    expect(r.status).toBe(200);
    expect(r.text).toContain("[+]lock-a ok");
    expect(r.text).toMatch(/the last good module of lock-a \(sha256 [0-9a-f]{12}\) stays in force/);
    expect((await loaded(gw)).get("lock-a")).toBe(sha256(bin.a1!));
    expect(await probeReady(gw)).toBe(true);

    // A new lock listing both is picked up like a changed module.
    expect((await runProbegate(["plugin", "lock", dir])).code).toBe(0);
    r = await untilReadyz(gw, (x) => x.text.includes("[+]lock-b ok") && !x.text.includes("refused"), "new lock applied");
    expect((await loaded(gw)).get("lock-a")).toBe(sha256(bin.a2!));

    // A broken lock allows nothing new; what is loaded stays (refused, kept), and Probe answers.
    fs.writeFileSync(lock, "{ this is not a lock");
    r = await untilReadyz(gw, (x) => x.text.includes("[!]a.wasm refused: LockInvalid") && x.text.includes("[!]b.wasm refused: LockInvalid"), "lock broken");
    expect(r.text).toContain("not JSON");
    expect(r.text).toContain("[+]lock-a ok");
    expect(r.text).toContain("[+]lock-b ok");
    fs.writeFileSync(path.join(dir, "c.wasm"), await compileEcho({ name: "lock-c" }));
    r = await untilReadyz(gw, (x) => x.text.includes("[!]c.wasm refused: LockInvalid"), "c refused");
    // No check line of its own (the temp directory's random name may contain "lock-c" too).
    expect(r.text).not.toMatch(/^\[[+-]\]lock-c\b/m);
    expect(await probeReady(gw)).toBe(true);

    // A lock listing a file twice, or too large to be one: the same, with the reason.
    const twice = formatLock(lockOf([["a.wasm", "lock-a", bin.a2!], ["b.wasm", "lock-b", bin.b!]])).replace('"b.wasm"', '"a.wasm"');
    fs.writeFileSync(lock, twice);
    r = await untilReadyz(gw, (x) => x.text.includes("a.wasm is listed twice"), "duplicate listing refused");
    expect(r.text).toContain("[!]a.wasm refused: LockInvalid");
    fs.writeFileSync(lock, Buffer.alloc(LOCK_MAX_BYTES + 1, 0x20));
    r = await untilReadyz(gw, (x) => x.text.includes(`plugins.lock is ${LOCK_MAX_BYTES + 1} bytes; the cap is ${LOCK_MAX_BYTES} bytes`), "huge lock refused");
    expect(r.text).toContain("[+]lock-a ok");

    // No lock at all: the same, with the reason.
    fs.unlinkSync(lock);
    r = await untilReadyz(gw, (x) => x.text.includes("plugins.lock does not exist"), "lock removed");
    expect(r.text).toContain("[!]c.wasm refused: LockInvalid");

    // A valid lock again: everything it lists loads.
    expect((await runProbegate(["plugin", "lock", dir])).code).toBe(0);
    r = await untilReadyz(gw, (x) => x.text.includes("[+]lock-c ok") && !x.text.includes("refused"), "lock restored");
    expect(r.status).toBe(200);
  });

  it("a lock rewritten while modules are swapped never lets an unlisted module in, and Probe answers throughout", async () => {
    const dir = tempDir("probegate-lock-race-");
    const lock = path.join(dir, "plugins.lock");
    const mod = path.join(dir, "a.wasm");
    fs.writeFileSync(mod, bin.a1!);
    fs.writeFileSync(lock, formatLock(lockOf([["a.wasm", "lock-a", bin.a1!]])));
    const gw = await gateway(dir, [`--plugins-lock=${lock}`, "--require-checks=lock-a"]);
    await untilReadyz(gw, (r) => r.text.includes("[+]lock-a ok"), "lock-a loaded");
    const evil = sha256(bin.evil!);
    const contents = [bin.a1!, bin.a2!, bin.evil!];
    const locks = [formatLock(lockOf([["a.wasm", "lock-a", bin.a1!]])), formatLock(lockOf([["a.wasm", "lock-a", bin.a2!]])), "{", formatLock(lockOf([]))];
    for (let i = 0; i < 40; i++) {
      fs.writeFileSync(mod, contents[i % 3]!);
      if (i % 2 === 0) fs.writeFileSync(lock, locks[(i >> 1) % 4]!);
      await new Promise((res) => setTimeout(res, 40 + (i % 5) * 30));
      const now = await loaded(gw);
      expect(now.get("lock-a"), `round ${i}`).not.toBe(evil);
      expect(now.has("lock-a"), `round ${i}: a check never disappears`).toBe(true);
      expect(typeof (await probeReady(gw))).toBe("boolean");
    }
    fs.writeFileSync(mod, bin.a2!);
    fs.writeFileSync(lock, locks[1]!);
    await untilReadyz(gw, (x) => x.text.includes("[+]lock-a ok") && !x.text.includes("refused"), "settled");
    expect((await loaded(gw)).get("lock-a")).toBe(sha256(bin.a2!));
    expect(gw.logs().some((l) => l.msg === "plugin loaded" && l.sha256 === evil)).toBe(false);
  });

  it("a configuration file must be listed too; an unlisted one is refused and the plugin does not run on defaults", async () => {
    const dir = tempDir("probegate-lock-config-");
    const lock = path.join(dir, "plugins.lock");
    fs.writeFileSync(path.join(dir, "a.wasm"), bin.a1!);
    fs.writeFileSync(path.join(dir, "lock-a.yaml"), "# defaults\n");
    fs.writeFileSync(lock, formatLock(lockOf([["a.wasm", "lock-a", bin.a1!]])));
    const gw = await gateway(dir, [`--plugins-lock=${lock}`]);
    const r = await untilReadyz(gw, (x) => x.text.includes("[!]lock-a.yaml refused: NotInLock"), "config refused");
    expect(r.text).toMatch(/\[-\]lock-a .*ConfigInvalid/);
    fs.writeFileSync(lock, formatLock(lockOf([["a.wasm", "lock-a", bin.a1!]], [["lock-a.yaml", "# defaults\n"]])));
    await untilReadyz(gw, (x) => x.text.includes("[+]lock-a ok") && !x.text.includes("refused"), "config listed");
  });
});

describe("a gateway with --plugins-lock-key", () => {
  for (const [kind, gen, ed] of [["ECDSA P-256", P256, false], ["Ed25519", ED25519, true]] as const) {
    it(`${kind}: a signed lock loads; an unsigned, tampered or other key's lock is refused; openssl's DER and base64 both verify`, async () => {
      const dir = tempDir("probegate-lock-signed-");
      const keys = tempDir("probegate-lock-signkeys-");
      const k = keyPair(keys, "k", [...gen]);
      const other = keyPair(keys, "other", [...gen]);
      const lock = path.join(dir, "plugins.lock");
      const sig = `${lock}.sig`;
      fs.writeFileSync(path.join(dir, "a.wasm"), bin.a1!);
      // Unsigned at start: nothing from the directory loads.
      fs.writeFileSync(lock, formatLock(lockOf([["a.wasm", "lock-a", bin.a1!]])));
      const gw = await gateway(dir, [`--plugins-lock=${lock}`, `--plugins-lock-key=${k.pub}`, "--require-checks=lock-a"]);
      let r = await untilReadyz(gw, (x) => x.text.includes("[!]a.wasm refused: LockUnverified"), "unsigned refused");
      expect(r.text).toContain("is not signed");
      expect(r.status).toBe(503);
      expect(await probeReady(gw)).toBe(false);

      // plugin lock --sign (base64, as cosign writes it).
      const signed = await runProbegate(["plugin", "lock", dir, `--sign=${k.priv}`]);
      expect(signed.code, signed.stderr).toBe(0);
      expect(fs.readFileSync(sig, "utf8")).toMatch(/^[A-Za-z0-9+/]+=*$/);
      r = await untilReadyz(gw, (x) => x.status === 200 && x.text.includes("[+]lock-a ok"), "signed lock loads");

      // Tampered: another module's digest in the lock, the old signature beside it.
      fs.writeFileSync(path.join(dir, "a.wasm"), bin.a2!);
      fs.writeFileSync(lock, formatLock(lockOf([["a.wasm", "lock-a", bin.a2!]])));
      r = await untilReadyz(gw, (x) => x.text.includes("[!]a.wasm refused: LockUnverified"), "tampered refused");
      expect(r.text).toContain("does not verify");
      expect((await loaded(gw)).get("lock-a")).toBe(sha256(bin.a1!));

      // Signed by another key: refused the same way.
      fs.writeFileSync(sig, opensslSign(other.priv, lock, ed));
      await new Promise((res) => setTimeout(res, 500));
      r = await untilReadyz(gw, (x) => x.text.includes("[!]a.wasm refused: LockUnverified"), "other key refused");
      expect((await loaded(gw)).get("lock-a")).toBe(sha256(bin.a1!));

      // openssl's raw DER (Ed25519: raw 64 bytes) by the right key.
      fs.writeFileSync(sig, opensslSign(k.priv, lock, ed));
      r = await untilReadyz(gw, (x) => !x.text.includes("refused") && x.text.includes("[+]lock-a ok"), "DER signature verifies");
      expect((await loaded(gw)).get("lock-a")).toBe(sha256(bin.a2!));

      // The signature removed: refused, the module kept.
      fs.unlinkSync(sig);
      r = await untilReadyz(gw, (x) => x.text.includes("[!]a.wasm refused: LockUnverified"), "signature removed");
      expect(r.text).toContain("[+]lock-a ok");
      expect(await probeReady(gw)).toBe(true);
    });
  }

  it("a key of another kind, or a key without a lock, is a usage error at start", async () => {
    const keys = tempDir("probegate-lock-badkeys-");
    const rsa = keyPair(keys, "rsa", ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]);
    const ec = keyPair(keys, "ec", P256);
    const bad = await runProbegate([`--plugins-lock=${path.join(keys, "plugins.lock")}`, `--plugins-lock-key=${rsa.pub}`]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--plugins-lock-key");
    expect(bad.stderr).toContain("is a rsa key; an ECDSA P-256 or Ed25519 key is needed");
    const alone = await runProbegate([`--plugins-lock-key=${ec.pub}`]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--plugins-lock-key: needs --plugins-lock");
  });
});
