// The ABI descriptors (runtime/abi/) are what the loader decides a module's
// ABI by: a module speaks exactly one only if no two ABIs share an entry
// point or a host import, and the worker can call a module only if every
// entry point it is told is one the loader required.
import { describe, expect, it } from "vitest";
import { ABIS, ABI_DESCRIPTORS, markers, workerAbi } from "../src/runtime/abi/index.js";
import { PLUGIN_ABIS } from "../src/runtime/types.js";

describe("plugin ABI descriptors", () => {
  it("one per ABI the gateway speaks, oldest first", () => {
    expect(ABIS.map((d) => d.version)).toEqual([...PLUGIN_ABIS]);
    for (const v of PLUGIN_ABIS) expect(ABI_DESCRIPTORS[v].version).toBe(v);
  });

  it("no two ABIs share a marking export or a host import", () => {
    const seen = new Map<string, number>();
    for (const d of ABIS) {
      for (const name of [...markers(d), ...d.imports.keys()]) {
        expect(seen.get(name), `${name} in ABI v${d.version}`).toBeUndefined();
        seen.set(name, d.version);
      }
    }
  });

  it("the entry points the worker is sent are required function exports, with a memory", () => {
    for (const d of ABIS) {
      const sent = workerAbi(d);
      expect(sent.abi).toBe(d.version);
      for (const fn of Object.values(sent.entryPoints)) expect(markers(d), `ABI v${d.version}`).toContain(fn);
      expect(d.exports.filter((e) => e.kind === "memory").map((e) => e.name)).toEqual(["memory"]);
      // What the schema and plugin inspect name are exports of that ABI.
      for (const list of [d.names.mismatch, d.names.inspect]) for (const n of list.split(", ")) expect(markers(d)).toContain(n);
    }
  });
});
