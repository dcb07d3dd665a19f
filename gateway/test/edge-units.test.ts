// The edge's pure pieces: request targets, authorities, deadline caps, admission counts.

import { describe, expect, it } from "vitest";
import { Admission } from "../src/transport/admission.js";
import { validAuthority } from "../src/transport/authority.js";
import { clampDeadlineHeaders, MAX_DEADLINE_MS, parseGrpcTimeout } from "../src/transport/grpc-timeout.js";
import { requestPath } from "../src/transport/request-path.js";

describe("requestPath", () => {
  it.each([
    ["/csi.v1.Identity/Probe", "/csi.v1.Identity/Probe"],
    ["/metrics?x=1", "/metrics"],
    ["http://h/csi.v1.Identity/Probe", "/csi.v1.Identity/Probe"],
    ["HTTP://h:80/readyz?verbose", "/readyz"],
    ["http://h", "/"],
    ["*", "*"],
    [undefined, "/"],
  ])("%s → %s", (target, path) => expect(requestPath(target)).toBe(path));
});

describe("validAuthority", () => {
  it.each(["localhost", "127.0.0.1:29763", "[::1]:80", "node-1.example", "h:"])("accepts %s", (a) => expect(validAuthority(a)).toBe(true));
  it.each(["[", "a b", "h/x", "u@h", "h:123456", "x".repeat(300), "[::1"])("refuses %s", (a) => expect(validAuthority(a)).toBe(false));
});

describe("clampDeadlineHeaders", () => {
  it("caps deadlines a timer cannot hold and leaves the rest", () => {
    const h: Record<string, string> = { "grpc-timeout": "720H", "connect-timeout-ms": "9999999999" };
    clampDeadlineHeaders(h);
    expect(parseGrpcTimeout(h["grpc-timeout"])).toBeLessThanOrEqual(MAX_DEADLINE_MS);
    expect(parseGrpcTimeout(h["grpc-timeout"])).toBeGreaterThan(MAX_DEADLINE_MS - 1000);
    expect(h["connect-timeout-ms"]).toBe(String(MAX_DEADLINE_MS));
    const ok: Record<string, string> = { "grpc-timeout": "5S", "connect-timeout-ms": "100" };
    clampDeadlineHeaders(ok);
    expect(ok).toEqual({ "grpc-timeout": "5S", "connect-timeout-ms": "100" });
  });
});

describe("Admission", () => {
  it("keeps the last quarter for probes and caps Watch streams", () => {
    const a = new Admission(8, 2);
    for (let i = 0; i < 6; i++) expect(a.enter("other")).toBeUndefined();
    expect(a.enter("other")).toBe("inflight");
    expect(a.enter("watch")).toBe("inflight");
    expect(a.enter("probe")).toBeUndefined();
    expect(a.enter("probe")).toBeUndefined();
    expect(a.enter("probe")).toBe("inflight");
    for (let i = 0; i < 5; i++) a.leave("other");
    expect(a.enter("watch")).toBeUndefined();
    expect(a.enter("watch")).toBeUndefined();
    expect(a.enter("watch")).toBe("watches");
    a.leave("watch");
    expect(a.current).toEqual({ inflight: 4, watches: 1 });
  });
});
