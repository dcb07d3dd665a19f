import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isValidIfaceName, isValidNid, parseNid } from "../src/engine/sources/index.js";
import { parseDuration, parseSize } from "../src/engine/sources/units.js";

const anyString = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.string({ unit: "grapheme" }),
  fc.string({ unit: fc.constantFrom("@", ".", ":", "0", "1", "a", "z", "-", "/", " ", "%", "\0", "\uD800") }),
);

describe("isValidNid", () => {
  it.each([
    "10.0.0.10@tcp",
    "10.1.0.4@tcp1",
    "192.168.1.2@o2ib",
    "192.168.1.2@o2ib3",
    "0@lo",
    "2001:db8::1@tcp",
    "::1@tcp",
    "27@gni",
    "0@kfi",
    "4294967295@gni",
  ])("accepts %s", (nid) => {
    expect(isValidNid(nid)).toBe(true);
  });

  it.each([
    "",
    "@tcp",
    "10.0.0.1@",
    "10.0.0.1",
    "10.0.0.1@TCP",
    "10.0.0.1@tcp-1",
    "10.0.0.1@1tcp",
    "010.0.0.1@tcp",
    "256.0.0.1@tcp",
    "10.0.0@tcp",
    "1@lo",
    "0@lo1",
    "10.0.0.1@lo",
    "5@tcp",
    "5@o2ib2",
    "4294967296@gni",
    "fe80::1%eth0@tcp",
    "-rf@tcp",
    "--help",
    "10.0.0.1@tcp ",
    " 10.0.0.1@tcp",
    "10.0.0.1@tcp\n",
    "10.0.0.1@tcp;reboot",
    "10.0.0.1@tcp@tcp",
    "10.0.0.1@averyveryverylongnet",
  ])("rejects %j", (nid) => {
    expect(isValidNid(nid)).toBe(false);
  });

  it("never throws, and never accepts what could be read as an option", () => {
    fc.assert(
      fc.property(anyString, (s) => {
        const valid = isValidNid(s);
        expect(typeof valid).toBe("boolean");
        if (valid) {
          expect(s.startsWith("-")).toBe(false);
          expect(/\s/.test(s)).toBe(false);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it("round-trips generated valid NIDs", () => {
    const netNumber = fc.option(fc.integer({ min: 0, max: 999 }).map(String), { nil: "" });
    const ipNet = fc.tuple(fc.constantFrom("tcp", "o2ib"), netNumber).map(([t, n]) => t + n);
    const otherNet = fc
      .tuple(fc.stringMatching(/^[a-z]{1,8}$/), netNumber)
      .filter(([t]) => !["lo", "tcp", "o2ib"].includes(t))
      .map(([t, n]) => t + n);
    const nid = fc.oneof(
      fc.tuple(fc.ipV4(), fc.oneof(ipNet, otherNet)),
      fc.tuple(fc.ipV6(), fc.oneof(ipNet, otherNet)),
      fc.tuple(fc.integer({ min: 0, max: 0xffff_ffff }).map(String), otherNet),
      fc.constant<[string, string]>(["0", "lo"]),
    );
    fc.assert(
      fc.property(nid, ([addr, net]) => {
        expect(parseNid(`${addr}@${net}`)).toEqual({ addr, net });
        expect(isValidNid(`${addr}@${net}`)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("isValidIfaceName", () => {
  it.each(["eth0", "lo", "ib0", "enp0s31f6", "bond0.100", "veth1234567890a", "br-1a2b3c", "wlan_0", "é0"])(
    "accepts %s",
    (name) => {
      expect(isValidIfaceName(name)).toBe(true);
    },
  );

  it.each([
    "",
    ".",
    "..",
    "../etc",
    "eth0/operstate",
    "eth0:1",
    "eth 0",
    "eth0\n",
    "\teth0",
    "eth\u00000",
    "eth\u007f",
    "abcdefghijklmnop",
    "éééééééé",
    "\uD800eth",
  ])("rejects %j", (name) => {
    expect(isValidIfaceName(name)).toBe(false);
  });

  it("never throws; valid names are always one safe path segment of at most 15 bytes", () => {
    fc.assert(
      fc.property(anyString, (s) => {
        if (!isValidIfaceName(s)) return;
        expect(Buffer.byteLength(s)).toBeLessThanOrEqual(15);
        expect(s).not.toMatch(/[/:\s]/);
        expect([".", ".."]).not.toContain(s);
      }),
      { numRuns: 2000 },
    );
  });

  it("accepts every kernel-style ASCII name", () => {
    const name = fc.stringMatching(/^[A-Za-z0-9_.-]{1,15}$/).filter((s) => s !== "." && s !== "..");
    fc.assert(
      fc.property(name, (s) => {
        expect(isValidIfaceName(s)).toBe(true);
      }),
    );
  });
});

describe("units", () => {
  it("parses durations with units only", () => {
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("3s")).toBe(3000);
    expect(parseDuration("1.5s")).toBe(1500);
    expect(parseDuration("2m")).toBe(120_000);
    // The same grammar as the CLI's duration flags (Go style, as manifests write them).
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseDuration("1m30s")).toBe(90_000);
    for (const bad of ["3", "3 sec", "-1s", "s", "1d", "1e3ms", "1s 2s", ""]) expect(parseDuration(bad)).toBeNull();
  });

  it("parses sizes", () => {
    expect(parseSize(4096)).toBe(4096);
    expect(parseSize("4096")).toBe(4096);
    expect(parseSize("64KiB")).toBe(65536);
    expect(parseSize("1MiB")).toBe(1048576);
    for (const bad of ["1MB", "1.5KiB", "-1", -1, 1.5, "lots"]) expect(parseSize(bad)).toBeNull();
  });
});
