// A source command that cannot start because the process is out of file
// descriptors (EMFILE, as after a flood of leaked connections) is a check
// failure naming the reason, never an uncaught exception.

import { spawnSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/gateway-process.js";

// Runs in its own process: it uses up every descriptor it may open before calling runCommand.
const SCRIPT = `
import fs from "node:fs";
const { runCommand } = await import(process.argv[1]);
const held = [];
try { for (;;) held.push(fs.openSync("/dev/null", "r")); } catch (e) { if (e.code !== "EMFILE") throw e; }
let result;
try {
  result = await runCommand({ argv: [process.execPath, "-e", "1"], label: "node", timeoutMs: 5000, maxOutputBytes: 1024, env: process.env });
} catch (e) { result = { threw: String(e) }; }
for (const fd of held) fs.closeSync(fd);
process.stdout.write(JSON.stringify(result));
`;

describe("runCommand out of descriptors", () => {
  it("reports EMFILE as a failed run", () => {
    const module = pathToFileURL(path.join(ROOT, "dist/gateway/src/exec/run-command.js")).href;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", SCRIPT, module], { encoding: "utf8", timeout: 30_000 });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result.threw).toBeUndefined();
    expect(result.ok).toBe(false);
    expect(result.outcome).toBe("error");
    expect(result.error).toMatch(/^EMFILE: cannot run /);
  });
});
