// The transport layer's modules import each other one way: a cycle (even a
// type-only one) means two modules share a concern that belongs in one.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/gateway-process.js";

const DIR = path.join(ROOT, "gateway", "src", "transport");

function importsOf(file: string): string[] {
  const text = fs.readFileSync(path.join(DIR, file), "utf8");
  return [...text.matchAll(/\bfrom\s+"\.\/([^"]+)\.js"/g)].map((m) => `${m[1]}.ts`);
}

function cycles(): string[][] {
  const files = fs.readdirSync(DIR).filter((f) => f.endsWith(".ts"));
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const visit = (f: string, trail: string[]) => {
    if (state.get(f) === "done") return;
    if (state.get(f) === "open") {
      found.push([...trail.slice(trail.indexOf(f)), f]);
      return;
    }
    state.set(f, "open");
    for (const next of graph.get(f) ?? []) visit(next, [...trail, f]);
    state.set(f, "done");
  };
  for (const f of files) visit(f, []);
  return found;
}

describe("gateway/src/transport", () => {
  it("has no import cycle", () => {
    expect(cycles()).toEqual([]);
  });
});
