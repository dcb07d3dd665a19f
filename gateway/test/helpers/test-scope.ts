import { afterAll, afterEach, beforeAll } from "vitest";
import type { FakeLnet } from "./fake-lnet.js";
import type { GatewayProcess } from "./gateway-process.js";
import { tempDir } from "../hostile/harness.js";

/**
 * A test file's scratch directory (removed at the end) and the gateways and
 * fake nodes its tests start (stopped and removed after each test). Call at
 * the top level of the file; `path()` is valid from beforeAll on.
 */
export function gatewayTestScope(): { path: () => string; running: GatewayProcess[]; nodes: FakeLnet[] } {
  let dir: { path: string; cleanup: () => Promise<void> } | undefined;
  const running: GatewayProcess[] = [];
  const nodes: FakeLnet[] = [];
  beforeAll(async () => {
    dir = await tempDir();
  });
  afterAll(() => dir?.cleanup());
  afterEach(async () => {
    await Promise.all(running.splice(0).map((g) => g.stop()));
    for (const n of nodes.splice(0)) n.cleanup();
  });
  return {
    path: () => {
      if (!dir) throw new Error("the scope's directory exists from beforeAll on");
      return dir.path;
    },
    running,
    nodes,
  };
}
