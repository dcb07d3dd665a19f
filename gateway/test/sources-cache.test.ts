// SingleFlightCache with a hand-driven clock: TTL arithmetic without sleeping.

import { describe, expect, it } from "vitest";
import { SingleFlightCache } from "../src/engine/sources/cache.js";

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("SingleFlightCache", () => {
  it("shares one pending production and counts the TTL from its completion", async () => {
    let now = 0;
    const cache = new SingleFlightCache<string>(() => now);
    const gate = deferred<string>();
    let runs = 0;
    const produce = () => {
      runs++;
      return gate.promise;
    };
    const pending = Array.from({ length: 100 }, () => cache.get("k", 1000, produce));
    now = 5000; // a slow producer: the TTL must not have started yet
    gate.resolve("v1");
    expect(await Promise.all(pending)).toEqual(Array(100).fill("v1"));
    expect(runs).toBe(1);

    now = 5999;
    expect(await cache.get("k", 1000, () => Promise.resolve("v2"))).toBe("v1");
    now = 6000;
    expect(await cache.get("k", 1000, () => Promise.resolve("v2"))).toBe("v2");
  });

  it("keeps keys apart", async () => {
    const cache = new SingleFlightCache<string>(() => 0);
    expect(await cache.get("a", 1000, async () => "A")).toBe("A");
    expect(await cache.get("b", 1000, async () => "B")).toBe("B");
    expect(await cache.get("a", 1000, async () => "X")).toBe("A");
  });

  it("does not cache a rejected production", async () => {
    const cache = new SingleFlightCache<string>(() => 0);
    await expect(cache.get("k", 1000, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await cache.get("k", 1000, async () => "ok")).toBe("ok");
  });

  it("with ttl 0 still collapses concurrent calls", async () => {
    const cache = new SingleFlightCache<number>(() => 0);
    let runs = 0;
    const produce = async () => ++runs;
    expect(await Promise.all([cache.get("k", 0, produce), cache.get("k", 0, produce)])).toEqual([1, 1]);
    expect(await cache.get("k", 0, produce)).toBe(2);
  });

  it("asks keep about an expired value once for all waiting callers: true keeps it a TTL from now, false or a rejection produces anew", async () => {
    let now = 0;
    const cache = new SingleFlightCache<string>(() => now);
    let runs = 0;
    const produce = async () => `v${++runs}`;
    const gate = deferred<boolean>();
    let asked = 0;
    const keep = () => {
      asked++;
      return gate.promise;
    };
    expect(await cache.get("k", 1000, produce, keep)).toBe("v1");
    expect(asked).toBe(0); // nothing to ask about yet
    now = 1000;
    const waiting = Array.from({ length: 10 }, () => cache.get("k", 1000, produce, keep));
    gate.resolve(true);
    expect(await Promise.all(waiting)).toEqual(Array(10).fill("v1"));
    expect([asked, runs]).toEqual([1, 1]);
    now = 1999; // kept from 1000, so still fresh: not asked
    expect(await cache.get("k", 1000, produce, keep)).toBe("v1");
    expect(asked).toBe(1);
    now = 2000;
    expect(await cache.get("k", 1000, produce, async () => false)).toBe("v2");
    now = 3000;
    expect(await cache.get("k", 1000, produce, () => Promise.reject(new Error("key unreadable")))).toBe("v3");
  });

  it("prunes expired entries instead of growing without bound", async () => {
    let now = 0;
    const cache = new SingleFlightCache<number>(() => now);
    for (let i = 0; i < 1000; i++) {
      await cache.get(`k${i}`, 10, async () => i);
      now += 20;
    }
    expect(cache.size()).toBeLessThanOrEqual(257);
  });
});
