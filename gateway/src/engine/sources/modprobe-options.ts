// `modprobe.lnet_options`: the `options lnet …` directives of the host's
// modprobe configuration. Where LNet is configured at the first mount, these
// parameters (networks=, ip2nets=) are all that says which interfaces it will
// use, so a check can look at them before LNet exists. The gateway only picks
// the directives out (modprobe's own line syntax); what the parameters mean is
// the plugins' business.

import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { fileFailure, fileOutput, type Produced, type SourceDef } from "./definitions.js";
import { fileError, missingFileError, readCapped, readKernelFile } from "./read-file.js";
import { capUtf8 } from "../../support/decode.js";
import { fileIdentity, type FileIdentity } from "../../support/file-identity.js";

/** A modprobe.d with more files than this is not one; a directive file is a few lines. */
const MODPROBE_MAX_FILES = 256;
export const MODPROBE_FILE_CAP = 64 * 1024;

/**
 * The parameters of every `options MODULE …` line in one file (modprobe's
 * syntax: `\` at the end continues a line, `#` starts a comment line, module
 * names compare with `-` and `_` alike).
 */
function optionDirectives(text: string, module: string): string[] {
  const want = module.replace(/-/g, "_");
  const out: string[] = [];
  for (const line of text.replace(/[ \t]*\\\r?\n[ \t]*/g, " ").split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed.length === 0 || trimmed.startsWith("#")) continue;
    const m = /^options\s+(\S+)\s+(.*)$/.exec(trimmed);
    if (m && m[1].replace(/-/g, "_") === want) out.push(m[2].replace(/\p{Cc}/gu, " ").trim());
  }
  return out;
}

/** The parameters a module's LNet configuration comes from (charp parameters read "(null)" when unset). */
const RUNNING_PARAMS = ["networks", "ip2nets"] as const;
const PARAM_CAP = 4096;

/**
 * The running module's `networks=`/`ip2nets=` as one more `LABEL: PARAMETERS`
 * line, or "" when the module is not loaded or sets neither. LNet is
 * configured from these values at the first mount, whatever modprobe.d says
 * now (it applies at the next load), and installers such as GKE's pass them on
 * modprobe's command line, where modprobe.d never sees them. Both keys are
 * written (an unset one as "") so that, the last setting winning, they
 * replace the directives' values rather than mix with them.
 */
async function runningParams(paramsDir: string): Promise<{ line: string } | { error: string }> {
  const values: string[] = [];
  let set = false;
  for (const param of RUNNING_PARAMS) {
    const r = readKernelFile(join(paramsDir, param), PARAM_CAP);
    if (!r.ok) {
      if (r.code === "ENOENT") {
        values.push(`${param}=""`);
        continue;
      }
      return { error: r.error };
    }
    // ip2nets entries may be separated by line breaks; the output is one line per setting.
    const v = r.text.trim().replace(/\r?\n/g, ";").replace(/[\p{Cc}"]/gu, " ").trim();
    const unset = v === "" || v === "(null)";
    if (!unset) set = true;
    values.push(`${param}="${unset ? "" : v}"`);
  }
  if (!set) return { line: "" };
  return { line: `${paramsDir.replace(/[\p{Cc}\s:]/gu, "?")}: ${values.join(" ")}\n` };
}

/**
 * Output: one `FILE: PARAMETERS` line per directive, files in name order as
 * modprobe reads them; then, with `paramsDir` (<sysfs>/module/MODULE/parameters)
 * and the module loaded, one line of its running `networks=`/`ip2nets=` values.
 */
export function modprobeOptionsSource(name: string, dir: string, module: string, ttlMs: number, maxOutputBytes: number, paramsDir?: string): SourceDef {
  // Each file's directives, kept while a stat says it is the file last read
  // (support/file-identity.ts): a node's modprobe.d holds ten or twenty files
  // that change about never, and a stat is one thread-pool hop where a read is
  // three or four, every round.
  const known = new Map<string, { id: string; lines: string }>();
  // A link to nothing is not configuration (modprobe skips it too).
  const skipOrFail = (r: { code: string; error: string }) => (r.code === "ENOENT" ? null : { error: r.error });
  const directives = async (file: string): Promise<{ lines: string } | { error: string } | null> => {
    const path = join(dir, file);
    let ident: FileIdentity;
    try {
      ident = fileIdentity(await stat(path, { bigint: true }));
    } catch (err) {
      known.delete(file);
      return skipOrFail(fileError(err, path));
    }
    const hit = known.get(file);
    if (hit?.id === ident.id) return { lines: hit.lines };
    known.delete(file);
    const r = await readCapped(path, MODPROBE_FILE_CAP);
    if (!r.ok) return skipOrFail(r);
    if (r.truncated) return { error: `EFBIG: ${path} exceeded ${MODPROBE_FILE_CAP} bytes` };
    const label = file.replace(/[\p{Cc}\s:]/gu, "?");
    let lines = "";
    for (const params of optionDirectives(r.text, module)) lines += `${label}: ${params}\n`;
    if (ident.settled) known.set(file, { id: ident.id, lines });
    return { lines };
  };
  const run = async (): Promise<Produced> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? "EIO";
      // No modprobe.d, but a loaded module whose parameters say it all (a node image without one).
      const running = code === "ENOENT" && paramsDir ? await runningParams(paramsDir) : undefined;
      if (running && "line" in running && running.line) return fileOutput(running.line, false, maxOutputBytes, `options ${module} in ${dir}`);
      return fileFailure(code === "ENOENT" ? missingFileError(dir) : `${code}: ${dir} cannot be read`);
    }
    const files = entries
      .filter((e) => e.name.endsWith(".conf") && (e.isFile() || e.isSymbolicLink()))
      .map((e) => e.name)
      .sort();
    if (files.length > MODPROBE_MAX_FILES) return fileFailure(`E2BIG: ${dir} holds more than ${MODPROBE_MAX_FILES} .conf files`);
    for (const gone of [...known.keys()].filter((f) => !files.includes(f))) known.delete(gone);
    let text = "";
    for (const file of files) {
      const d = await directives(file);
      if (d === null) continue;
      if ("error" in d) return fileFailure(d.error, text);
      text += d.lines;
    }
    if (paramsDir) {
      const running = await runningParams(paramsDir);
      if ("error" in running) return fileFailure(running.error, text);
      text += running.line;
    }
    const capped = capUtf8(text, maxOutputBytes);
    return fileOutput(capped.text, capped.cut, maxOutputBytes, `options ${module} in ${dir}`);
  };
  return {
    name,
    kind: "file",
    ttlMs,
    params: [],
    path: join(dir, "*.conf"),
    // Replayed like a file read: a saved not-found is the directory missing.
    replay: { kind: "file", path: dir, maxOutputBytes },
    prepare: () => ({ key: "", run }),
  };
}
