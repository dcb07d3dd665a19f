// The fake lnetctl/lctl (gateway/demo, driven through gateway/test/helpers'
// fakeLnet) cycling through healthy → broken → healthy → hanging → healthy →
// garbage → healthy → missing → … . "missing" takes the tools off PATH: the
// gateways' PATH starts with a directory of links to the fake tools, and
// that directory is emptied.
import fs from "node:fs";
import path from "node:path";
import { demoBinDir, demoScenarioDir } from "../../gateway/src/engine/sources/index.js";
import { fakeLnet, type FakeLnet } from "../../gateway/test/helpers/fake-lnet.js";
import type { Rng } from "./rng.js";

export type LnetState = "healthy" | "broken" | "hanging" | "garbage" | "missing";
export const FAULT_ORDER: readonly LnetState[] = ["broken", "hanging", "garbage", "missing"];

const KEYS = ["net_show", "list_nids", "ping"] as const;

export class LnetFaults {
  readonly node: FakeLnet;
  readonly binDir: string;
  state: LnetState = "healthy";
  readonly injected: Record<string, number> = {};
  private next = 0;
  private readonly healthy: Record<string, Buffer | undefined> = {};
  private readonly niDown: Record<string, Buffer | undefined> = {};

  constructor(workDir: string, private readonly rng: Rng) {
    this.node = fakeLnet({ base: "healthy" });
    this.binDir = path.join(workDir, "bin");
    fs.mkdirSync(this.binDir, { recursive: true });
    for (const k of KEYS) {
      this.healthy[k] = readOpt(path.join(demoScenarioDir("healthy"), `${k}.out`));
      this.niDown[k] = readOpt(path.join(demoScenarioDir("ni-down"), `${k}.out`));
    }
    this.linkTools();
  }

  /** Environment for a gateway: the link directory first on PATH, the scenario named. */
  env(): NodeJS.ProcessEnv {
    return { ...process.env, PATH: `${this.binDir}:${process.env.PATH ?? ""}`, PROBEGATE_FAKE_LNET: this.node.dir };
  }

  private linkTools(): void {
    for (const tool of ["lnetctl", "lctl"]) {
      const link = path.join(this.binDir, tool);
      fs.rmSync(link, { force: true });
      fs.symlinkSync(path.join(demoBinDir(), tool), link);
    }
  }

  private unlinkTools(): void {
    for (const tool of ["lnetctl", "lctl"]) fs.rmSync(path.join(this.binDir, tool), { force: true });
  }

  /** Moves to the next state of the cycle; returns it. */
  step(): LnetState {
    const target: LnetState = this.state !== "healthy" ? "healthy" : FAULT_ORDER[this.next++ % FAULT_ORDER.length];
    this.set(target);
    return target;
  }

  set(s: LnetState): void {
    const n = this.node;
    if (this.state === "missing") this.linkTools();
    for (const k of KEYS) n.clear(k);
    const modules = fs.readFileSync(path.join(demoScenarioDir("healthy"), "proc", "modules"), "utf8");
    n.update({ modules, operstate: { eth0: "up\n" } });
    const write = (k: string, out: Buffer | undefined, extra: Record<string, string> = {}) => {
      if (out !== undefined) fs.writeFileSync(path.join(n.dir, `${k}.out`), out);
      for (const [suffix, v] of Object.entries(extra)) fs.writeFileSync(path.join(n.dir, `${k}.${suffix}`), v);
    };
    const expectNid = readOpt(path.join(demoScenarioDir("healthy"), "ping.expect_nid"));
    switch (s) {
      case "healthy":
        for (const k of KEYS) write(k, this.healthy[k]);
        if (expectNid) write("ping", undefined, { expect_nid: expectNid.toString() });
        break;
      case "broken":
        // Alternately an NI down (with its interface) and LNet not configured at all.
        if (this.rng.chance(0.5)) {
          for (const k of KEYS) write(k, this.niDown[k]);
          write("ping", undefined, { exit: "1\n" });
          n.update({ operstate: { eth0: "down\n" } });
        }
        break;
      case "hanging":
        for (const k of KEYS) write(k, this.healthy[k], { delay_ms: "1000000000000\n" });
        break;
      case "garbage":
        for (const k of KEYS) write(k, this.rng.bytes(this.rng.int(1, 4096)));
        break;
      case "missing":
        this.unlinkTools();
        break;
    }
    if (s !== "healthy") this.injected[s] = (this.injected[s] ?? 0) + 1;
    this.state = s;
  }

  cleanup(): void {
    this.node.cleanup();
  }
}

function readOpt(p: string): Buffer | undefined {
  try {
    return fs.readFileSync(p);
  } catch {
    return undefined;
  }
}
