import { runPluginCommand } from "../../src/cli/plugin-commands.js";

/** `probegate plugin test ARGV…` run in-process from `cwd`, with its output captured. */
export async function pluginTest(cwd: string, ...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runPluginCommand(["test", ...argv], {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    cwd,
  });
  return { code, stdout, stderr };
}
